#!/usr/bin/env python3
"""What each of `record`'s CPU profiler options costs a real FSDP2 step, measured inside one job.

    .venv/bin/python -m torch.distributed.run --nproc_per_node=2 bench/collector/bench_profiler_options.py \
        [--rounds 8] [--steps-per-mode 3] [--small | --tiny] [--json OUT]

Run separately, the same job drifts by up to 2x on this shared VM from one run to the next (see
bench_record_overhead.py), which hides a few per cent. Here one FSDP2 job (scripts/fsdp_train_sample.py's
model, gloo, 2 ranks) switches between modes every few steps, round after round (the order reversed
every other round), exactly as `record` would set each up (shardscope's own hooks, backends and
torch.profiler options), and times each step on rank 0, by its wall clock and by its process's CPU
time (every thread: the work a mode adds, which other load on the machine moves less). A mode's cost in a round is its median step
against the round's unprofiled steps; the report gives the median over the rounds and the spread.
The first step after a switch is not timed (it carries the profiler's start; a stop happens before
the next mode's steps).

Modes (the costs are against `bare`):
  bare       no ShardScope hook at all (removed; the collective-size wrappers stay, switched off)
  outside    what `record --steps` leaves outside its window: the hooks installed but not recording
             (they count optimizer steps, the step clock writes one sidecar line per step)
  hooks      module ranges, to the sidecar only (record with SHARDSCOPE_CPU_TRACE=0)
  hooks-units  hooks, backward ranges for the FSDP units only (record --backward-ranges units)
  profiler   torch.profiler, CPU activities, no memory, no module ranges
  +memory    ... and profile_memory
  +hooks     ... and the module ranges into the trace and the sidecar: `record`'s defaults
  +hooks-units  +hooks with backward ranges for the FSDP units only
  -sidecar   +hooks without the module ranges in the sidecar (SHARDSCOPE_SIDECAR_RANGES=0)
  +stack     +hooks and with_stack
  +shapes    +hooks and record_shapes
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.path.insert(0, os.path.join(ROOT, "profiler", "python"))

MODES = {  # name -> (profiler options or None, hooks installed, hooks record, module ranges into the sidecar too)
    "bare": (None, False, False, False),
    "outside": (None, True, False, False),
    "hooks": (None, True, True, True),
    "hooks-units": (None, True, True, True),
    "profiler": ({"profile_memory": False}, False, False, False),
    "+memory": ({"profile_memory": True}, False, False, False),
    "+hooks": ({"profile_memory": True}, True, True, True),
    "+hooks-units": ({"profile_memory": True}, True, True, True),
    "-sidecar": ({"profile_memory": True}, True, True, False),
    "+stack": ({"profile_memory": True, "with_stack": True}, True, True, True),
    "+shapes": ({"profile_memory": True, "record_shapes": True}, True, True, True),
}


def backward_ranges(mode):
    """The hooks' backward range scope in a mode (hooks.Tracker)."""
    return "units" if mode.endswith("-units") else "modules"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--steps-per-mode", type=int, default=3)
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--small", action="store_true", help="the default")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--json", default="")
    a = ap.parse_args()

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    import fsdp_train_sample as sample
    from shardscope import _collective_sizes, hooks
    from shardscope._sidecar import SidecarWriter
    from shardscope.backends import FileBackend, ProfilerBackend, TeeBackend

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    dim, layers, heads, hidden, vocab, seq, batch = sample.PRESETS["tiny" if a.tiny else "small"]
    torch.manual_seed(0)
    model = sample.Llama(vocab, dim, layers, heads, hidden)
    mesh = init_device_mesh("cpu", (world,))
    for layer in model.layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    gen = torch.Generator().manual_seed(rank)

    # The hooks as record installs them on a CPU rank (_autostart.py), switched per mode.
    tracing = [False]
    sidecar = SidecarWriter(os.path.join(tempfile.mkdtemp(prefix="ss_opts_"), "bench.modules.tsv"))
    in_sidecar = FileBackend(sidecar, only_prefix="ss:opt:")
    backend = TeeBackend(ProfilerBackend(active=lambda: tracing[0]), in_sidecar)
    _collective_sizes.install()
    prof = [None]
    clock = {"start": None}

    def step_clock(step, end_ns, optimizer):  # as _window.CaptureWindow writes unobserved steps
        if clock["start"] is not None:
            sidecar.step(step, clock["start"], end_ns)
        clock["start"] = time.time_ns()

    def set_mode(name):
        options, installed, hooked, side = MODES[name]
        if prof[0] is not None:
            prof[0].stop()
            prof[0] = None
        tracing[0] = _collective_sizes.enabled = False
        if hooks._global is not None and (not installed or hooks._global.tracker.backward_ranges != backward_ranges(name)):
            hooks.uninstall()
        if installed and hooks._global is None:
            hooks.install(backend, sidecar, modules=True, backward_ranges=backward_ranges(name)).tracker.step_end_callbacks.append(step_clock)
        if options is not None:
            prof[0] = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], **options)
            prof[0].start()
            tracing[0] = _collective_sizes.enabled = True
        if hooks._global is not None:
            hooks._global.tracker.recording = hooked
        in_sidecar.only_prefix = None if side else "ss:opt:"

    def step():
        tokens = torch.randint(0, vocab, (batch, seq), generator=gen)
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), tokens[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    modes = [m for m in a.modes.split(",") if m]
    for _ in range(3):
        step()
    times = {m: [[] for _ in range(a.rounds)] for m in modes}
    cpu_times = {m: [[] for _ in range(a.rounds)] for m in modes}  # rank 0's process CPU time, every thread
    for r in range(a.rounds):
        for m in (modes if r % 2 == 0 else modes[::-1]):
            set_mode(m)
            step()  # the first step of a mode: not timed
            for _ in range(a.steps_per_mode):
                dist.barrier()
                t, c = time.perf_counter(), time.process_time()
                step()
                times[m][r].append(1000 * (time.perf_counter() - t))
                cpu_times[m][r].append(1000 * (time.process_time() - c))
    set_mode("bare")
    dist.barrier()
    if rank == 0:
        out = {"model": "tiny" if a.tiny else "small", "rounds": a.rounds, "steps_per_mode": a.steps_per_mode, "modes": {}}
        for m in modes:
            entry = {}
            for key, series in (("", times), ("cpu_", cpu_times)):
                meds = [statistics.median(series[m][r]) for r in range(a.rounds)]
                entry.update({key + "step_ms_median": statistics.median(meds), key + "step_ms_per_round": meds})
                if "bare" in series:
                    base = [statistics.median(series["bare"][r]) for r in range(a.rounds)]
                    cost = [100.0 * (x / b - 1) for x, b in zip(meds, base)]
                    entry.update({key + "cost_pct_median": statistics.median(cost), key + "cost_pct_min": min(cost),
                                  key + "cost_pct_max": max(cost), key + "cost_pct_per_round": cost})
            out["modes"][m] = entry
        print("%s model, FSDP2 over gloo, %d ranks; %d rounds of %d timed steps per mode" % (out["model"], world, a.rounds,
                                                                                             a.steps_per_mode))
        print("| mode | median step | cost vs unprofiled steps of the same round: median (min .. max) "
              "| CPU time per step (rank 0's process) | its cost: median (min .. max) |")
        print("|---|---|---|---|---|")
        for m, e in out["modes"].items():
            print("| %s | %.1f ms | %+.2f %% (%+.1f .. %+.1f) | %.1f ms | %+.2f %% (%+.1f .. %+.1f) |" % (
                m, e["step_ms_median"], e.get("cost_pct_median", 0), e.get("cost_pct_min", 0), e.get("cost_pct_max", 0),
                e["cpu_step_ms_median"], e.get("cpu_cost_pct_median", 0), e.get("cpu_cost_pct_min", 0),
                e.get("cpu_cost_pct_max", 0)))
        if a.json:
            with open(a.json, "w") as f:
                json.dump(out, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
