#!/usr/bin/env python3
"""Where an unshard plan's effect on the step comes from, range by range, in one recorded process:
the job switches between A and the plan's unshard set (fsdp_train_sample.py --alternate-plan) under
`shardscope record --steps 0:`, and each module or FSDP range's time per step is compared between
the A steps and the B steps (medians; steps before --warmup and the first step after each switch
left out). What the plan changes in a step, without this VM's drift between processes.

    shardscope record -o ab.ssdb --steps 0: -- torchrun --nproc_per_node=2 --standalone \\
        scripts/fsdp_train_sample.py --device cpu --small --pin-cores --steps 26 \\
        --alternate-plan plan.json --summary ab.json
    scripts/alternating_ranges.py ab.ssdb ab.json [--rank 0] [--top 25]
"""
import argparse
import json
import sqlite3
import statistics
import sys

from closed_loop import alternating_steps


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("profile")
    ap.add_argument("summary", help="the job's --summary JSON (its step_config)")
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--top", type=int, default=25, help="ranges listed, largest change first")
    a = ap.parse_args()
    with open(a.summary) as f:
        configs = json.load(f)["step_config"]
    db = sqlite3.connect("file:%s?mode=ro" % a.profile, uri=True)
    steps = db.execute("SELECT number, start_ns, start_ns + duration_ns, duration_ns FROM steps WHERE rank = ? ORDER BY number",
                       (a.rank,)).fetchall()
    recorded = {n for n, _, _, _ in steps}
    kept = {n: c for n, c in alternating_steps(configs, a.warmup).items() if n in recorded}
    if set(kept.values()) != {"A", "B"}:
        sys.exit("%s: no steps of both A and B after the warm-up (step_config %s)" % (a.summary, configs))
    per_step = {}  # (name, phase) -> {step: ns}
    for n, t0, t1, _ in steps:
        if n not in kept:
            continue
        for name, phase, ns in db.execute(
                "SELECT name, phase, sum(duration_ns) FROM range_view WHERE rank = ? AND kind IN ('module', 'fsdp') "
                "AND start_ns >= ? AND start_ns < ? GROUP BY name, phase", (a.rank, t0, t1)):
            per_step.setdefault((name, phase), {})[n] = ns
    step_ms = {c: statistics.median(d / 1e6 for n, _, _, d in steps if kept.get(n) == c) for c in "AB"}
    print("rank %d, steps A %s, B %s: median step A %.2f ms, B %.2f ms (%+.2f %%)" % (
        a.rank, [n for n, c in kept.items() if c == "A"], [n for n, c in kept.items() if c == "B"], step_ms["A"],
        step_ms["B"], 100 * (step_ms["B"] / step_ms["A"] - 1)))
    rows = []
    for (name, phase), by_step in per_step.items():
        med = {c: statistics.median([by_step.get(n, 0) for n, cc in kept.items() if cc == c]) / 1e6 for c in "AB"}
        rows.append((med["B"] - med["A"], name, phase, med["A"], med["B"]))
    rows.sort(key=lambda r: -abs(r[0]))
    print("%-48s %-9s %10s %10s %10s" % ("range", "phase", "A ms", "B ms", "B - A"))
    for delta, name, phase, ma, mb in rows[:a.top]:
        print("%-48s %-9s %10.2f %10.2f %+10.2f" % (name[:48], phase, ma, mb, delta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
