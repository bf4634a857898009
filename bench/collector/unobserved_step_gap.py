#!/usr/bin/env python3
"""Which unobserved steps stand for the job as it runs without `record`: reads one or more
OUT/overhead.json of bench_record_overhead.py (a window variant run interleaved with the unrecorded
job) and prints, per step number, the recorded run's step against the unrecorded run's same step
(median over the pairs, and the spread), then what a calibration that took a given set of
unobserved steps would see against the unrecorded job's reference steps.

    .venv/bin/python bench/collector/bench_record_overhead.py --pairs 6 --steps 20 --window 3:7 \
        --variants window --out /tmp/ovw
    .venv/bin/python bench/collector/unobserved_step_gap.py /tmp/ovw/overhead.json [more.json ...] \
        [--variant window] [--reference 2:10] [--sets 1,2,7,8,9 2,7,8,9 8,9 8-19]

The defaults are scripts/closed_loop.py's: A runs 10 steps with `record --steps 3:7`, its
unobserved steps after step 0 are 1, 2, 7, 8, 9 (sim_inputs.cpp's unobserved_step takes them all on
a CPU rank), and the unrecorded B is judged over steps 2-9. Both wall time (the job's clock) and
rank 0's process CPU time are shown: CPU time moves less with other load on the cores.
"""
import argparse
import json
import statistics

from bench_record_overhead import pct, window_bounds  # the same percentages and A:B as the bench's


def steps_of(text):
    """'1,2,8-19' -> [1, 2, 8, ..., 19]"""
    out = []
    for part in text.split(","):
        first, _, last = part.partition("-")
        out.extend(range(int(first), int(last or first) + 1))
    return out


def spread(xs):
    return "%+6.1f %% (%+.1f .. %+.1f)" % (statistics.median(xs), min(xs), max(xs))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("overhead", nargs="+", help="overhead.json files of bench_record_overhead.py")
    ap.add_argument("--variant", default="window")
    ap.add_argument("--reference", default="2:10", help="the unrecorded job's steps A:B judged against")
    ap.add_argument("--sets", nargs="*", default=["1,2,7,8,9", "2,7,8,9", "1,2,8,9", "8,9", "8-19", "10-19"],
                    help="sets of unobserved steps a calibration could take")
    a = ap.parse_args()
    pairs = []  # (unrecorded run, recorded run) with the same pair index
    for path in a.overhead:
        with open(path) as f:
            d = json.load(f)
        if a.variant not in d["runs"]:
            raise SystemExit("%s has no %r runs (it has %s)" % (path, a.variant, ", ".join(d["runs"])))
        pairs += list(zip(d["runs"]["unrecorded"], d["runs"][a.variant]))
    if not pairs:
        raise SystemExit("no pairs")
    ref = range(*window_bounds(a.reference, 0))
    print("%d pairs, variant %s; unrecorded reference steps %d-%d" % (len(pairs), a.variant, ref[0], ref[-1]))
    for key, label in (("step_ms", "wall time"), ("step_cpu_ms", "process CPU time")):
        if any(u.get(key) is None or r.get(key) is None for u, r in pairs):
            continue
        n = min(min(len(u[key]), len(r[key])) for u, r in pairs)
        print("\n%s: recorded step against the unrecorded run's same step" % label)
        print("| step | median (min .. max) |\n|---|---|")
        for s in range(n):
            print("| %d | %s |" % (s, spread([pct(r[key][s], u[key][s]) for u, r in pairs])))
        print("\n%s: the median of a set of unobserved steps against the unrecorded median of steps %d-%d"
              % (label, ref[0], ref[-1]))
        print("| unobserved steps | median (min .. max) | per pair |\n|---|---|---|")
        for text in a.sets:
            sel = [s for s in steps_of(text) if s < n]
            gaps = [pct(statistics.median(r[key][s] for s in sel), statistics.median(u[key][s] for s in ref))
                    for u, r in pairs]
            print("| %s | %s | %s |" % (text, spread(gaps), " ".join("%+.1f" % g for g in gaps)))


if __name__ == "__main__":
    main()
