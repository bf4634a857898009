#!/usr/bin/env python3
"""A small Llama-style decoder trained with FSDP2, for recording with `shardscope record`.

GPU (what the collector is for; H100/H200, PyTorch >= 2.6, NCCL):
    shardscope record -o llama.ssdb -- torchrun --nproc_per_node=2 scripts/fsdp_train_sample.py --steps 8
Baselines for the checks in docs/collector.md (same loop, no collector):
    torchrun --nproc_per_node=2 scripts/fsdp_train_sample.py --steps 8 --summary base.json
    torchrun --nproc_per_node=2 scripts/fsdp_train_sample.py --steps 8 --torch-profiler-kernels --summary kin.json
CPU (gloo; tests): --device cpu --tiny. Without FSDP2 (torch < 2.4, e.g. Debian's 1.13) the
gradients are all-reduced by hand instead, so collectives still happen.

Default size: dim 1024, 16 layers, vocab 32000, SwiGLU 2816 -> about 270M parameters
(540 MB in bf16). Each decoder layer is one FSDP unit; the root holds embeddings and head.
"""
import argparse
import contextlib
import json
import math
import os
import resource
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# The repository's shardscope package (plans, the memory tracker), after any on PYTHONPATH.
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "profiler", "python"))


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotary(x, positions):
    # x: (batch, heads, seq, head_dim)
    half = x.shape[-1] // 2
    freqs = 1.0 / (10000 ** (torch.arange(half, device=x.device, dtype=torch.float32) / half))
    angles = positions[:, None].float() * freqs[None, :]
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, dim, bias=False)
        self.wv = nn.Linear(dim, dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        b, s, d = x.shape
        hd = d // self.heads
        # -1 heads: under tensor parallelism (scripts/fsdp_tp_train.py) wq/wk/wv are column shards
        # whose outputs hold this rank's heads only, as torchtitan's Attention does.
        q = self.wq(x).view(b, s, -1, hd).transpose(1, 2)
        k = self.wk(x).view(b, s, -1, hd).transpose(1, 2)
        v = self.wv(x).view(b, s, -1, hd).transpose(1, 2)
        pos = torch.arange(s, device=x.device)
        q, k = rotary(q, pos), rotary(k, pos)
        if hasattr(F, "scaled_dot_product_attention"):
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # torch < 2.0
            scores = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
            mask = torch.ones(s, s, device=x.device, dtype=torch.bool).triu(1)
            o = scores.masked_fill(mask, float("-inf")).softmax(-1) @ v
        return self.wo(o.transpose(1, 2).reshape(b, s, -1))


class FeedForward(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class DecoderLayer(nn.Module):
    def __init__(self, dim, heads, hidden):
        super().__init__()
        self.attention_norm = RMSNorm(dim)
        self.attention = Attention(dim, heads)
        self.ffn_norm = RMSNorm(dim)
        self.feed_forward = FeedForward(dim, hidden)

    def forward(self, x):
        x = x + self.attention(self.attention_norm(x))
        return x + self.feed_forward(self.ffn_norm(x))


class Llama(nn.Module):
    def __init__(self, vocab, dim, layers, heads, hidden, checkpointing=False):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList([DecoderLayer(dim, heads, hidden) for _ in range(layers)])
        self.norm = RMSNorm(dim)
        self.output = nn.Linear(dim, vocab, bias=False)
        self.checkpointing = checkpointing

    def forward(self, tokens):
        x = self.tok_embeddings(tokens)
        for layer in self.layers:
            if self.checkpointing:
                import torch.utils.checkpoint as cp

                x = cp.checkpoint(layer, x, use_reentrant=False)
            else:
                x = layer(x)
        return self.output(self.norm(x))


class MlpBlock(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.norm(x))))


class ResidualMlp(nn.Module):
    """A second model shape for accuracy runs: residual MLP blocks (no attention, no embedding)."""

    def __init__(self, dim, layers, hidden):
        super().__init__()
        self.inp = nn.Linear(dim, dim)
        self.layers = nn.ModuleList([MlpBlock(dim, hidden) for _ in range(layers)])
        self.head = nn.Linear(dim, dim)

    def forward(self, x):
        x = self.inp(x)
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


def fsdp2():
    for path in ("torch.distributed.fsdp", "torch.distributed._composable.fsdp"):
        try:
            mod = __import__(path, fromlist=["fully_shard"])
            if hasattr(mod, "fully_shard"):
                return mod
        except Exception:
            continue
    return None


def bf16_params(args, device):
    """Mixed precision (bf16 parameters gathered, fp32 gradients reduced): on a GPU by default, on
    CPU with --mixed-precision bf16."""
    return args.mixed_precision == "bf16" or (args.mixed_precision == "auto" and device == "cuda")


def wrap_fsdp1(model, args, device, keep):
    """FSDP1 (FullyShardedDataParallel): each block a unit, FULL_SHARD; blocks in `keep` or named by
    --plan SHARD_GRAD_OP (FSDP1's reshard_after_forward=False), through ShardScope's wrap policy."""
    from torch.distributed.fsdp import FullyShardedDataParallel, MixedPrecision
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy

    block = type(model.layers[0])
    plan = {"unsharded": ["layers.%d" % i for i in sorted(keep)]}
    if args.plan:
        from shardscope.plan import load_plan

        plan = dict(load_plan(args.plan))
        plan["unsharded"] = sorted(set(plan.get("unsharded", [])) | {"layers.%d" % i for i in keep})
    if plan.get("unsharded") or plan.get("reshard_after_forward"):
        from shardscope.plan import fsdp1_wrap_policy

        policy = fsdp1_wrap_policy(model, plan, {block})
    else:
        policy = ModuleWrapPolicy({block})
    kwargs = {}
    if bf16_params(args, device):
        kwargs["mixed_precision"] = MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    return FullyShardedDataParallel(model, auto_wrap_policy=policy, device_id=torch.device(device), **kwargs)


def _snapshot_bytes(snapshot):
    return {str(dev): {getattr(k, "value", str(k)): int(v) for k, v in cats.items()} for dev, cats in snapshot.items()}


def write_tracker_peak(tracker, path, step, model=None):
    """FSDPMemTracker's peak snapshot of this rank's device, bytes per category (its own names), and,
    with the model, its snapshots at the FSDP units' hook points ("modules": {fqn: {state: [one per
    call]}}, states such as "After Pre-Forward"): points the program defines, unlike the peak, whose
    moment can move with thread timing between two nearly equal levels."""
    peak = tracker.get_tracker_snapshot("peak")
    out = {"step": step, "devices": _snapshot_bytes(peak)}
    if model is not None:
        names = {id(m): n for n, m in model.named_modules()}
        out["modules"] = {}
        for mod, stats in list(tracker.memory_tracking.items()):
            if id(mod) not in names or not getattr(stats, "snapshots", None):
                continue
            out["modules"][names[id(mod)]] = {getattr(state, "value", str(state)): [_snapshot_bytes(s) for s in snaps]
                                              for state, snaps in stats.snapshots.items()}
    if path:
        with open(path, "w") as f:
            json.dump(out, f, indent=1)


# Model sizes: (dim, layers, heads, hidden, vocab, seq, batch). "tiny" for tests, "small" for the
# CPU accuracy runs; the default is this script's GPU-sized model.
MODEL_FIELDS = ("dim", "layers", "heads", "hidden", "vocab", "seq", "batch")
PRESETS = {
    "tiny": (64, 2, 4, 128, 256, 32, 2),
    "small": (256, 4, 4, 688, 2048, 128, 4),
    "default": (1024, 16, 16, 2816, 32000, 1024, 4),
}


def add_model_args(ap, defaults, batch_help=None):
    """--tiny, the model-size options with `defaults` (a PRESETS entry) and the FSDPMemTracker options."""
    ap.add_argument("--tiny", action="store_true", help="dim 64, 2 layers, 4 heads, hidden 128, vocab 256, seq 32, batch 2 (tests)")
    for name, value in zip(MODEL_FIELDS, defaults):
        ap.add_argument("--" + name, type=int, default=value, help=batch_help if name == "batch" else None)
    ap.add_argument("--mem-tracker-step", type=int, default=-1,
                    help="run this step under PyTorch's FSDPMemTracker (FSDP2 only; every micro-batch of it under "
                         "--micro-batches) and write its peak to --mem-tracker-out")
    ap.add_argument("--mem-tracker-out", default="", help="JSON file for --mem-tracker-step (one per rank: {rank} is replaced)")


def apply_preset(args, name):
    for field, value in zip(MODEL_FIELDS, PRESETS[name]):
        setattr(args, field, value)


def resident_bytes():
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def close_process_group():
    """Nothing of the model left before the group goes (the caller drops its references first):
    collected while the interpreter is whole, a collective's work that gloo's threads still hold
    (tensors with Python references) is not freed at interpreter exit, which aborted 1 run in 16-20
    here ("terminate called without an active exception", torch 2.15, with or without ShardScope);
    0 in 24 after. No barrier: it would be one more collective in every recording."""
    import gc

    import torch.distributed as dist

    gc.collect()
    dist.destroy_process_group()


class PlanSwitch:
    """Switches a plan's unshard set on and off at run time (`--alternate-plan`), so that one
    unrecorded process times the job without the plan (A) and with it (B) in alternating blocks:
    this VM's speed drifts up to 2x between processes, which separate A and B runs cannot tell from
    the plan's effect. Blocks follow A B B A (repeated), which also cancels a drift that is linear
    within the run. The planned units' `reshard_after_forward` is set in place
    (`FSDPModule.set_reshard_after_forward`, as shardscope.apply_plan does on a sharded model); a
    plan that checkpoints, offloads or keeps a 1/k slice changes the model's structure, and is refused."""

    def __init__(self, model, plan_path, as_sharded, fs):
        from shardscope.plan import load_plan, planned_checkpointing, planned_policies

        plan = load_plan(plan_path)
        if planned_checkpointing(plan) or plan.get("offload", "none") != "none":
            raise SystemExit("--alternate-plan: %s checkpoints or offloads; only an unshard set can be switched at run "
                             "time" % plan_path)
        self.units = []  # (module, reshard_after_forward in A, in B)
        for name, policy in planned_policies(plan):
            module = model.get_submodule(name) if name else None
            if module is None or not isinstance(module, fs.FSDPModule) or not isinstance(policy, bool):
                raise SystemExit("--alternate-plan: %r is not a non-root FSDP unit kept unsharded or resharded (%r)"
                                 % (name, policy))
            self.units.append((module, as_sharded.get(name, True), policy))
        self.on = False

    def set(self, on):
        if on != self.on:
            for module, base, planned in self.units:
                module.set_reshard_after_forward(planned if on else base, recurse=False)
            self.on = on

    @staticmethod
    def planned_at(step, warmup, every):
        """Whether `step` runs with the plan: A during the warm-up, then blocks of `every` steps A B B A."""
        return step >= warmup and ((step - warmup) // every) % 4 in (1, 2)


class ModelSwitch:
    """`--alternate-plan` for a plan that FSDP2 fixes when it shards (buckets: fully_shard([m1,
    m2])): B is a second model with the same initial weights, sharded with the plan; A and B steps
    alternate between the two in the same blocks as PlanSwitch's. One optimizer holds both models'
    parameters (it skips those without gradients), so every iteration steps the same optimizer, as
    the job without the switch does."""

    def __init__(self, model_a, model_b, shard):
        shard(model_b)
        self.models = (model_a, model_b)
        self.on = False

    def parameters(self):
        return [p for m in self.models for p in m.parameters()]

    def set(self, on):
        self.on = on

    def current(self):
        return self.models[1] if self.on else self.models[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    add_model_args(ap, PRESETS["default"])
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=2, help="steps excluded from steps/s")
    ap.add_argument("--checkpointing", action="store_true", help="activation checkpointing per layer")
    ap.add_argument("--keep-unsharded", default="", help="comma-separated layer indices with reshard_after_forward=False")
    ap.add_argument("--plan", default="", help="a ShardScope plan (shardscope plan -o plan.json), applied with "
                    "shardscope.apply_plan before the remaining layers and the root are sharded")
    ap.add_argument("--alternate-plan", default="", metavar="PLAN",
                    help="switch this plan's unshard set on and off between blocks of --alternate-every steps (A B B A "
                    "after the warm-up): A and B timed in one process (FSDP2; scripts/closed_loop.py --alternate)")
    ap.add_argument("--alternate-every", type=int, default=3, metavar="K", help="steps per block of --alternate-plan")
    ap.add_argument("--alternate-model", action="store_true",
                    help="--alternate-plan: B is a second model even where the plan could be switched in place (what a "
                         "plan with buckets needs); with an empty plan, a control of the two-model switch itself")
    ap.add_argument("--micro-batches", type=int, default=1, metavar="N",
                    help="gradient accumulation: N forward-backward passes of --batch sequences per optimizer step")
    ap.add_argument("--no-sync", action="store_true",
                    help="with --micro-batches: reduce the gradients on the last micro-batch only (FSDP2's "
                         "set_requires_gradient_sync(False) on the others; FSDP1's no_sync())")
    ap.add_argument("--no-reshard-after-backward", action="store_true",
                    help="with --micro-batches: parameters stay unsharded from one micro-batch's backward to the next "
                         "forward (FSDP2's set_reshard_after_backward(False) on all but the last)")
    ap.add_argument("--explicit-prefetch", type=int, default=0, metavar="N",
                    help="FSDP2: each layer prefetches the next N in forward and the N before it in backward, and the "
                    "model is unsharded before each step's forward (PyTorch's FSDP2 example, --explicit-prefetching)")
    ap.add_argument("--small", action="store_true", help="dim 256, 4 layers, seq 128: CPU accuracy runs")
    ap.add_argument("--pin-cores", action="store_true",
                    help="CPU runs: pin each rank (and its gloo threads) to core LOCAL_RANK mod cores; steadier step times")
    ap.add_argument("--arch", choices=["llama", "mlp"], default="llama",
                    help="llama: the decoder above; mlp: residual MLP blocks (dim, layers, hidden; batch x seq rows)")
    ap.add_argument("--no-fsdp", action="store_true")
    ap.add_argument("--fsdp1", action="store_true",
                    help="shard with FSDP1 (FullyShardedDataParallel, a unit per block) instead of FSDP2; --plan goes "
                         "in as shardscope.plan.fsdp1_wrap_policy")
    ap.add_argument("--mixed-precision", choices=["auto", "bf16", "off"], default="auto",
                    help="bf16: FSDP's mixed precision (bf16 parameters, fp32 reductions); auto: on a GPU only")
    ap.add_argument("--torch-profiler-kernels", action="store_true",
                    help="count GPU kernels of the timed steps with torch.profiler (not under shardscope record)")
    ap.add_argument("--torch-profiler-trace", default="",
                    help="the job's own torch.profiler over the timed steps (CPU + CUDA), its trace written here "
                         "(rank 0; {rank} is replaced): a job that profiles itself while recorded")
    ap.add_argument("--torch-profiler-window", default="", metavar="A:B[:cpu]",
                    help="the job's own torch.profiler on steps A..B-1 only (CUDA activity; with ':cpu' CPU too), "
                         "so its cost is the steps inside against the steps outside in one process (peer cost)")
    ap.add_argument("--eval-every", type=int, default=0, metavar="N",
                    help="after every N-th step, an evaluation: --eval-batches forwards under no_grad, the model in "
                         "eval mode (not in the step's time: it runs after the step's clock stops)")
    ap.add_argument("--eval-batches", type=int, default=4, metavar="M", help="batches of each --eval-every evaluation")
    ap.add_argument("--summary", default="", help="write a JSON summary (rank 0)")
    ap.add_argument("--exit-code", type=int, default=0, help="exit with this code (launcher tests)")
    ap.add_argument("--sleep-per-step", type=float, default=0.0, help="seconds to sleep per step (signal tests)")
    args = ap.parse_args()
    if args.tiny:
        apply_preset(args, "tiny")
    if args.small:
        apply_preset(args, "small")
    if args.micro_batches < 1:
        ap.error("--micro-batches must be at least 1")
    if args.no_sync and (args.micro_batches < 2 or args.no_fsdp):
        ap.error("--no-sync needs --micro-batches N > 1 and FSDP (FSDP2, or --fsdp1)")
    if args.no_reshard_after_backward and (args.micro_batches < 2 or args.no_fsdp or args.fsdp1):
        ap.error("--no-reshard-after-backward needs --micro-batches N > 1 and FSDP2")

    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    distributed = world > 1 or "RANK" in os.environ
    if args.pin_cores and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {local_rank % os.cpu_count()})  # threads started later inherit it
    if device == "cuda":
        torch.cuda.set_device(local_rank)
    if distributed:
        import torch.distributed as dist

        dist.init_process_group("nccl" if device == "cuda" else "gloo")

    def build_model():
        torch.manual_seed(0)
        if args.arch == "mlp":
            return ResidualMlp(args.dim, args.layers, args.hidden).to(device)
        return Llama(args.vocab, args.dim, args.layers, args.heads, args.hidden, args.checkpointing).to(device)

    model = build_model()
    n_params = sum(p.numel() for p in model.parameters())
    keep = {int(i) for i in args.keep_unsharded.split(",") if i.strip()}

    fs = None if args.no_fsdp or args.fsdp1 or not distributed else fsdp2()
    if args.fsdp1 and distributed and not args.no_fsdp:
        model = wrap_fsdp1(model, args, device, keep)
    elif fs is not None:
        from torch.distributed.device_mesh import init_device_mesh

        mesh = init_device_mesh(device, (world,))

        def fsdp2_shard(model, plan):
            kwargs = {"mesh": mesh}
            if bf16_params(args, device) and hasattr(fs, "MixedPrecisionPolicy"):
                kwargs["mp_policy"] = fs.MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
            if plan:  # the planned modules first (innermost first), exactly as a user would
                import shardscope
                from shardscope.plan import plan_fully_shard_kwargs

                kwargs.update(plan_fully_shard_kwargs(plan))  # e.g. CPUOffloadPolicy: every unit the same
                shardscope.apply_plan(model, plan, **kwargs)
            for i, layer in enumerate(model.layers):
                if not isinstance(layer, fs.FSDPModule):
                    fs.fully_shard(layer, reshard_after_forward=i not in keep, **kwargs)
            fs.fully_shard(model, **kwargs)

        fsdp2_shard(model, args.plan)
        if args.explicit_prefetch:
            n, layers = args.explicit_prefetch, list(model.layers)
            for i, layer in enumerate(layers):
                layer.set_modules_to_forward_prefetch(layers[i + 1:i + 1 + n])
                layer.set_modules_to_backward_prefetch(layers[max(0, i - n):i][::-1])
    elif distributed and rank == 0 and not args.fsdp1:
        print("FSDP2 unavailable or disabled (torch %s): gradients all-reduced by hand" % torch.__version__)

    switch = None
    if args.alternate_plan:
        if fs is None or args.fsdp1:
            raise SystemExit("--alternate-plan needs an FSDP2 job (distributed, fully_shard)")
        if args.plan:  # A is the job as sharded by --keep-unsharded; a second plan would blur which
            raise SystemExit("--alternate-plan switches from the job without --plan; give one of them")
        if args.alternate_every < 1:
            raise SystemExit("--alternate-every: at least 1 step a block")
        from shardscope.plan import load_plan, planned_buckets

        if args.alternate_model or planned_buckets(load_plan(args.alternate_plan)):
            # Buckets are fixed when FSDP2 shards: B is a second model, built and sharded with the plan.
            switch = ModelSwitch(model, build_model(), lambda m: fsdp2_shard(m, args.alternate_plan))
        else:
            as_sharded = {"layers.%d" % i: i not in keep for i in range(len(model.layers))}  # reshard_after_forward in A
            switch = PlanSwitch(model, args.alternate_plan, as_sharded, fs)
    step_config = []  # per step: "A" (as sharded) or "B" (--alternate-plan's unshard set)
    opt = torch.optim.AdamW(switch.parameters() if isinstance(switch, ModelSwitch) else model.parameters(), lr=1e-4)
    gen = torch.Generator().manual_seed(rank)
    eval_gen = torch.Generator().manual_seed(1000 + rank)  # the training batches stay those of a job without evaluation

    def evaluate():
        model.eval()
        with torch.no_grad():
            for _ in range(args.eval_batches):
                if args.arch == "mlp":
                    model(torch.randn(args.batch * args.seq, args.dim, generator=eval_gen).to(device))
                else:
                    model(torch.randint(0, args.vocab, (args.batch, args.seq - 1), generator=eval_gen).to(device))
        model.train()

    prof = None
    times = []
    cpu_times = []
    rss_mb = []  # resident set after each step: what a profiler's in-memory trace adds to the host
    minor_faults = []  # pages first touched during each step (a growing heap hands tensors fresh pages)
    def start_profiler(cpu):
        activities = [torch.profiler.ProfilerActivity.CUDA] if device == "cuda" else []
        if cpu:
            activities.append(torch.profiler.ProfilerActivity.CPU)
        p = torch.profiler.profile(activities=activities)
        p.__enter__()
        return p

    window = args.torch_profiler_window.split(":") if args.torch_profiler_window else None
    first, stop = (int(window[0]), int(window[1])) if window else (-1, -1)
    for step in range(args.steps):
        if step == first:  # started and stopped between steps: its set-up and processing are not timed
            prof = start_profiler(cpu=window[2:] == ["cpu"] or device != "cuda")
        elif step == stop and prof is not None:
            prof.__exit__(None, None, None)
            prof = None
        if (args.torch_profiler_kernels or args.torch_profiler_trace) and step == args.warmup:
            prof = start_profiler(cpu=bool(args.torch_profiler_trace))
        if switch is not None:  # between steps, untimed
            switch.set(PlanSwitch.planned_at(step, args.warmup, args.alternate_every))
            if isinstance(switch, ModelSwitch):
                model = switch.current()
        step_config.append("B" if switch is not None and switch.on else "A")
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t0 = time.perf_counter()
        c0 = time.process_time()
        tracker = None
        for micro in range(args.micro_batches):  # gradient accumulation: a forward and backward each
            last = micro == args.micro_batches - 1
            if args.no_sync and fs is not None:
                model.set_requires_gradient_sync(last)
            if args.no_reshard_after_backward and fs is not None:
                model.set_reshard_after_backward(last)
            if args.explicit_prefetch and fs is not None and micro == 0:
                model.unshard()  # the root's all-gather ahead of its forward, as the example does
            if args.arch == "mlp":
                tokens = torch.randn(args.batch * args.seq, args.dim, generator=gen).to(device)
            else:
                tokens = torch.randint(0, args.vocab, (args.batch, args.seq), generator=gen).to(device)
            if step == args.mem_tracker_step and fs is not None and micro == 0:
                # PyTorch's tracker with a plan's buckets kept grouped and no gradient held past its
                # reduce-scatter (shardscope.mem_tracker).
                from shardscope.mem_tracker import FSDPMemTracker

                tracker = FSDPMemTracker(model, opt)
                tracker.track_inputs((tokens,))
                tracker.__enter__()
            elif tracker is not None:
                # It refuses a module called again while it tracks (NotImplementedError: "multiple
                # iterative calls"): each later pass starts its per-module stats afresh; the peak
                # over the step is kept. Tracked from the last pass only, it missed what the earlier
                # ones left (FSDP2's unsharded gradients accumulated without sync: 49 MiB of an mlp).
                tracker.reset_mod_stats()
            # FSDP1 skips the reduction inside no_sync() (and keeps the gradients unsharded).
            sync = model.no_sync() if args.no_sync and args.fsdp1 and not last else contextlib.nullcontext()
            with sync:
                if args.arch == "mlp":
                    loss = model(tokens).float().pow(2).mean()
                else:
                    logits = model(tokens[:, :-1])
                    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), tokens[:, 1:].reshape(-1))
                (loss / args.micro_batches).backward()
        if distributed and fs is None and not args.fsdp1:
            import torch.distributed as dist

            for p in model.parameters():
                if p.grad is not None:
                    dist.all_reduce(p.grad)
                    p.grad /= world
        opt.step()
        if tracker is not None:  # the peak of forward, backward and the optimizer step
            tracker.__exit__(None, None, None)
            write_tracker_peak(tracker, args.mem_tracker_out.replace("{rank}", str(rank)), step, model)
        opt.zero_grad(set_to_none=True)
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        cpu_times.append(time.process_time() - c0)
        minor_faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
        rss_mb.append(round(resident_bytes() / 2**20, 1))
        if args.sleep_per_step:
            time.sleep(args.sleep_per_step)
        if rank == 0:
            print("step %d loss %.4f %.1f ms" % (step, loss.item(), 1000 * times[-1]), flush=True)
        if args.eval_every and step % args.eval_every == args.eval_every - 1:
            evaluate()
    kernels = None
    kernels_by_kind = None
    if prof is not None:
        prof.__exit__(None, None, None)
        gpu = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        kernels = len(gpu)
        kernels_by_kind = {"memcpy": sum(1 for n in gpu if n.startswith("Memcpy")),
                           "memset": sum(1 for n in gpu if n.startswith("Memset"))}
        kernels_by_kind["kernel"] = kernels - kernels_by_kind["memcpy"] - kernels_by_kind["memset"]
        if args.torch_profiler_trace and rank == 0:
            prof.export_chrome_trace(args.torch_profiler_trace.replace("{rank}", str(rank)))
    timed = times[args.warmup:] or times
    summary = {
        "world_size": world,
        "params": n_params,
        "param_bytes_fp32": 4 * n_params,
        "fsdp2": fs is not None,
        "fsdp1": bool(args.fsdp1 and distributed and not args.no_fsdp),
        "steps": args.steps,
        "warmup": args.warmup,
        "steps_per_s": len(timed) / sum(timed),
        "step_ms": [round(1000 * t, 3) for t in times],  # every step, rank 0's wall clock (warm-up included)
        # The same steps in rank 0's process CPU time (every thread: gloo's, a profiler's): what a
        # profiler adds to the work, which a busy machine's wall clock hides in its noise.
        "step_cpu_ms": [round(1000 * t, 3) for t in cpu_times],
        "step_config": step_config,  # "A" / "B" per step: --alternate-plan's blocks
        "step_rss_mb": rss_mb,
        "step_minor_faults": minor_faults,
        "max_memory_allocated": torch.cuda.max_memory_allocated() if device == "cuda" else None,
        "torch_profiler_kernels_timed_steps": kernels,
        "torch_profiler_kernels_by_kind": kernels_by_kind,  # memcpy / memset by name, the rest kernels
        "torch_version": torch.__version__,
    }
    if rank == 0:
        print(json.dumps(summary))
        if args.summary:
            with open(args.summary, "w") as f:
                json.dump(summary, f, indent=1)
    if distributed:
        model = opt = loss = logits = tracker = switch = None  # what holds the models and the last graph
        close_process_group()
    raise SystemExit(args.exit_code)


if __name__ == "__main__":
    main()
