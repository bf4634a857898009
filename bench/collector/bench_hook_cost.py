#!/usr/bin/env python3
"""What ShardScope's module hooks cost a training step, in one process, by CPU time.

    .venv/bin/python bench/collector/bench_hook_cost.py [--rounds 16] [--arch llama|mlp|chain] [--reference REV]

The end-to-end benchmarks (bench_record_overhead.py: separate runs; bench_profiler_options.py: one
FSDP2 job switching modes) measure wall time on a shared 2-core VM whose speed drifts up to 2x, so
a cost of a few per cent is inside their spread. This one takes the hooks alone, without gloo's
threads or a profiler: scripts/fsdp_train_sample.py's model (--small shape; or `chain`, 200 tiny
Linear modules, where the hooks are most of the step as on a launch-bound GPU step), one thread,
forward + backward + AdamW, timed by the process's CPU time, two steps per mode (--steps-per-round),
the modes interleaved and their order reversed every other round:

  off        no hook
  recording  `record`'s hooks as inside a capture window: a range per module call (forward,
             backward, recompute), written to a sidecar file (the FileBackend; on CPU ranks the
             same ranges also go into torch.profiler's trace, whose cost is the profiler's)
  outside    outside the window (`record --steps A:B`, and after the default window): the module
             hooks removed, the optimizer's hooks count the steps
  idle-hooks outside the window as before 2026-11-28: the module hooks in place, returning at once
  REV        with --reference REV: `recording` with hooks.py as it was at git revision REV (a
             before/after of a change to the hooks, in the same process and rounds)

Prints the median step per mode and each mode's cost against `off` (median and spread over the
rounds, each round's modes against that round's `off`).
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.path.insert(0, os.path.join(ROOT, "profiler", "python"))


def hooks_at_revision(rev, tmp):
    """shardscope/hooks.py as of git revision `rev`, imported beside the current one (its own
    module, its own global handle; the rest of the package is today's)."""
    import importlib.util
    import subprocess

    source = subprocess.check_output(["git", "-C", ROOT, "show", rev + ":profiler/python/shardscope/hooks.py"])
    path = os.path.join(tmp, "hooks_at_revision.py")
    with open(path, "wb") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location("shardscope._hooks_at_revision", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=16)
    ap.add_argument("--arch", choices=["llama", "mlp", "chain"], default="llama")
    ap.add_argument("--steps-per-round", type=int, default=2)
    ap.add_argument("--reference", metavar="REV", help="also time hooks.py as of this git revision")
    a = ap.parse_args()

    import torch

    import fsdp_train_sample as sample
    from shardscope import hooks
    from shardscope._sidecar import SidecarWriter
    from shardscope.backends import FileBackend

    torch.set_num_threads(1)
    torch.manual_seed(0)
    dim, layers, heads, hidden, vocab, seq, batch = sample.PRESETS["small"]
    if a.arch == "llama":
        model = sample.Llama(vocab, dim, layers, heads, hidden, False)
        inputs = torch.randint(0, vocab, (batch, seq))
    elif a.arch == "mlp":
        model = sample.ResidualMlp(dim, layers, hidden)
        inputs = torch.randn(batch * seq, dim)
    else:
        model = torch.nn.Sequential(*[torch.nn.Linear(16, 16) for _ in range(200)])
        inputs = torch.randn(4, 16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step():
        model(inputs).float().mean().backward()
        opt.step()
        opt.zero_grad()

    with tempfile.TemporaryDirectory() as tmp:
        sidecar = SidecarWriter(os.path.join(tmp, "sidecar.tsv"))
        for _ in range(3):  # warm-up: allocator, optimizer state
            step()
        modes = ("off", "recording", "outside", "idle-hooks")
        implementation = dict.fromkeys(modes, hooks)
        if a.reference:
            modes += (a.reference,)
            implementation[a.reference] = hooks_at_revision(a.reference, tmp)
        times = {m: [] for m in modes}
        for r in range(a.rounds):
            for mode in modes if r % 2 == 0 else tuple(reversed(modes)):
                handle = None
                if mode != "off":
                    handle = implementation[mode].install(FileBackend(sidecar), sidecar=sidecar)
                    handle.tracker.recording = mode not in ("outside", "idle-hooks")
                    if mode == "outside":
                        handle.tracker.module_hooks.switch(False)
                t = time.process_time()
                for _ in range(a.steps_per_round):
                    step()
                times[mode].append((time.process_time() - t) / a.steps_per_round * 1e3)
                if handle is not None:
                    implementation[mode].uninstall()
        sidecar.close()
    calls = sum(1 for _ in model.modules())
    print("%s, %d modules, %d rounds, CPU time per step" % (a.arch, calls, a.rounds))
    for mode in modes:
        costs = [100 * (t - o) / o for t, o in zip(times[mode], times["off"])]
        per_call = statistics.median(1e3 * (t - o) / calls for t, o in zip(times[mode], times["off"]))
        print("  %-10s %7.2f ms   cost %+6.2f %% (%+.2f .. %+.2f), %.1f us per module call" % (
            mode, statistics.median(times[mode]), statistics.median(costs), min(costs), max(costs), per_call))
    return 0


if __name__ == "__main__":
    sys.exit(main())
