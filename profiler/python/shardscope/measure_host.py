"""Measures the host figures that offload what-ifs need, on the machine that will train, and writes
them into a cluster file for `shardscope simulate / plan --cluster`.

    python -m shardscope.measure_host --params 271e6 [--base CLUSTER.json] [-o host.json]

* host_optimizer_params_per_s: FSDP2's CPUOffloadPolicy steps the optimizer on the host, over the
  rank's fp32 shards (P/N parameters). This times torch.optim.AdamW (the job's default options:
  on CPU tensors torch runs its per-tensor loop) over that many fp32 parameters with gradients,
  with the intra-op threads the job gets (OMP_NUM_THREADS; --threads), after one untimed step
  that creates the optimizer state. Each rank of a node runs its own step on the same host, so
  measure with the threads one rank gets there.
  The tensors' sizes matter, not only their total: each step's temporaries of a large tensor come
  from fresh pages (glibc maps them), so a model with two 33 M-element tensors (a 32k vocabulary's
  embedding and output) steps slower than the same parameters in 4 Mi pieces, and a sample of the
  parameters faster than all of them. On a 2-core VM, 271 M parameters: 6.2e8 params/s timing a
  64 Mi sample in 4 Mi pieces and scaling, 3.5e8 all of them in 4 Mi pieces, 2.9e8 as the model's
  147 tensors (docs/simulator.md). --tensors-from PROFILE takes the model's tensors from a profile
  (each module's own parameters as one tensor, scaled to the rank's --params); parameters beyond
  --max-timed are sampled as whole tensors, not shrunk ones.
* host_link_GBps (CUDA only): pinned host-to-device and device-to-host copies of --copy-mb,
  the slower direction (the simulator has one figure per direction, the same for both).

The simulator's defaults are assumptions (resources/clusters/README.md: 5e8 parameters/s per rank,
50 GB/s); on the first three GPU loans the CPUOffloadPolicy step came out 12-28 % short with them
(docs/gpu-runs.md). The output is --base (or only these fields, over the built-in defaults) with
the measured figures and a "host_measured" record of how they were measured.
"""
import argparse
import os
import platform
import statistics
import sys
import time

from shardscope._cluster_file import read_base, write

# Above this many parameters the optimizer is timed on a sample of them and the rate scaled:
# AdamW's CPU loop is bandwidth-bound and linear in parameters well before this size.
DEFAULT_MAX_TIMED = 1 << 28


def _chunks(total, per_tensor):
    sizes = [per_tensor] * (total // per_tensor)
    if total % per_tensor:
        sizes.append(total % per_tensor)
    return sizes


def profile_tensors(path, params):
    """The model's parameter tensors for one rank, from a profile's modules: each module's own
    parameters (its count less its children's) as one tensor, scaled so that they sum to `params`.
    Raises ValueError for a profile without parameter counts."""
    import sqlite3

    if not os.path.isfile(path):
        raise ValueError("no such file")
    try:
        db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
        rows = db.execute("SELECT id, parent_id, param_count FROM modules ORDER BY id").fetchall()
        db.close()
    except sqlite3.Error as e:
        raise ValueError("not a ShardScope profile (%s)" % e)
    children = {}
    for _, parent, count in rows:
        children[parent] = children.get(parent, 0) + (count or 0)
    own = [(count or 0) - children.get(i, 0) for i, _, count in rows]
    own = [n for n in own if n > 0]
    if not own:
        raise ValueError("its modules have no parameter counts")
    share = params / sum(own)
    return [max(1, round(n * share)) for n in own]


def timed_sample(sizes, max_timed):
    """Whole tensors, in order, up to max_timed parameters (at least one): a shrunk tensor would
    step faster than the real one."""
    out, total = [], 0
    for n in sizes:
        if out and total + n > max_timed:
            break
        out.append(n)
        total += n
    return out


def adamw_params_per_s(torch, sizes, repeats):
    """Parameters per second of AdamW.step() on CPU fp32 tensors of `sizes` (median of `repeats` steps)."""
    params = sum(sizes)
    ps = [torch.nn.Parameter(torch.zeros(n)) for n in sizes]
    for p in ps:
        p.grad = torch.full_like(p, 1e-3)
    opt = torch.optim.AdamW(ps, lr=1e-4)
    opt.step()  # creates the state (exp_avg, exp_avg_sq): the job's first step, not its steady one
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        opt.step()
        times.append(time.perf_counter() - t)
    return params / statistics.median(times), times


def copy_GBps(torch, nbytes, repeats):
    """(host-to-device, device-to-host) GB/s of pinned copies of `nbytes` (medians)."""
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    dev = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    out = []
    for dst, src in ((dev, host), (host, dev)):
        dst.copy_(src, non_blocking=True)  # warm-up
        torch.cuda.synchronize()
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            dst.copy_(src, non_blocking=True)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t)
        out.append(nbytes / statistics.median(times) / 1e9)
    return tuple(out)


def positive_count(text):
    value = float(text)
    if not value >= 1 or value > 1e13:
        raise argparse.ArgumentTypeError("expected a number of parameters >= 1, got %r" % text)
    return int(value)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m shardscope.measure_host", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--params", type=positive_count, required=True,
                    help="parameters one rank's optimizer steps: the model's parameters / the shard group size (e.g. 271e6)")
    ap.add_argument("--tensor-elems", type=positive_count, default=4 << 20,
                    help="parameters per tensor without --tensors-from (default 4Mi)")
    ap.add_argument("--tensors-from", default="", metavar="PROFILE",
                    help="the model's tensor sizes from this profile's modules (recommended: the sizes change the rate)")
    ap.add_argument("--max-timed", type=positive_count, default=DEFAULT_MAX_TIMED,
                    help="time at most this many parameters and scale (default 2^28: 4 GiB of optimizer tensors)")
    ap.add_argument("--threads", type=int, default=0, help="intra-op threads (default: torch's, i.e. OMP_NUM_THREADS)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--copy-mb", type=int, default=256, help="CUDA: the size of each timed copy")
    ap.add_argument("--base", default="", help="a cluster file to start from (default: only the host fields)")
    ap.add_argument("-o", "--output", default="", help="cluster file to write (default: print it)")
    a = ap.parse_args(argv)
    if a.repeats < 1:
        ap.error("--repeats must be at least 1")
    try:
        base = read_base(a.base)
    except ValueError as e:
        sys.stderr.write("measure_host: cannot read the base cluster %s: %s\n" % (a.base, e))
        return 2

    try:
        sizes = profile_tensors(a.tensors_from, a.params) if a.tensors_from else None
    except ValueError as e:
        sys.stderr.write("measure_host: cannot take the tensors from %s: %s\n" % (a.tensors_from, e))
        return 2
    if sizes is not None:
        sizes = timed_sample(sizes, a.max_timed)
    else:
        sizes = _chunks(min(a.params, a.max_timed), a.tensor_elems)
    timed = sum(sizes)

    import torch

    if a.threads > 0:
        torch.set_num_threads(a.threads)
    sys.stderr.write("measure_host: AdamW over %d fp32 parameters in %d tensor(s) on %d thread(s)...\n"
                     % (timed, len(sizes), torch.get_num_threads()))
    rate, times = adamw_params_per_s(torch, sizes, a.repeats)
    measured = {"optimizer": "torch.optim.AdamW (defaults, fp32, CPU)", "params_timed": timed,
                "params_per_rank": a.params, "tensors_timed": len(sizes), "largest_tensor": max(sizes),
                "tensors_from": a.tensors_from or "%d-parameter pieces" % a.tensor_elems,
                "threads": torch.get_num_threads(),
                "step_s": [round(t, 6) for t in times], "torch": torch.__version__,
                "host": platform.node(), "cpu_count": os.cpu_count()}
    out = dict(base)
    out["name"] = (base.get("name", "default") + "+host") if base else "host-measured"
    out["host_optimizer_params_per_s"] = round(rate)
    if torch.cuda.is_available():
        h2d, d2h = copy_GBps(torch, a.copy_mb << 20, a.repeats)
        out["host_link_GBps"] = round(min(h2d, d2h), 2)
        measured.update(copy_bytes=a.copy_mb << 20, h2d_GBps=round(h2d, 2), d2h_GBps=round(d2h, 2),
                        device=torch.cuda.get_device_name())
    else:
        measured["host_link_GBps"] = "not measured (no CUDA device): the base's or the built-in default stays"
    out["host_measured"] = measured
    sys.stderr.write("measure_host: %.3g parameters/s (AdamW step %.3f s for %d parameters)%s\n"
                     % (rate, statistics.median(times), timed,
                        ", host link %.1f GB/s" % out["host_link_GBps"] if "h2d_GBps" in measured else ""))
    write(out, a.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
