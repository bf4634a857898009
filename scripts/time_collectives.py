#!/usr/bin/env python3
"""Runs a training script with FSDP's all-gathers and reduce-scatters timed as the job itself sees
them, without a profiler: from the call that issues one to the return of its wait (or of the call,
when it is synchronous). On a CPU run, where the training thread is held for a gloo collective's
whole time, what `simulate`'s fit should come close to from below: the span also holds the host
work between the issue and the wait (FSDP's Python, a reduce-scatter's clone of its input).

    torchrun --nproc_per_node=2 scripts/time_collectives.py --out times_{rank}.json -- \\
        scripts/fsdp_train_sample.py --device cpu --arch llama --small --steps 20

Writes per rank: {"all_gather": {"count", "mean_ms", "median_ms", "min_ms"}, "reduce_scatter": ...}
over the calls after the first --skip-all-gathers / --skip-reduce-scatters (the warm-up
step's), and the raw times in the order the waits returned.
The wrapper costs two clock reads and a Python call per collective (microseconds).
"""
import argparse
import atexit
import json
import os
import runpy
import statistics
import sys
import threading
import time

import torch.distributed as dist

# FSDP2 calls the first that exists (torch 2.15: all_gather_single / reduce_scatter_single);
# FSDP1 and older FSDP2 call the second.
KINDS = {"all_gather": ("all_gather_single", "all_gather_into_tensor", "_all_gather_base"),
         "reduce_scatter": ("reduce_scatter_single", "reduce_scatter_tensor", "_reduce_scatter_base")}


_inside = threading.local()  # one wrapped call may call another (a deprecated name): time the outer


def timed(kind, original, times):
    def call(*args, **kwargs):
        if getattr(_inside, "on", False):
            return original(*args, **kwargs)
        t0 = time.perf_counter()
        _inside.on = True
        try:
            work = original(*args, **kwargs)
        finally:
            _inside.on = False
        if work is None or not hasattr(work, "wait"):  # synchronous: done when the call returns
            times[kind].append(time.perf_counter() - t0)
            return work
        wait = work.wait

        def timed_wait(*a, **k):
            out = wait(*a, **k)
            times[kind].append(time.perf_counter() - t0)
            return out

        try:
            work.wait = timed_wait
        except (AttributeError, TypeError):  # a Work that takes no attributes: time the issue only
            times[kind].append(time.perf_counter() - t0)
        return work

    return call


def install(times):
    for kind, names in KINDS.items():
        for name in names:
            if hasattr(dist, name):
                setattr(dist, name, timed(kind, getattr(dist, name), times))


def summary(times, skip):
    out = {}
    for kind, values in times.items():
        ms = [v * 1e3 for v in values[skip.get(kind, 0):]]
        out[kind] = {"count": len(ms), "mean_ms": statistics.fmean(ms) if ms else None,
                     "median_ms": statistics.median(ms) if ms else None, "min_ms": min(ms) if ms else None,
                     "times_ms": ms}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="JSON file per rank ({rank} is replaced)")
    ap.add_argument("--skip-all-gathers", type=int, default=0, help="leave out this many first all-gathers (the warm-up)")
    ap.add_argument("--skip-reduce-scatters", type=int, default=0, help="leave out this many first reduce-scatters")
    ap.add_argument("script", help="the training script, then its arguments (after --)")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    times = {kind: [] for kind in KINDS}
    install(times)
    rank = os.environ.get("RANK", "0")
    skip = {"all_gather": a.skip_all_gathers, "reduce_scatter": a.skip_reduce_scatters}

    def write():
        with open(a.out.replace("{rank}", rank), "w") as f:
            json.dump(summary(times, skip), f)

    atexit.register(write)
    sys.argv = [a.script] + a.args
    runpy.run_path(a.script, run_name="__main__")


if __name__ == "__main__":
    main()
