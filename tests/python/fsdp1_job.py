#!/usr/bin/env python3
"""A training loop on FSDP1 (`FullyShardedDataParallel`, auto-wrapped per block), the API that
Lightning's strategy="fsdp", Accelerate and many own loops still use, for test_record_fsdp1_cpu.py.
CPU, gloo, torchrun. The model is trainer_patterns.py's; every unit's parameter count is even: no
padding of the flat parameters over 2 ranks, so a unit's all-gather is exactly its parameters' bytes.

  --strategy FULL_SHARD | SHARD_GRAD_OP   the units' sharding strategy
  --hsdp                                  HYBRID_SHARD over a (replicate 2, shard world / 2) mesh
  --orig-params                           use_orig_params=True (modules keep views of the shards)
  --mixed-precision bf16 | bf16-reduce   MixedPrecision: bf16 parameters, gradients reduced in fp32 / bf16
  --plan P.json                           units from shardscope.plan.fsdp1_wrap_policy
  --summary FILE                          rank 0: parameters per module of the unwrapped model
"""
import argparse
import gc
import json
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "..", "profiler", "python")]

from trainer_patterns import BATCH, SEQ, VOCAB, Block, Model  # noqa: E402  (the fast record tests' model)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu", choices=["cpu"])  # fsdp2_run.torchrun passes it
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--strategy", default="FULL_SHARD", choices=["FULL_SHARD", "SHARD_GRAD_OP"])
    ap.add_argument("--orig-params", action="store_true")
    ap.add_argument("--hsdp", action="store_true")
    ap.add_argument("--mixed-precision", default="", choices=["", "bf16", "bf16-reduce"])
    ap.add_argument("--plan", default="")
    ap.add_argument("--summary", default="")
    a = ap.parse_args()
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, MixedPrecision, ShardingStrategy
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy

    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = Model()
    params = {name: sum(p.numel() for p in m.parameters()) for name, m in model.named_modules()}
    if a.plan:
        from shardscope.plan import fsdp1_wrap_policy

        policy = fsdp1_wrap_policy(model, a.plan, {Block})
    else:
        policy = ModuleWrapPolicy({Block})
    strategy, options = getattr(ShardingStrategy, a.strategy), {}
    if a.hsdp:
        from torch.distributed.device_mesh import init_device_mesh

        strategy = ShardingStrategy.HYBRID_SHARD
        options["device_mesh"] = init_device_mesh("cpu", (2, dist.get_world_size() // 2), mesh_dim_names=("replicate", "shard"))
    if a.mixed_precision:
        reduce = torch.float32 if a.mixed_precision == "bf16" else torch.bfloat16
        options["mixed_precision"] = MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=reduce)
    model = FSDP(model, auto_wrap_policy=policy, device_id=torch.device("cpu"), sharding_strategy=strategy,
                 use_orig_params=a.orig_params, **options)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for _ in range(a.steps):
        ids = torch.randint(0, VOCAB, (BATCH, SEQ))
        loss = F.cross_entropy(model(ids).flatten(0, 1), ids.flatten())
        loss.backward()
        opt.step()
        opt.zero_grad()
    if a.summary and dist.get_rank() == 0:
        with open(a.summary, "w") as f:
            json.dump({"params": params, "world": dist.get_world_size()}, f)
    model = opt = loss = None
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
