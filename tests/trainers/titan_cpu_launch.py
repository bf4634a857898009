#!/usr/bin/env python3
"""Runs torchtitan's trainer (torchtitan.train) on CPU with gloo, without editing torchtitan:

    torchrun --nproc_per_node=2 tests/trainers/titan_cpu_launch.py --assets DIR [--steps N]
        [--summary FILE] [--mem-tracker-step K] -- --module titan_cpu_config --config llama3_debug_cpu [torchtitan options]

What a CPU run of torchtitan needs, done here before torchtitan is imported:
* its device comes from torch._utils._get_available_device_type() with a fallback to "cuda" (no
  option): the CPU is returned instead;
* torch.cpu.current_device() returns the string "cpu" where torchtitan passes it as a device id
  (barrier(device_ids=[...])): an int index is returned; torch.cpu lacks what torchtitan's device
  memory monitor calls (get_device_name, get_device_properties, memory_stats, ...): stand-ins;
* the tokenizer and the data set are made by titan_assets.py in --assets (SS_TITAN_ASSETS).
The SDPA attention and gloo's SUM reduction are set by the config (titan_cpu_config.py).

--summary writes, from rank 0, each training step's wall time (the trainer's train_step, timed
here), its FSDP collectives and, apart, each validation's, the bytes its gradients hold at each
optimizer step and, with --mem-tracker-step,
FSDPMemTracker's peak of that step (PyTorch's own memory tracker, the job's counter on CPU:
docs/accuracy.md).
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import job_counts  # noqa: E402


def cpu_device_patches():
    import torch
    import torch._utils

    torch._utils._get_available_device_type = lambda: "cpu"
    torch.cpu.current_device = lambda: 0  # an index, as torch.cuda's
    # What torchtitan's device memory monitor asks a device module for (torch.cpu lacks them):
    # a CPU "device" of the machine's memory, with no allocator statistics of its own.
    shims = {
        "get_device_name": lambda device=None: "CPU",
        "get_device_properties": lambda device=None: type("CpuProperties", (), {"total_memory": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")})(),
        "reset_peak_memory_stats": lambda device=None: None,
        "empty_cache": lambda: None,
        "memory_stats": lambda device=None: {},
    }
    for name, fn in shims.items():
        if not hasattr(torch.cpu, name):
            setattr(torch.cpu, name, fn)


def time_steps(summary_path, tracker_step, tracker_out):
    """Wraps Trainer.train_step: wall time per step, the FSDP collectives each step issues, the
    units, and FSDPMemTracker around one step."""
    import torch
    from torchtitan.trainer import Trainer

    original = Trainer.train_step
    times = []
    collectives = []
    validations = []
    gradient_bytes = []
    units = {}
    job_counts.count_fsdp_collectives(collectives)
    job_counts.count_gradient_bytes(gradient_bytes)

    def train_step(self, *args, **kwargs):
        if not units:  # every part of the model this rank holds (a pipeline's stages)
            for part in self.model_parts:
                units.update(job_counts.fsdp_units(part))
        collectives.append([])
        gradient_bytes.append(0)
        tracker = None
        if tracker_step >= 0 and len(times) == tracker_step:
            # PyTorch's tracker, made to follow the chunked loss's repeated calls of the output head
            # (PyTorch's own raises "multiple iterative calls" there): shardscope.mem_tracker.
            from shardscope.mem_tracker import FSDPMemTracker

            tracker = FSDPMemTracker(self.model_parts[0], self.optimizers.optimizers[0])
            tracker.track_inputs(())
            tracker.__enter__()
        t0 = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            times.append(time.perf_counter() - t0)
            if tracker is not None:
                tracker.__exit__(None, None, None)
                _write_tracker_peak(tracker, tracker_out, tracker_step)
            write()

    Trainer.train_step = train_step

    # The validator runs between training steps: its collectives are counted apart, as it issues them.
    from torchtitan.components.validate import Validator

    original_validate = Validator.validate

    def validate(self, *args, **kwargs):
        collectives.append([])
        try:
            return original_validate(self, *args, **kwargs)
        finally:
            validations.append(collectives.pop())

    Validator.validate = validate

    def write():
        # After every step (outside its timing), not only at exit: a rank that dies in torch's
        # teardown after training ("terminate called without an active exception", seen once in
        # 30 runs) gets the others killed before their atexit handlers run.
        if summary_path and int(os.environ.get("RANK", "0")) == 0:
            with open(summary_path + ".tmp", "w") as f:
                json.dump({"step_s": times, "units": units, "collectives": [sorted(c) for c in collectives],
                           "gradient_bytes": gradient_bytes, "validations": [sorted(c) for c in validations]}, f)
            os.replace(summary_path + ".tmp", summary_path)

    import atexit

    atexit.register(write)


def _write_tracker_peak(tracker, path, step):
    import torch

    if not path:
        return
    dev = torch.device("cpu")
    peak = tracker.get_tracker_snapshot("peak").get(dev, {})
    out = {getattr(k, "value", str(k)): int(v) for k, v in peak.items()}  # its own names ("Sharded Param")
    with open(path.replace("{rank}", os.environ.get("RANK", "0")), "w") as f:
        json.dump({"step": step, "peak": out}, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--assets", required=True, help="folder for the tokenizer and data set (made once)")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--summary", default="")
    ap.add_argument("--mem-tracker-step", type=int, default=-1)
    ap.add_argument("--mem-tracker-out", default="", help="JSON per rank ({rank} is replaced)")
    argv = sys.argv[1:]
    rest = []
    if "--" in argv:
        i = argv.index("--")
        argv, rest = argv[:i], argv[i + 1:]
    a = ap.parse_args(argv)
    sys.path.insert(0, HERE)
    from titan_assets import make_assets

    if int(os.environ.get("LOCAL_RANK", "0")) == 0:
        make_assets(a.assets)
    else:  # rank 0 makes them; the others wait for its marker
        while not os.path.exists(os.path.join(a.assets, ".complete")):
            time.sleep(0.1)
    os.environ["SS_TITAN_ASSETS"] = a.assets
    os.environ.setdefault("SS_TITAN_DUMP", os.path.join(a.assets, "dump"))  # torchtitan's outputs, not the cwd
    os.environ["SS_TITAN_STEPS"] = str(a.steps)
    cpu_device_patches()
    time_steps(a.summary, a.mem_tracker_step, a.mem_tracker_out)
    from torchtitan import train

    sys.argv = [sys.argv[0]] + rest
    train.main()


if __name__ == "__main__":
    main()
