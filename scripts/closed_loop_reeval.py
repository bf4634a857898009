#!/usr/bin/env python3
"""Re-evaluates a finished closed loop's predicted peaks with the current build, without running
any job again: for every plan, `shardscope simulate A<i>.ssdb --fit --plan plan_<name>.json` on the
loop's saved A profiles, against the unrecorded B's FSDPMemTracker peaks the loop measured
(closed_loop.json). For a change to the memory model or its calibration (docs/accuracy.md).

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
        predicted = []
        for i in range(loop["repeats"]):
            out = subprocess.run([a.shardscope, "simulate", os.path.join(a.out_dir, "A%d.ssdb" % i), "--fit", "--plan",
                                  os.path.join(a.out_dir, "plan_%s.json" % name), "--format", "json"],
                                 capture_output=True, text=True, check=True).stdout
            predicted.append(json.loads(out)["peak_memory_bytes"])
        per_run = " ".join("%+.1f" % (100.0 * (p - reference) / reference) for p in predicted)
        print("%s %-8s unrecorded B (tracker) %.2f MiB; predicted %s MiB (%s %%); pooled %+.2f %% (the loop's own: %+.2f %%)" % (
            loop["arch"], name, reference / 2**20, ", ".join("%.2f" % (p / 2**20) for p in predicted), per_run,
            100.0 * (statistics.mean(predicted) - reference) / reference, plan["peak_vs_unrecorded"][2]))


if __name__ == "__main__":
    main()
