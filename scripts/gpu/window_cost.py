#!/usr/bin/env python3
"""Median step inside a capture window against outside it, per run and per label, from the JSON
lines the GPU probes write (probe_run.sh): what a profiler costs the job in one process, where the
machine's drift between processes cancels.
    window_cost.py RUNS.jsonl A:B WARMUP     (steps A..B-1 inside; steps before WARMUP left out)"""
import json
import statistics
import sys


def inside_outside(step_ms, a, b, warmup):
    inside = [t for i, t in enumerate(step_ms) if a <= i < b]
    # The first step after the window pays for the profiler's stop and processing in some tools'
    # set-ups; it is outside the window but not the job's normal step, so it is left out too.
    outside = [t for i, t in enumerate(step_ms) if i >= warmup and not a <= i <= b]
    return statistics.median(inside), statistics.median(outside)


def main():
    path, window, warmup = sys.argv[1], sys.argv[2], int(sys.argv[3])
    a, b = (int(x) for x in window.split(":"))
    by_label = {}
    for line in open(path):
        run = json.loads(line)
        s = run.get("summary")
        if run["rc"] != 0 or not s:
            print("%-22s %-24s rc=%d, no summary" % (run["name"], run["label"], run["rc"]))
            continue
        i, o = inside_outside(s["step_ms"], a, b, warmup)
        change = 100.0 * (i - o) / o
        by_label.setdefault(run["label"], []).append(change)
        print("%-22s %-24s inside %8.1f ms  outside %8.1f ms  %+6.1f %%" % (run["name"], run["label"], i, o, change))
    print()
    for label, changes in by_label.items():
        print("%-24s runs %d  median %+6.1f %%  (%s)" % (label, len(changes), statistics.median(changes),
                                                         ", ".join("%+.1f" % c for c in changes)))


if __name__ == "__main__":
    main()
