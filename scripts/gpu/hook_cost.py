#!/usr/bin/env python3
"""What ShardScope's module hooks cost per module call on this machine, by range backend (issue 22;
docs/gpu-runs.md). On the third loan the hooks alone made a launch-bound FSDP2 step 14 % slower,
about 15 ms for some 200 module calls a step, where the CPU benchmarks give 11-15 us per call
(bench/collector/bench_hook_cost.py --arch chain): this separates the Python hooks from where their ranges go.

    python3 scripts/gpu/hook_cost.py [--modules 200] [--repeats 30] [--device cuda|cpu]

A chain of small Linear modules (forward + backward, synchronised), in one process, modes
interleaved over rounds: no hooks; the hooks with a do-nothing backend (their own Python cost),
and the same without backward ranges (null_fwd: what the autograd hooks cost);
with NvtxBackend (torch.cuda.nvtx start/end: under `record`, NVTX goes to CUPTI through the
collector); with the allocator history's FactBackend around it, as `record --memory history`
sets it up; and torch's own baseline without ShardScope (torch_hook: a do-nothing Python gradient hook
on each module's output). Run it plain and under `record --no-modules` (the collector injected, no hooks of its
own), with SHARDSCOPE_TRACE_KINDS=none and with the default kinds: the difference is what NVTX
through CUPTI costs per range. Prints one JSON line: microseconds per module call per mode, and
the same split into the forward (hooks, ranges, arming the backward hooks) and the backward (the
backward hooks firing, on autograd's device thread for CUDA tensors): the fifth loan's backward
ranges cost 41 of 49 us a call there against 17 of 24 here, and the split says which half grew.
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
for p in (os.path.join(HERE, "..", "..", "profiler", "python"), os.environ.get("SHARDSCOPE_PYTHON_DIR", "")):
    if p and os.path.isdir(p):
        sys.path.insert(0, p)


class NullBackend:
    def start(self, message):
        return None

    def end(self, token):
        pass


class NullHistory:
    def fact(self, message):
        pass


def _no_op(grad):
    return None


def _hook_the_output(module, inputs, output):
    if output.requires_grad:
        output.register_hook(_no_op)


class ModelHooks:
    """A forward hook on every module of model (the root too, as hooks.annotate), removed as one."""

    def __init__(self, model, hook):
        self.handles = [m.register_forward_hook(hook) for m in model.modules()]

    def remove(self):
        for h in self.handles:
            h.remove()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--modules", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--label", default=os.environ.get("HOOK_COST_LABEL", "plain"))
    a = ap.parse_args()

    import torch
    import torch.nn as nn

    from shardscope import hooks
    from shardscope._cuda_memory import FactBackend

    device = a.device if a.device != "cuda" or torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(64, 64) for _ in range(a.modules)]).to(device)
    x = torch.randn(8, 64, device=device)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def step():
        model(x).sum().backward()

    def timed_step():
        """(forward s, backward s) of one step, each synchronised."""
        t0 = time.perf_counter()
        loss = model(x).sum()
        sync()
        t1 = time.perf_counter()
        loss.backward()
        sync()
        return t1 - t0, time.perf_counter() - t1

    # "null_fwd": the same without backward ranges (no autograd hooks on the modules' tensors): what
    # the backward ranges cost of the Python hooks (22 of ~29 us a call on the CPU benchmarks).
    # "torch_hook": no ShardScope at all, one do-nothing Python gradient hook on each module's output
    # (set by a plain forward hook): torch's own price for calling Python from backward, on autograd's
    # device thread for CUDA tensors. Its backward half against null's says whether the GPU's backward
    # ranges cost what any Python gradient hook costs there, or what ours add to it.
    modes = {"off": None, "null": NullBackend, "null_fwd": NullBackend, "torch_hook": None}
    if device == "cuda":
        from shardscope.backends import NvtxBackend

        modes["nvtx"] = NvtxBackend
        modes["nvtx+facts"] = lambda: FactBackend(NvtxBackend(), NullHistory())
    arm_backward = hooks.Tracker._arm_backward
    arm_no_backward = lambda *args: None
    for _ in range(5):
        step()
    sync()
    per_round = {m: [] for m in modes}
    split_round = {m: [] for m in modes}  # (forward, backward) per round
    for r in range(a.rounds):
        for m in (list(modes) if r % 2 == 0 else list(modes)[::-1]):
            hooks.Tracker._arm_backward = arm_no_backward if m == "null_fwd" else arm_backward
            if m == "torch_hook":
                handle = ModelHooks(model, _hook_the_output)
            else:
                handle = hooks.annotate(model, backend=modes[m]()) if modes[m] else None
            step()
            sync()
            t = time.perf_counter()
            for _ in range(a.repeats):
                step()
            sync()
            per_round[m].append((time.perf_counter() - t) / a.repeats)
            parts = [timed_step() for _ in range(a.repeats)]
            split_round[m].append(tuple(statistics.median(p[i] for p in parts) for i in (0, 1)))
            if handle is not None:
                handle.remove()
            hooks.Tracker._arm_backward = arm_backward
    step_ms = {m: 1e3 * statistics.median(v) for m, v in per_round.items()}
    cost_us = {m: 1e6 * statistics.median([x - o for x, o in zip(v, per_round["off"])]) / a.modules
               for m, v in per_round.items() if m != "off"}
    split_us = {m: {part: 1e6 * statistics.median([x[i] - o[i] for x, o in zip(v, split_round["off"])]) / a.modules
                    for i, part in enumerate(("forward", "backward"))}
                for m, v in split_round.items() if m != "off"}
    print(json.dumps({"label": a.label, "device": device, "modules": a.modules, "step_ms": step_ms,
                      "hook_cost_us_per_module_call": cost_us, "split_us_per_module_call": split_us,
                      "under_record": os.environ.get("SHARDSCOPE_COLLECTOR") == "1",
                      "trace_kinds": os.environ.get("SHARDSCOPE_TRACE_KINDS", "")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
