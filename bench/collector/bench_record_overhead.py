#!/usr/bin/env python3
"""What `shardscope record` costs a real training job on CPU: the same job run unrecorded and
recorded, interleaved, with the job's own wall clock per step (scripts/fsdp_train_sample.py, FSDP2
over gloo, 2 ranks).

    .venv/bin/python bench/collector/bench_record_overhead.py --ss build-obs/app/shardscope --pairs 8 \
        --out /tmp/ss_overhead [--burn] [--variants record,steps,no-memory,...]

Each pair runs the unrecorded job and every variant once, in an order rotated from pair to pair
(so that a drift of this shared 2-core VM does not always fall on the same variant). --burn runs a
CPU-burning process beside every run (a busy machine).

Variants:
  record       record -- JOB (default settings): every step profiled
  window       record --steps A:B (--window): only steps A to B-1 profiled
  no-memory    the window, SHARDSCOPE_PROFILE_MEMORY=0 (no allocations: no memory by category)
  with-stack   the window, SHARDSCOPE_WITH_STACK=1 (Python stacks per operator)
  shapes       the window, SHARDSCOPE_RECORD_SHAPES=1 (operator shapes; breaks meta-device init)
  no-hooks     the window, record --no-modules (no module hooks; optimizer steps only)
  sidecar      the window, SHARDSCOPE_SIDECAR_RANGES=1 (module ranges written to the sidecar too)
  no-trace     the window, SHARDSCOPE_CPU_TRACE=0 (no torch.profiler: hooks and sidecar only)
Figures, from rank 0's own wall clock per step (and the same from its process CPU time per step,
all threads, in a second table: what `record` adds to the work, less moved by other load):
  all steps    a run's median step time after the warm-up, against the pair's unrecorded run
  record       without --steps a CPU rank profiles steps 0 to 9 (shardscope._window): with --steps
               above 11 its inside / outside figures are those of that default window
  window runs  `inside`: the window's steps but its first and last (the profiler starts in the
               step before the window and stops in its last step, both on the job's clock);
               `outside`: the other steps after the warm-up but the one before the window.
               inside vs outside in the same run is the profiler's cost per profiled step with that
               variant's options (the least noisy figure: one process, adjacent steps); outside vs
               the unrecorded run's same steps is what `record` costs the job outside the window.
Every figure: the median over the pairs and the spread (min .. max).
Host memory (a third table): rank 0's resident set growth per step over the window (or over all
steps after the warm-up) and its minor page faults per step there: torch.profiler keeps its trace
in the job's heap, and the pages it takes are the cost (docs/benchmarks.md).

Writes OUT/overhead.json (every run's step times) and prints the table of docs/benchmarks.md.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TRAIN = os.path.join(ROOT, "scripts", "fsdp_train_sample.py")

VARIANTS = {  # name -> (record options (None: --steps WINDOW), environment)
    "record": ([], {}),
    "window": (None, {}),
    "no-memory": (None, {"SHARDSCOPE_PROFILE_MEMORY": "0"}),
    "with-stack": (None, {"SHARDSCOPE_WITH_STACK": "1"}),
    "shapes": (None, {"SHARDSCOPE_RECORD_SHAPES": "1"}),
    "no-hooks": (["--no-modules"], {}),
    "sidecar": (None, {"SHARDSCOPE_SIDECAR_RANGES": "1"}),
    "no-trace": (None, {"SHARDSCOPE_CPU_TRACE": "0"}),
}


def median(xs):
    return statistics.median(xs) if xs else None


def pct(x, ref):
    return None if x is None or not ref else 100.0 * (x - ref) / ref


def run_job(a, name, variant):
    summary = os.path.join(a.out, name + ".json")
    if os.path.exists(summary):
        os.remove(summary)
    job = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
           "--standalone", TRAIN, "--device", "cpu", "--steps", str(a.steps),
           "--warmup", str(a.warmup), "--summary", summary] + a.model
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if variant is not None:
        opts, extra = VARIANTS[variant]
        opts = ["--steps", a.window] + (opts or []) if variant != "record" else opts
        env.update(extra)
        job = [a.ss, "record", "-o", os.path.join(a.out, name + ".ssdb")] + opts + ["--"] + job
    t = time.time()
    p = subprocess.run(job, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with open(os.path.join(a.out, name + ".log"), "w") as f:
        f.write(p.stdout)
    if p.returncode != 0:
        raise SystemExit("%s failed (%d); see %s.log" % (name, p.returncode, os.path.join(a.out, name)))
    with open(summary) as f:
        s = json.load(f)
    if variant is not None and not a.keep:
        for suffix in (".ssdb",):
            try:
                os.remove(os.path.join(a.out, name + suffix))
            except OSError:
                pass
    return {"step_ms": s["step_ms"], "step_cpu_ms": s.get("step_cpu_ms"), "step_rss_mb": s.get("step_rss_mb"),
            "step_minor_faults": s.get("step_minor_faults"), "wall_s": time.time() - t}


def window_bounds(text, steps):
    first, _, end = text.partition(":")
    return int(first or 0), int(end) if end else steps


def default_window(steps, warmup):
    """record's own window on a CPU rank without --steps (shardscope._window), where the run outlasts
    it; else None."""
    sys.path.insert(0, os.path.join(ROOT, "profiler", "python"))
    try:
        from shardscope._window import default_window as record_default
    finally:
        del sys.path[0]
    first, end = record_default(True)
    return (first, end) if steps > end + 1 and end - first > warmup + 2 else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ss", default=os.path.join(ROOT, "build", "app", "shardscope"))
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--steps", type=int, default=14)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--window", default="5:10", help="the window variants' record --steps A:B")
    ap.add_argument("--variants", default="record,window", help="comma-separated, from: " + ", ".join(VARIANTS))
    ap.add_argument("--model", default="--small", help="the training script's model options")
    ap.add_argument("--burn", action="store_true", help="a CPU-burning process beside every run")
    ap.add_argument("--keep", action="store_true", help="keep the recorded profiles")
    ap.add_argument("--out", default="/tmp/ss_overhead")
    a = ap.parse_args()
    a.model = a.model.split()
    variants = [v for v in a.variants.split(",") if v]
    for v in variants:
        if v not in VARIANTS:
            raise SystemExit("unknown variant %r (known: %s)" % (v, ", ".join(VARIANTS)))
    os.makedirs(a.out, exist_ok=True)
    burner = None
    if a.burn:
        burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    runs = {"unrecorded": []}
    for v in variants:
        runs[v] = []
    order = ["unrecorded"] + variants
    try:
        for i in range(a.pairs):
            k = i % len(order)
            for name in order[k:] + order[:k]:
                r = run_job(a, "%s_%d" % (name, i), None if name == "unrecorded" else name)
                runs[name].append(r)
                print("pair %d %-11s median step %.1f ms (%.0f s)" % (i, name, median(r["step_ms"][a.warmup:]), r["wall_s"]),
                      flush=True)
    finally:
        if burner is not None:
            burner.kill()
    explicit = window_bounds(a.window, a.steps)
    implicit = default_window(a.steps, a.warmup)
    bounds = lambda v: implicit if v == "record" else explicit
    timed = lambda r, k="step_ms": median(r[k][a.warmup:])

    def inside(r, k="step_ms", v=None):
        lo, hi = bounds(v)
        return median(r[k][max(lo + 1, a.warmup):hi - 1])

    def outside(r, k="step_ms", v=None):
        lo, hi = bounds(v)
        return median([t for n, t in enumerate(r[k]) if n >= a.warmup and not lo - 1 <= n < hi])

    def span(v, n):
        """The steps host memory is read over: the variant's window, else every step after the warm-up."""
        lo, hi = bounds(v) if v is not None and bounds(v) is not None else (a.warmup, n)
        return max(lo, a.warmup), min(hi, n)

    def rss_growth(r, v=None):
        """MB a step that rank 0's resident set grew by over span()."""
        rss = r.get("step_rss_mb")
        if not rss:
            return None
        lo, hi = span(v, len(rss))
        return (rss[hi - 1] - rss[lo - 1]) / (hi - lo) if hi > lo >= 1 else None

    def faults(r, v=None):
        """Median minor page faults a step over span(), its first and last step left out (the
        profiler's start and stop)."""
        f = r.get("step_minor_faults")
        if not f:
            return None
        lo, hi = span(v, len(f))
        return median(f[lo + 1:hi - 1])

    cpu = "step_cpu_ms"  # the same figures in rank 0's process CPU time (every thread), where the job reports it
    has_cpu = all(r.get(cpu) for rs in runs.values() for r in rs)
    report = {"model": a.model, "steps": a.steps, "warmup": a.warmup, "pairs": a.pairs, "burn": a.burn, "window": a.window,
              "runs": runs, "variants": {}}
    base = runs["unrecorded"]
    report["unrecorded"] = {"step_ms_median": median([timed(r) for r in base]),
                            "steps_per_s": 1000.0 / median([timed(r) for r in base])}

    def figure(values):
        return {"median_pct": median(values), "min_pct": min(values), "max_pct": max(values), "per_pair_pct": values}

    for v in variants:
        rec = runs[v]
        entry = {"steps_per_s": 1000.0 / median([timed(r) for r in rec]),
                 "all_steps_vs_unrecorded": figure([pct(timed(y), timed(x)) for x, y in zip(base, rec)])}
        if has_cpu:
            entry["all_steps_vs_unrecorded_cpu"] = figure([pct(timed(y, cpu), timed(x, cpu)) for x, y in zip(base, rec)])
        if bounds(v) is not None:
            entry["window"] = "%d:%d" % bounds(v)
            entry["inside_vs_outside_same_run"] = figure([pct(inside(y, v=v), outside(y, v=v)) for y in rec])
            entry["outside_vs_unrecorded"] = figure([pct(outside(y, v=v), outside(x, v=v)) for x, y in zip(base, rec)])
            entry["inside_vs_unrecorded"] = figure([pct(inside(y, v=v), inside(x, v=v)) for x, y in zip(base, rec)])
            if has_cpu:
                entry["inside_vs_outside_same_run_cpu"] = figure([pct(inside(y, cpu, v), outside(y, cpu, v)) for y in rec])
                entry["outside_vs_unrecorded_cpu"] = figure([pct(outside(y, cpu, v), outside(x, cpu, v))
                                                             for x, y in zip(base, rec)])
        if all(rss_growth(r) is not None for r in base + rec):
            entry["rss_mb_per_step"] = {"recorded": median([rss_growth(y, v) for y in rec]),
                                        "unrecorded": median([rss_growth(x, v) for x in base])}
            entry["minor_faults_per_step"] = {"recorded": median([faults(y, v) for y in rec]),
                                              "unrecorded": median([faults(x, v) for x in base])}
        report["variants"][v] = entry
    with open(os.path.join(a.out, "overhead.json"), "w") as f:
        json.dump(report, f, indent=1)
    fmt = lambda f: "%+.2f %% (%+.1f .. %+.1f)" % (f["median_pct"], f["min_pct"], f["max_pct"])
    print("\n%d pairs, %d steps (warm-up %d, window %s; record's own %s), model %s%s; unrecorded %.2f steps/s "
          "(median step %.1f ms)"
          % (a.pairs, a.steps, a.warmup, a.window, "%d:%d" % implicit if implicit else "all steps", " ".join(a.model), ", CPU burner beside" if a.burn else "",
             report["unrecorded"]["steps_per_s"], report["unrecorded"]["step_ms_median"]))
    print("| variant | steps/s (unrecorded %.2f) | all steps vs unrecorded | profiled step vs unprofiled, same run "
          "| outside the window vs unrecorded | inside the window vs unrecorded |" % report["unrecorded"]["steps_per_s"])
    print("|---|---|---|---|---|---|")
    for v, e in report["variants"].items():
        cols = [fmt(e[k]) if k in e else "" for k in ("all_steps_vs_unrecorded", "inside_vs_outside_same_run",
                                                      "outside_vs_unrecorded", "inside_vs_unrecorded")]
        print("| %s | %.2f | %s |" % (v, e["steps_per_s"], " | ".join(cols)))
    if has_cpu:
        print("\nThe same in rank 0's process CPU time per step (every thread of the process):")
        print("| variant | all steps vs unrecorded | profiled step vs unprofiled, same run | outside the window vs unrecorded |")
        print("|---|---|---|---|")
        for v, e in report["variants"].items():
            cols = [fmt(e[k]) if k in e else "" for k in ("all_steps_vs_unrecorded_cpu", "inside_vs_outside_same_run_cpu",
                                                          "outside_vs_unrecorded_cpu")]
            print("| %s | %s |" % (v, " | ".join(cols)))
    if any("rss_mb_per_step" in e for e in report["variants"].values()):
        print("\nHost memory, rank 0, over each variant's profiled steps (medians over the pairs; unrecorded: the same steps):")
        print("| variant | resident set MB / step, recorded | unrecorded | minor page faults / step, recorded | unrecorded |")
        print("|---|---|---|---|---|")
        for v, e in report["variants"].items():
            if "rss_mb_per_step" in e:
                r, f = e["rss_mb_per_step"], e["minor_faults_per_step"]
                print("| %s | %+.1f | %+.1f | %.0f | %.0f |" % (v, r["recorded"], r["unrecorded"], f["recorded"], f["unrecorded"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
