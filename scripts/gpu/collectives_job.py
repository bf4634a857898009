#!/usr/bin/env python3
"""Collectives of known type and size, for the GPU kit's health stage (docs/gpu-runs.md).

On one GPU, FSDP2 issues no all-gather or reduce-scatter (world size 1: torch skips them), and NCCL
refuses two ranks on one device; NCCL still runs collectives of one rank (its API calls, their
NVTX payloads and, for reductions, a kernel). This job makes each kind a fixed number of times with
fixed sizes, so that the recording's collectives can be checked for type and bytes exactly. It
writes what reaches NCCL to --expect (JSON: [{"type", "bytes", "count"}], bytes as the collector
stores them: the whole buffer, i.e. the all-gather's output and the reduce-scatter's input).

    torchrun --nproc_per_node=1 collectives_job.py --device cuda --expect expect.json
"""
import argparse
import json
import os

import torch
import torch.distributed as dist

# (type, dtype, elements of the whole buffer): element counts divisible by any small world size.
CALLS = [
    ("all_gather", torch.bfloat16, 1 << 20),
    ("reduce_scatter", torch.float32, 1 << 20),
    ("all_reduce", torch.float32, 3 << 18),
    ("broadcast", torch.float32, 1 << 16),
]
REPEAT = 4


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--expect", default="")
    a = ap.parse_args()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if a.device == "cuda":
        torch.cuda.set_device(local)
    dist.init_process_group("nccl" if a.device == "cuda" else "gloo")
    world = dist.get_world_size()
    expect = []
    for kind, dtype, n in CALLS:
        whole = torch.ones(n, dtype=dtype, device=a.device)
        part = torch.ones(n // world, dtype=dtype, device=a.device)
        for _ in range(REPEAT):
            if kind == "all_gather":
                dist.all_gather_into_tensor(whole, part)
            elif kind == "reduce_scatter":
                dist.reduce_scatter_tensor(part, whole)
            elif kind == "all_reduce":
                dist.all_reduce(whole)
            else:
                dist.broadcast(whole, src=0)
        # torch's NCCL process group does not call NCCL for a reduce-scatter of one rank: it copies
        # the input (an H200 run: four 4 MiB device-to-device copies, no ncclReduceScatter range).
        skipped = world == 1 and kind == "reduce_scatter" and a.device == "cuda"
        expect.append({"type": kind, "bytes": n * whole.element_size(), "count": 0 if skipped else REPEAT})
    if a.device == "cuda":
        torch.cuda.synchronize()
    dist.barrier()
    if a.expect and dist.get_rank() == 0:
        with open(a.expect, "w") as f:
            json.dump(expect, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
