#!/usr/bin/env python3
"""The sample Llama (scripts/fsdp_train_sample.py) trained with FSDP2 around tensor / sequence
parallelism (DTensor parallelize_module) or pipeline parallelism (torch.distributed.pipelining),
for recording with `shardscope record` and comparing with `shardscope simulate --plan` (issue 15).

    torchrun --nproc_per_node=4 scripts/fsdp_tp_train.py --device cpu --tiny --tp 2            # dp 2 x tp 2
    torchrun --nproc_per_node=4 scripts/fsdp_tp_train.py --device cpu --tiny --tp 2 --sequence-parallel
    torchrun --nproc_per_node=4 scripts/fsdp_tp_train.py --device cpu --tiny --pp 2            # pp 2 x dp 2

Mesh: (pp, dp, tp), row-major over the global ranks (tp innermost, as torchtitan lays it out), so
with 4 ranks and tp 2 the TP groups are {0,1} {2,3} and the FSDP groups {0,2} {1,3}; with pp 2 the
stages are ranks {0,1} and {2,3} and each stage is fully_shard'ed over its own dp pair.

Tensor parallelism follows torchtitan's parallelize_llama: ColwiseParallel for wq/wk/wv and
w1/w3, RowwiseParallel for wo and w2, PrepareModuleInput on attention / feed_forward (so wq, wk
and wv share one input all-reduce in backward, not three), and with --tp-root parallel (the
default) the embedding rowwise and the output head colwise. --sequence-parallel adds
SequenceParallel on the norms and moves the block boundaries to Shard(1): all-gather +
reduce-scatter pairs instead of all-reduces. TP peers train on the same batch (the generator is
seeded with the dp rank). Sequence length: the model sees --seq tokens (the batch holds seq + 1
tokens; the sample trainer feeds seq - 1), so --sequence-parallel can split it evenly.

--counts-out writes, per rank, every collective and point-to-point op the step issued, counted
with a TorchDispatchMode (DTensor's functional collectives, FSDP2's and pipelining's c10d ops):
{step: {group: {op: [count, bytes]}}}, bytes as shardscope records them (an all-gather's output,
a reduce-scatter's input, an all-reduce's buffer, a send's / recv's tensor). Its blind spot: a
collective that DTensor issues inside its own op dispatch (loss_parallel()'s cross-entropy
reductions) does not reach the mode, which is off while the op it intercepted runs; the
recording (`shardscope record`) sees those too.

Every configuration trains the same model on the same data: the losses printed are the same with
--tp, --sequence-parallel, --pp and without (5.6622, 5.6368, 5.8184 for --tiny's first 3 steps).
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fsdp_train_sample as sample  # noqa: E402  (it also puts the repository's shardscope package on the path)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    sample.add_model_args(ap, sample.PRESETS["small"], batch_help="per data-parallel rank (the global batch is dp x batch)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--tp", type=int, default=1, help="tensor-parallel degree")
    ap.add_argument("--sequence-parallel", action="store_true")
    ap.add_argument("--tp-root", choices=["parallel", "replicate"], default="parallel",
                    help="parallel: embedding rowwise and output head colwise (torchtitan); replicate: only the "
                         "blocks are split (not with --sequence-parallel)")
    ap.add_argument("--loss-parallel", action="store_true",
                    help="the output head keeps its vocab shards (Shard(-1)) and the loss runs under DTensor's "
                         "loss_parallel(), as torchtitan trains: no all-gather of the logits")
    ap.add_argument("--pp", type=int, default=1, help="pipeline stages (consecutive layers, embedding first, head last)")
    ap.add_argument("--pp-schedule", choices=["1f1b", "gpipe"], default="1f1b")
    ap.add_argument("--microbatches", type=int, default=2)
    ap.add_argument("--keep-unsharded", default="",
                    help="comma-separated layer indices with reshard_after_forward=False (a plan's \"unsharded\")")
    ap.add_argument("--counts-out", default="", help="per-step collective counts and bytes by group ({rank} is replaced)")
    args = ap.parse_args(argv)
    if args.tiny:
        sample.apply_preset(args, "tiny")
    if args.sequence_parallel and args.tp_root != "parallel":
        ap.error("--sequence-parallel needs --tp-root parallel (the embedding must hand the blocks a sequence shard)")
    if args.loss_parallel and (args.tp == 1 or args.tp_root != "parallel"):
        ap.error("--loss-parallel needs --tp > 1 and --tp-root parallel")
    if args.tp > 1 and args.pp > 1:
        ap.error("--tp with --pp is not wired up (one extra mesh dimension at a time)")
    for name, n in (("--heads", args.heads), ("--dim", args.dim), ("--hidden", args.hidden), ("--vocab", args.vocab)):
        if n % args.tp:
            ap.error("%s %d is not divisible by --tp %d" % (name, n, args.tp))
    if args.sequence_parallel and args.seq % args.tp:
        ap.error("--seq %d is not divisible by --tp %d" % (args.seq, args.tp))
    try:
        args.keep = {int(i) for i in args.keep_unsharded.split(",") if i.strip()}
    except ValueError:
        ap.error("--keep-unsharded takes layer indices, e.g. 0,1 (got %r)" % args.keep_unsharded)
    if any(i < 0 or i >= args.layers for i in args.keep):
        ap.error("--keep-unsharded %s: the model has layers 0..%d" % (args.keep_unsharded, args.layers - 1))
    if args.layers < args.pp:
        ap.error("--pp %d needs at least as many layers (%d)" % (args.pp, args.layers))
    if args.pp > 1 and args.batch % args.microbatches:
        ap.error("--batch %d is not divisible by --microbatches %d" % (args.batch, args.microbatches))
    return args


def build_mesh(device, world, tp, pp):
    from torch.distributed.device_mesh import init_device_mesh

    if world % (tp * pp):
        raise SystemExit("world size %d is not divisible by tp %d x pp %d" % (world, tp, pp))
    dp = world // (tp * pp)
    shape, names = [], []
    for n, name in ((pp, "pp"), (dp, "dp"), (tp, "tp")):
        if n > 1 or name == "dp":
            shape.append(n)
            names.append(name)
    return init_device_mesh(device, tuple(shape), mesh_dim_names=tuple(names)), dp


def apply_tp(model, tp_mesh, sequence_parallel, root_parallel, loss_parallel=False):
    """torchtitan's parallelize_llama plan on the sample Llama (its own module names)."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput, RowwiseParallel,
                                                   SequenceParallel, parallelize_module)

    # The residual stream between blocks: sequence shards with SP, replicated without.
    stream = Shard(1) if sequence_parallel else Replicate()
    if root_parallel:
        root = {
            "tok_embeddings": RowwiseParallel(input_layouts=Replicate(), output_layouts=stream),
            # Loss parallel: the logits stay vocab shards, a DTensor for loss_parallel()'s cross-entropy.
            "output": ColwiseParallel(input_layouts=stream, output_layouts=Shard(-1) if loss_parallel else Replicate(),
                                      use_local_output=not loss_parallel),
        }
        if sequence_parallel:
            root["norm"] = SequenceParallel()
        parallelize_module(model, tp_mesh, root)
    for layer in model.layers:
        plan = {
            "attention": PrepareModuleInput(input_layouts=(stream,), desired_input_layouts=(Replicate(),)),
            "attention.wq": ColwiseParallel(),
            "attention.wk": ColwiseParallel(),
            "attention.wv": ColwiseParallel(),
            "attention.wo": RowwiseParallel(output_layouts=stream),
            "feed_forward": PrepareModuleInput(input_layouts=(stream,), desired_input_layouts=(Replicate(),)),
            "feed_forward.w1": ColwiseParallel(),
            "feed_forward.w2": RowwiseParallel(output_layouts=stream),
            "feed_forward.w3": ColwiseParallel(),
        }
        if sequence_parallel:
            plan["attention_norm"] = SequenceParallel()
            plan["ffn_norm"] = SequenceParallel()
        parallelize_module(layer, tp_mesh, plan)


def stage_layers(layers, pp, stage):
    """Consecutive layers of one stage: as even as the count allows, the first stages get the extra ones."""
    per, extra = divmod(layers, pp)
    start = stage * per + min(stage, extra)
    return range(start, start + per + (1 if stage < extra else 0))


def keep_stage(model, pp, stage):
    """The stage's part of the full model, in place: the other layers, and the embedding (not the
    first stage) or the final norm and head (not the last), become nn.Identity, so the module
    names (layers.3, ...) stay those of the full model and Llama.forward runs unchanged."""
    mine = set(stage_layers(len(model.layers), pp, stage))
    for i in range(len(model.layers)):
        if i not in mine:
            model.layers[i] = nn.Identity()
    if stage > 0:
        model.tok_embeddings = nn.Identity()
    if stage < pp - 1:
        model.norm = nn.Identity()
        model.output = nn.Identity()
    return model


class CollectiveCounter:
    """Counts the collectives and point-to-point ops that reach the dispatcher, per group (its
    sorted global ranks), as {op: [count, bytes]}. A TorchDispatchMode sees DTensor's functional
    collectives (_c10d_functional.*) and the c10d ops that FSDP2 and pipelining issue alike."""

    FUNCTIONAL = {"all_reduce": "all_reduce", "all_gather_into_tensor": "all_gather",
                  "reduce_scatter_tensor": "reduce_scatter", "all_to_all_single": "all_to_all"}
    C10D = {"allreduce_": "all_reduce", "_allgather_base_": "all_gather", "allgather_": "all_gather",
            "_reduce_scatter_base_": "reduce_scatter", "reduce_scatter_": "reduce_scatter",
            "allgather_into_tensor_coalesced_": "all_gather", "reduce_scatter_tensor_coalesced_": "reduce_scatter",
            "alltoall_base_": "all_to_all", "send": "send", "recv_": "recv", "broadcast_": "broadcast"}

    def __init__(self):
        from torch.utils._python_dispatch import TorchDispatchMode

        counter = self
        self.counts = {}

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                counter.note(func, args, kwargs or {})
                return func(*args, **(kwargs or {}))

        self.mode = Mode()

    @staticmethod
    def _nbytes(t):
        if isinstance(t, (list, tuple)):
            return sum(CollectiveCounter._nbytes(x) for x in t)
        return t.numel() * t.element_size() if isinstance(t, torch.Tensor) else 0

    @staticmethod
    def _group_key(pg):
        try:
            if isinstance(pg, str):  # functional collectives name their group
                pg = dist.distributed_c10d._resolve_process_group(pg)
            elif isinstance(pg, torch.ScriptObject):  # c10d ops carry it boxed
                pg = dist.ProcessGroup.unbox(pg)
            return ",".join(str(r) for r in sorted(dist.get_process_group_ranks(pg)))
        except Exception:
            return "?"

    def note(self, func, args, kwargs):
        ns = func.namespace
        name = func._schema.name.split("::", 1)[-1]
        if ns == "_c10d_functional" and name in self.FUNCTIONAL:
            op, group = self.FUNCTIONAL[name], args[-1]
            if op == "all_gather":  # output = input x group size
                nbytes = self._nbytes(args[0]) * int(args[1])
            else:
                nbytes = self._nbytes(args[0])
        elif ns == "c10d" and name in self.C10D:
            op = self.C10D[name]
            group = next((a for a in args if isinstance(a, torch.ScriptObject) and "ProcessGroup" in str(a)), None)
            if op == "all_gather" and name != "allgather_":  # (output, input, ...): the output
                nbytes = self._nbytes(args[0])
            elif op == "reduce_scatter" and name != "reduce_scatter_":  # (output, input, ...): the input
                nbytes = self._nbytes(args[1])
            else:
                nbytes = self._nbytes(args[0])
        else:
            return
        entry = self.counts.setdefault(self._group_key(group), {}).setdefault(op, [0, 0])
        entry[0] += 1
        entry[1] += nbytes

    def __enter__(self):
        self.counts = {}
        self.mode.__enter__()
        return self

    def __exit__(self, *exc):
        self.mode.__exit__(*exc)


def main(argv=None):
    args = parse_args(argv)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    device = torch.device(args.device if args.device == "cpu" else "cuda:%d" % int(os.environ.get("LOCAL_RANK", "0")))
    if args.device == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group("gloo" if args.device == "cpu" else "nccl")
    mesh, dp = build_mesh(args.device, world, args.tp, args.pp)
    dp_rank = mesh["dp"].get_local_rank()
    stage = mesh["pp"].get_local_rank() if args.pp > 1 else 0

    torch.manual_seed(0)  # every rank builds the same full model; TP / FSDP / PP keep their parts
    model = sample.Llama(args.vocab, args.dim, args.layers, args.heads, args.hidden).to(device)
    if args.pp > 1:
        keep_stage(model, args.pp, stage)
    if args.tp > 1:
        apply_tp(model, mesh["tp"], args.sequence_parallel, args.tp_root == "parallel", args.loss_parallel)
    from torch.distributed.fsdp import fully_shard

    for i, layer in enumerate(model.layers):
        if any(True for _ in layer.parameters()):  # a PP stage's foreign layers are parameterless Identity
            fully_shard(layer, mesh=mesh["dp"], reshard_after_forward=i not in args.keep)
    fully_shard(model, mesh=mesh["dp"])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    schedule = None
    if args.pp > 1:
        from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

        def loss_fn(logits, target):
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), target.reshape(-1))

        pstage = PipelineStage(model, stage, args.pp, device, group=mesh["pp"].get_group())
        cls = Schedule1F1B if args.pp_schedule == "1f1b" else ScheduleGPipe
        schedule = cls(pstage, n_microbatches=args.microbatches, loss_fn=loss_fn)

    counter = CollectiveCounter() if args.counts_out else None
    per_step = {}
    gen = torch.Generator().manual_seed(dp_rank)
    for step in range(args.steps):
        t0 = time.perf_counter()
        tokens = torch.randint(0, args.vocab, (args.batch, args.seq + 1), generator=gen).to(device)
        inp, target = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
        tracker = None
        if step == args.mem_tracker_step:
            # PyTorch's tracker without its hold on each unit's last unsharded gradient (shardscope.mem_tracker).
            from shardscope.mem_tracker import FSDPMemTracker

            tracker = FSDPMemTracker(model, opt)
            tracker.track_inputs((inp,))
            tracker.__enter__()
        elif counter is not None:
            counter.__enter__()
        if schedule is None:
            logits = model(inp)
            if args.loss_parallel:
                from torch.distributed.tensor.parallel import loss_parallel

                with loss_parallel():  # the backward too: it runs inside the context, as documented
                    loss = F.cross_entropy(logits.flatten(0, 1), target.reshape(-1))
                    loss.backward()
            else:
                loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), target.reshape(-1))
                loss.backward()
        else:
            losses = []
            if stage == 0:
                schedule.step(inp)
            elif stage == args.pp - 1:
                schedule.step(target=target, losses=losses)
            else:
                schedule.step()
            loss = torch.stack(losses).mean() if losses else None
        opt.step()
        if tracker is not None:
            tracker.__exit__(None, None, None)
            sample.write_tracker_peak(tracker, args.mem_tracker_out.replace("{rank}", str(rank)), step, model)
        elif counter is not None:
            counter.__exit__(None, None, None)
            per_step[step] = counter.counts
        opt.zero_grad(set_to_none=True)
        if loss is not None and (rank == 0 or (args.pp > 1 and stage == args.pp - 1 and dp_rank == 0)):
            print("rank %d step %d loss %.4f %.1f ms" % (rank, step, loss.item(), 1000 * (time.perf_counter() - t0)),
                  flush=True)
    if counter is not None:
        with open(args.counts_out.replace("{rank}", str(rank)), "w") as f:
            json.dump({"rank": rank, "mesh": {n: mesh[n].size() for n in mesh.mesh_dim_names},
                       "groups": {n: ",".join(str(r) for r in sorted(dist.get_process_group_ranks(mesh[n].get_group())))
                                  for n in mesh.mesh_dim_names},
                       "steps": per_step}, f, indent=1)
    model = opt = loss = logits = tracker = None  # what holds the model and its last graph
    sample.close_process_group()


if __name__ == "__main__":
    main()
