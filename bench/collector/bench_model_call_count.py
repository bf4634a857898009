#!/usr/bin/env python3
"""What counting the model's calls costs (hooks.Tracker.model_calls: the forward pre-hook that
stays on the model outside a capture window, so that `simulate` can tell an unobserved step that
held an evaluation from a training step).

    .venv/bin/python bench/collector/bench_model_call_count.py [--rounds 15] [--calls 20000]

A one-Linear model (the call itself as cheap as torch makes it, so the hook is most of what is
timed), called --calls times with the counter on and off, the two interleaved and their order
reversed every other round; process CPU time. Prints each mode's median per call and the
counter's cost per call (median and spread over the rounds). A training step calls its model once
per forward (a micro-batch, an evaluation batch), so this is the cost per step and per pass.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "profiler", "python"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=20000)
    a = ap.parse_args()

    import torch

    from shardscope import hooks
    from shardscope._sidecar import SidecarWriter
    from shardscope.backends import FileBackend

    torch.set_num_threads(1)
    model = torch.nn.Linear(4, 4)
    x = torch.randn(1, 4)
    with tempfile.TemporaryDirectory() as tmp, torch.no_grad():
        sidecar = SidecarWriter(os.path.join(tmp, "sidecar.tsv"))
        tracker = hooks.Tracker(FileBackend(sidecar), sidecar)

        def timed(n):
            t = time.process_time()
            for _ in range(n):
                model(x)
            return (time.process_time() - t) / n * 1e6

        timed(1000)  # warm-up
        times = {"off": [], "counted": []}
        for r in range(a.rounds):
            for mode in ("off", "counted") if r % 2 == 0 else ("counted", "off"):
                if mode == "counted":
                    tracker.register_root(model, name="")  # what record does at the model's first call
                    tracker.take_model_calls()
                times[mode].append(timed(a.calls))
                if mode == "counted":
                    if tracker.take_model_calls() != a.calls:
                        raise SystemExit("the counter missed calls")
                    tracker.stop_counting_calls()
        sidecar.close()
    cost = [c - o for c, o in zip(times["counted"], times["off"])]
    print("%d rounds of %d calls, CPU time per model call" % (a.rounds, a.calls))
    for mode, t in times.items():
        print("  %-8s %6.2f us" % (mode, statistics.median(t)))
    print("  counter  %+6.2f us per call (%+.2f .. %+.2f)" % (statistics.median(cost), min(cost), max(cost)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
