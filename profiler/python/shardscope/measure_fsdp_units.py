"""Measures what one more FSDP2 unit costs a training step on this machine, without a profiler, and
writes it into a cluster file for `shardscope simulate / plan --cluster` (what a bucket saves).

    torchrun --nproc_per_node=N -m shardscope.measure_fsdp_units [--base CLUSTER.json] [-o units.json]

Run it where the job trains, with the job's ranks per node (gloo on CPU ranks, NCCL on GPUs).

A bucket (fully_shard([m1, m2])) runs one unit's hooks, copy-in / copy-out calls and collectives
for all its members. Their cost per unit is mostly the host's: FSDP2's Python in four hooks, a few
small operators per call, each collective's hand-off between the ranks. A profiled run hides it
(the profiler's own cost per operator dwarfs it, and a CPU profile of 8 layers shows no gain from
pairing them, where the job without the profiler runs 9-21 % faster), so it is measured here, on
a model whose units are all cost and no arithmetic: --units blocks of --tensors narrow linear
layers, sharded once as --units units and once in buckets of --bucket, stepped alternately
(A B B A) for --repeats rounds. One merged unit's cost is (A - B) / (units merged away), for the
forward (host time until it returns) and the backward (until it returns) apart. On a GPU these
are host times: they shorten a step only where the GPU waits for the host, which is what the
simulator takes them from (the profile's measured GPU idle); on a CPU run the host is the device.

Writes fsdp_unit_forward_us and fsdp_unit_backward_us (the median over ranks; a negative result,
noise on a fast machine, is written as 0 with a warning) over --base, with an "fsdp_units_measured"
record of how. Rank 0 writes the file.
"""
import argparse
import gc
import os
import platform
import statistics
import sys
import time

from shardscope._cluster_file import read_base, write


def build(torch, units, tensors, width, bucket, sharded_as_buckets):
    """A Sequential of `units` blocks (each `tensors` bias-free width x width linears), sharded
    per block or in buckets of `bucket` blocks, and a root over them."""
    from torch.distributed.fsdp import fully_shard

    nn = torch.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList(nn.Linear(width, width, bias=False) for _ in range(tensors))

        def forward(self, x):
            for layer in self.layers:
                x = torch.relu(layer(x))
            return x

    torch.manual_seed(0)
    model = nn.Sequential(*[Block() for _ in range(units)])
    step = bucket if sharded_as_buckets else 1
    for i in range(0, units, step):
        group = [model[j] for j in range(i, min(units, i + step))]
        fully_shard(group if len(group) > 1 else group[0])
    fully_shard(model)
    return model


def rank_medians(dist, models, x, warmup, repeats, sync):
    """Per model: the median forward and backward host times (s) over `repeats` alternating rounds."""
    times = {k: ([], []) for k in models}

    def step(k):
        dist.barrier()
        t0 = time.perf_counter()
        out = models[k](x)
        t1 = time.perf_counter()
        out.sum().backward()
        t2 = time.perf_counter()
        for p in models[k].parameters():
            p.grad = None
        sync()
        return t1 - t0, t2 - t1

    for k in models:
        for _ in range(warmup):
            step(k)
    order = list(models)
    for r in range(repeats):
        for k in order if r % 2 == 0 else order[::-1]:
            f, b = step(k)
            times[k][0].append(f)
            times[k][1].append(b)
    return {k: (statistics.median(f), statistics.median(b)) for k, (f, b) in times.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="torchrun --nproc_per_node=N -m shardscope.measure_fsdp_units", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--units", type=int, default=16, help="blocks, each one FSDP unit in the first model (default 16)")
    ap.add_argument("--tensors", type=int, default=8, help="parameter tensors per block (default 8: a decoder block has 7-9)")
    ap.add_argument("--width", type=int, default=32, help="the linears' width: small, so that the bytes cost nothing")
    ap.add_argument("--bucket", type=int, default=2, help="blocks per bucket in the second model (default 2)")
    ap.add_argument("--repeats", type=int, default=20, help="alternating rounds timed (default 20)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    ap.add_argument("--base", default="", help="a cluster file to start from (default: only these fields)")
    ap.add_argument("-o", "--output", default="", help="cluster file to write (default: print it)")
    a = ap.parse_args(argv)
    if a.units < 2 or a.tensors < 1 or a.width < 1 or a.repeats < 1 or a.warmup < 0:
        ap.error("--units >= 2, --tensors, --width and --repeats >= 1, --warmup >= 0")
    if not 2 <= a.bucket <= a.units:
        ap.error("--bucket must be in [2, --units]")
    if "RANK" not in os.environ:
        ap.error("run it under torchrun (torchrun --nproc_per_node=N -m shardscope.measure_fsdp_units): it times FSDP's collectives")
    try:
        base = read_base(a.base)
    except ValueError as e:
        sys.stderr.write("measure_fsdp_units: cannot read the base cluster %s: %s\n" % (a.base, e))
        return 2

    import torch
    import torch.distributed as dist

    cuda = a.device == "cuda" or (a.device == "auto" and torch.cuda.is_available())
    if cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl" if cuda else "gloo")
    try:
        rank, world = dist.get_rank(), dist.get_world_size()
        if world < 2:
            raise SystemExit("measure_fsdp_units: needs 2 or more ranks (--nproc_per_node): with one, FSDP calls no collective")
        dev = torch.device("cuda") if cuda else torch.device("cpu")
        with torch.device(dev):
            models = {"units": build(torch, a.units, a.tensors, a.width, a.bucket, False),
                      "buckets": build(torch, a.units, a.tensors, a.width, a.bucket, True)}
            x = torch.randn(8, a.width)
        sync = torch.cuda.synchronize if cuda else (lambda: None)
        med = rank_medians(dist, models, x, a.warmup, a.repeats, sync)
        merged = a.units - (a.units + a.bucket - 1) // a.bucket
        mine = [(med["units"][i] - med["buckets"][i]) / merged * 1e6 for i in (0, 1)]
        every = [None] * world
        dist.all_gather_object(every, {"forward_us": mine[0], "backward_us": mine[1],
                                       "units_ms": [round(v * 1e3, 3) for v in med["units"]],
                                       "buckets_ms": [round(v * 1e3, 3) for v in med["buckets"]]})
        # FSDP's states hold the last step's collective handles: release them on every rank before
        # the group goes (else gloo's threads may abort the process at exit).
        del models
        gc.collect()
        dist.barrier()
    finally:
        dist.destroy_process_group()
    if rank != 0:
        return 0
    fwd = statistics.median(r["forward_us"] for r in every)
    bwd = statistics.median(r["backward_us"] for r in every)
    for name, v in (("forward", fwd), ("backward", bwd)):
        if v < 0:
            sys.stderr.write("measure_fsdp_units: WARNING: buckets came out slower in the %s (%.1f us per unit): written as 0 "
                             "(noise; rerun with more --repeats on a quieter machine)\n" % (name, v))
    out = dict(base)
    out["name"] = (base.get("name", "default") + "+fsdp-units") if base else "fsdp-units-measured"
    out["fsdp_unit_forward_us"] = round(max(0.0, fwd), 1)
    out["fsdp_unit_backward_us"] = round(max(0.0, bwd), 1)
    out["fsdp_units_measured"] = {
        "world_size": world, "backend": "nccl" if cuda else "gloo",
        "device": torch.cuda.get_device_name() if cuda else "cpu", "units": a.units, "tensors_per_unit": a.tensors,
        "width": a.width, "bucket": a.bucket, "repeats": a.repeats,
        "per_rank": [{k: (round(v, 1) if isinstance(v, float) else v) for k, v in r.items()} for r in every],
        "torch": torch.__version__, "host": platform.node(), "cpu_count": os.cpu_count(),
        "threads": torch.get_num_threads()}
    sys.stderr.write("measure_fsdp_units: one more FSDP unit costs %.0f us in a forward, %.0f us in a backward (%d ranks, %s)\n"
                     % (fwd, bwd, world, out["fsdp_units_measured"]["backend"]))
    write(out, a.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
