#!/usr/bin/env python3
"""What `record` pays at every step's end to read each FSDP2 unit's prefetch lists again (hooks.py,
`_write_prefetch_lists`: a job may set them after its first step).

    PYTHONPATH=profiler/python .venv/bin/python bench/collector/bench_prefetch_lists.py [--units 32] [--rounds 200]

One process, a gloo group of one rank, a chain of Linear units sharded with FSDP2, each with the
lists of PyTorch's FSDP2 example (the next two units in forward, the two before in backward): the
worst case, since a unit without lists returns sooner. Times `fsdp2_prefetch_lists` over all units
(what a step's end reads; writing happens only when a list changed) and prints the median per step
and per unit over --rounds rounds.
"""
import argparse
import os
import statistics
import time

import torch.distributed as dist
import torch.nn as nn


class Names:
    """The tracker's naming interface that fsdp2_prefetch_lists uses."""

    def __init__(self, model):
        self._names = {m: n for n, m in model.named_modules()}
        self._order = {m: i for i, m in enumerate(model.modules())}

    def get(self, m):
        return self._names.get(m)

    def order(self, m):
        return self._order.get(m, 1 << 30)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--units", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=200)
    a = ap.parse_args()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29531")
    dist.init_process_group("gloo", rank=0, world_size=1)
    from torch.distributed.fsdp import fully_shard

    from shardscope.hooks import fsdp2_prefetch_lists

    model = nn.Sequential(*[nn.Linear(64, 64) for _ in range(a.units)])
    blocks = list(model)
    for b in blocks:
        fully_shard(b)
    fully_shard(model)
    for i, b in enumerate(blocks):
        b.set_modules_to_forward_prefetch(blocks[i + 1:i + 3])
        b.set_modules_to_backward_prefetch(blocks[max(0, i - 2):i][::-1])
    names = Names(model)
    assert fsdp2_prefetch_lists(blocks[3], names) == (["4", "5"], ["2", "1"])
    per_step = []
    for _ in range(a.rounds):
        t = time.perf_counter()
        for b in blocks:
            fsdp2_prefetch_lists(b, names)
        per_step.append(time.perf_counter() - t)
    m = statistics.median(per_step) * 1e6
    print("%d units: median %.1f us a step's end (%.2f us a unit), min %.1f us, over %d rounds"
          % (a.units, m, m / a.units, min(per_step) * 1e6, a.rounds))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
