#!/usr/bin/env python3
"""Re-evaluates a finished closed loop's predicted peaks and steps with the current build, without running
any job again: for every plan, `shardscope simulate A<i>.ssdb --fit --plan plan_<name>.json` on the
loop's saved A profiles, against the unrecorded B's FSDPMemTracker peaks the loop measured
(closed_loop.json), and the steps against each repeat's unrecorded B. For a change to the model or
its calibration (docs/accuracy.md); a step figure is only as good as the machine's idleness when
the loop ran.

    scripts/closed_loop_reeval.py OUT_DIR [--shardscope build/app/shardscope]
"""
import argparse
import json
import os
import statistics
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir", help="a closed_loop.py --out folder (closed_loop.json, A<i>.ssdb, plan_<name>.json)")
    ap.add_argument("--shardscope", default=os.path.join(ROOT, "build", "app", "shardscope"))
    a = ap.parse_args()
    with open(os.path.join(a.out_dir, "closed_loop.json")) as f:
        loop = json.load(f)
    for name, plan in loop["plans"].items():
        reference = plan["peak_vs_unrecorded"][1]
        predicted, steps = [], []
        for i in range(loop["repeats"]):
            out = subprocess.run([a.shardscope, "simulate", os.path.join(a.out_dir, "A%d.ssdb" % i), "--fit", "--plan",
                                  os.path.join(a.out_dir, "plan_%s.json" % name), "--format", "json"],
                                 capture_output=True, text=True, check=True).stdout
            sim = json.loads(out)
            predicted.append(sim["peak_memory_bytes"])
            steps.append((sim["step_time_ms"], loop["runs"][i]["plans"][name]["unrecorded_step_ms"]))
        per_run = " ".join("%+.1f" % (100.0 * (p - reference) / reference) for p in predicted)
        print("%s %-10s peak: unrecorded B (tracker) %.2f MiB; predicted %s MiB (%s %%); pooled %+.2f %% (the loop's own: %+.2f %%)" % (
            loop["arch"], name, reference / 2**20, ", ".join("%.2f" % (p / 2**20) for p in predicted), per_run,
            100.0 * (statistics.mean(predicted) - reference) / reference, plan["peak_vs_unrecorded"][2]))
        # The step against each repeat's own unrecorded B, pooled as closed_loop.py pools it.
        pred_ms, free_ms = statistics.mean(p for p, _ in steps), statistics.mean(m for _, m in steps)
        print("%s %-10s step: unrecorded B %.1f ms; predicted %s ms (%s %%); pooled %+.2f %% (the loop's own: %+.2f %%)" % (
            loop["arch"], name, free_ms, ", ".join("%.1f" % p for p, _ in steps),
            " ".join("%+.1f" % (100.0 * (p - m) / m) for p, m in steps), 100.0 * (pred_ms - free_ms) / free_ms,
            plan["step_vs_unrecorded"][2]))

if __name__ == "__main__":
    main()
