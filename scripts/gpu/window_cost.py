#!/usr/bin/env python3
"""Median step inside a capture window against outside it (the mean of the medians before and
after it), per run and per label, from the JSON lines the GPU probes write (probe_run.sh): what a
profiler costs the job in one process, where the machine's drift between processes cancels. And
the steps after the window against those before it: what the window leaves behind in the job.
    window_cost.py RUNS.jsonl A:B WARMUP     (steps A..B-1 inside; steps before WARMUP left out)"""
import json
import statistics
import sys


def window_medians(step_ms, a, b, warmup):
    """Medians of the steps before the window, inside it and after it. The first step after the
    window is left out: it pays for the profiler's stop (and, under record, the allocator
    history's dump) in some tools' set-ups, which is not the job's normal step."""
    pick = lambda keep: statistics.median([t for i, t in enumerate(step_ms) if i >= warmup and keep(i)])
    return pick(lambda i: i < a), pick(lambda i: a <= i < b), pick(lambda i: i > b)


def projected_window_cost(step_ms, window_end, warmup, job_steps=(24, 200, 1000)):
    """What a window of steps 0 .. window_end-1 (record's default) costs a job, from one run: its
    traced steps after the warm-up against its own steps after the window (the first left out, as
    above: it pays the window's close, counted apart), so that the drift between processes, which
    moves a pair of runs by more than the 2 % target, cancels. Projected to a job of N steps as
    (window_end x the extra per traced step + the close) / (N x the job's own step): the traced
    warm-up steps counted at the same extra as the later ones. None without 3 steps after the window."""
    after = step_ms[window_end + 1:]
    traced = step_ms[warmup:window_end]
    if len(after) < 3 or not traced:
        return None
    own = statistics.median(after)
    extra = statistics.median(traced) - own
    close = step_ms[window_end] - own
    return {"own_step_ms": round(own, 3), "traced_step_pct": round(100.0 * extra / own, 2),
            "close_ms": round(close, 3),
            "projected_pct": {str(n): round(100.0 * (window_end * extra + close) / (n * own), 2) for n in job_steps}}


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
        before, inside, after = window_medians(s["step_ms"], a, b, warmup)
        outside = statistics.median([before, after])
        change = 100.0 * (inside - outside) / outside
        later = 100.0 * (after - before) / before  # what the window leaves behind (e.g. an attached CUPTI)
        by_label.setdefault(run["label"], []).append((change, later))
        print("%-20s %-24s before %7.1f  inside %7.1f  after %7.1f ms  inside vs outside %+6.1f %%  after vs before %+6.1f %%"
              % (run["name"], run["label"], before, inside, after, change, later))
    print()
    for label, pairs in by_label.items():
        changes, laters = [p[0] for p in pairs], [p[1] for p in pairs]
        print("%-24s runs %d  inside vs outside: median %+6.1f %% (%s)  after vs before: median %+6.1f %% (%s)"
              % (label, len(pairs), statistics.median(changes), ", ".join("%+.1f" % c for c in changes),
                 statistics.median(laters), ", ".join("%+.1f" % c for c in laters)))


if __name__ == "__main__":
    main()
