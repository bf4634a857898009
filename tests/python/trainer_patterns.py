#!/usr/bin/env python3
"""What real trainers (torchtitan, Lightning) do that our own sample does not, in a few lines, for
the fast tests of `record` (test_record_trainer_patterns_cpu.py). CPU, gloo, torchrun.

* the model is built on the meta device, sharded, then materialised with `to_empty()` and
  initialised (torchtitan's and every large-model FSDP2 program's order);
* one all-gather during initialisation, before the first step (a full_tensor() of a weight);
* the final norm and the head are ONE FSDP unit (`fully_shard([model.norm, model.head])`, as
  torchtitan does), the embedding its own, each block its own;
* --compile: each block compiled in place with fullgraph=True (`block.compile(...)`, torchtitan's
  per-block compile; backend aot_eager keeps the test fast: Dynamo traces as it would for Inductor);
* --own-profiler DIR: the job runs its own torch.profiler over steps 1-2 and writes its trace in DIR;
* --hsdp: HSDP, every fully_shard over a (replicate 2, shard world / 2) mesh;
* --mixed-precision bf16 | bf16-reduce: FSDP2's MixedPrecisionPolicy (the production default):
  parameters gathered in bf16, gradients reduced in fp32 (`bf16`) or in bf16 (`bf16-reduce`);
* --summary FILE: rank 0 writes what the program knows: parameters per unit, world size.
"""
import argparse
import gc
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

VOCAB, DIM, LAYERS, HIDDEN, BATCH, SEQ = 128, 32, 2, 64, 2, 16


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(DIM)
        self.w1 = nn.Linear(DIM, HIDDEN)
        self.w2 = nn.Linear(HIDDEN, DIM)

    def forward(self, x):
        return x + self.w2(F.gelu(self.w1(self.norm(x))))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, DIM)
        self.layers = nn.ModuleList(Block() for _ in range(LAYERS))
        self.norm = nn.LayerNorm(DIM)
        self.head = nn.Linear(DIM, VOCAB, bias=False)

    def forward(self, ids):
        x = self.tok(ids)
        for b in self.layers:
            x = b(x)
        return self.head(self.norm(x))


def unit_params(model):
    count = lambda *ms: sum(p.numel() for m in ms for p in m.parameters())
    units = {"tok": count(model.tok), "norm+head": count(model.norm, model.head)}
    units.update({"layers.%d" % i: count(b) for i, b in enumerate(model.layers)})
    return units


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu", choices=["cpu"])  # fsdp2_run.torchrun passes it
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--own-profiler", default="")
    ap.add_argument("--summary", default="")
    ap.add_argument("--exit-code", type=int, default=0)
    ap.add_argument("--hsdp", action="store_true")
    ap.add_argument("--mixed-precision", default="", choices=["", "bf16", "bf16-reduce"])
    # Gradient accumulation: micro-batches per optimizer step, and with --no-sync the gradients
    # reduced on the last one only (set_requires_gradient_sync(False) on the others).
    ap.add_argument("--micro-batches", type=int, default=1)
    ap.add_argument("--no-sync", action="store_true")
    a = ap.parse_args()
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    dist.init_process_group("gloo")
    shard_kwargs = {}  # the same mesh and mixed precision for every fully_shard
    if a.hsdp:
        from torch.distributed.device_mesh import init_device_mesh

        shard_kwargs["mesh"] = init_device_mesh("cpu", (2, dist.get_world_size() // 2), mesh_dim_names=("replicate", "shard"))
    if a.mixed_precision:
        reduce = torch.float32 if a.mixed_precision == "bf16" else torch.bfloat16
        shard_kwargs["mp_policy"] = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=reduce)
    torch.manual_seed(0)
    with torch.device("meta"):
        model = Model()
    units = unit_params(model)
    for b in model.layers:
        if a.compile:
            b.compile(backend="aot_eager", fullgraph=True)
        fully_shard(b, **shard_kwargs)
    fully_shard(model.tok, **shard_kwargs)
    fully_shard([model.norm, model.head], **shard_kwargs)
    fully_shard(model, **shard_kwargs)
    model.to_empty(device="cpu")  # what `record` broke: the parameters are swapped in place
    for m in model.modules():
        if hasattr(m, "reset_parameters"):
            m.reset_parameters()
    # Initialisation that gathers a weight before training (torchtitan's init does): collectives
    # outside every step, which per-step figures must leave out.
    with torch.no_grad():
        model.tok.weight.full_tensor()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    prof = None
    for step in range(a.steps):
        if a.own_profiler and step == 1:
            prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
            prof.start()
        for micro in range(a.micro_batches):
            if a.no_sync:
                model.set_requires_gradient_sync(micro == a.micro_batches - 1)
            ids = torch.randint(0, VOCAB, (BATCH, SEQ))
            loss = F.cross_entropy(model(ids).flatten(0, 1), ids.flatten()) / a.micro_batches
            loss.backward()
        opt.step()
        opt.zero_grad()
        if prof is not None and step == 2:
            prof.stop()
            prof.export_chrome_trace(os.path.join(a.own_profiler, "job_rank%d.json" % dist.get_rank()))
            prof = None
    if a.summary and dist.get_rank() == 0:
        with open(a.summary, "w") as f:
            json.dump({"units": units, "world": dist.get_world_size()}, f)
    model = opt = loss = None  # as fsdp_train_sample.close_process_group: nothing left for exit to free
    gc.collect()
    dist.destroy_process_group()
    raise SystemExit(a.exit_code)


if __name__ == "__main__":
    main()
