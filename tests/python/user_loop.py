"""A user's own FSDP2 training loop, written the plain way (no trainer): an MLP of residual blocks
(LayerNorm, biased Linears), every block and the model sharded with fully_shard (so the root holds
parameters of its own: the input and output projections), AdamW with its defaults, zero_grad()
with its default set_to_none, and gradient accumulation over --micro-batches (with --no-sync the
gradients are reduced on the last one only; with --no-reshard-after-backward the parameters stay
unsharded from one to the next). With --extras, what such loops do around the pass:
clip_grad_norm_ (an all-reduce of the gradients' norms), the loss all-reduced for logging, and
after every second step (--eval-every) an evaluation forward under no_grad; a cosine
learning-rate schedule always. With --compile the model is compiled whole (torch.compile(model),
the usual way), which record had named "_orig_mod.*", left without unit ranges and, with a capture
window after step 0, crashed in Dynamo. With --loader-workers the batches come from a DataLoader
with worker processes (--loader-start spawn: each imports torch with its rank's RANK, and record
had merged each as one more rank); with --spawn-ranks N the script starts its ranks itself with
torch.multiprocessing.spawn instead of being run by torchrun. With --checkpoint-after N the model
and optimizer are saved with torch.distributed.checkpoint after step N. With --two-optimizers the
blocks' matrices step with one optimizer and the rest with another, as Muon + AdamW loops split
them (each optimizer step had counted as a step of its own). With --keyword-calls the blocks are
called with their input as a keyword, block(x=h), as diffusers calls its blocks (their backward
ranges had run to the end of the backward pass). With --teacher a frozen copy of the model, sharded
the same way, runs under no_grad before each step's forward and the loop learns its outputs (a
distillation; RLHF's reference model): replayed as trained, its units had been gathered again in
backward and reduce-scattered. With --lora the weights are frozen and each block's two Linears get
a rank-8 adapter, the only parameters trained (the blocks still gather every weight; they had been
replayed as reducing, and holding gradients and optimizer state for, all of them). With --two-forwards the
model is called on two inputs before one backward (a siamese loss; DPO's chosen and rejected) and with
--rollouts N it runs N forwards under no_grad before each training forward (RLHF's generation): FSDP2
gathers its blocks at every call and again for the second backward, which the replay had missed or kept
whatever the plan; --unsharded keeps blocks unsharded after forward, as a plan does. --zero-grad moves the
zero_grad() call to the iteration's start or right before loss.backward() (the gradients then live through
the forward, which had been replayed as set_to_none=False); --zero-grad keep zeroes them in place after
the step (set_to_none=False, torchtitan's default: the first step's stay for the whole run). With --gan the model is a generator and a
second Net, sharded the same way, its discriminator, stepped as PyTorch's DCGAN example does: on real
samples and the generator's output detached, its optimizer step, then the generator through it (two
backward passes with an optimizer step between them, which the replay does not model: `simulate` says
so). With --freeze the named units' parameters are frozen, as fine-tunes freeze a model's bottom
(--freeze inp,layers.0: the root's input layer and the first block; the backward then stops above them,
yet FSDP2's backward prefetch gathers layers.0, and the root's head is reduced in the root's post-backward
callback, which the replay had missed). With --explicit-prefetch N each block prefetches the next N
in forward and the N before it in backward and the model is unsharded before each forward, as
PyTorch's FSDP2 example does (replayed in FSDP2's own order, the extra blocks' bytes had been taken
for memory the model does not know); --prefetch-from-step K sets those lists at step K's start
instead of before the loop (record had read them at the model's first call only). With --generate N
a decode loop through a method registered with register_fsdp_forward_method runs before each
training forward (record had named its first
module call as the model); with --encoder a frozen, unsharded encoder runs on each batch first (it
had taken the model's name); with --nested each block's fc1 and fc2 are units of their own. Recording this loop lost
its optimizer state (docs/importers.md), replayed its accumulation as one pass, dropped its two
all-reduces from the replay, took the evaluation for the units' forward and averaged the
checkpoint's step in (docs/simulator.md)."""
import argparse
import gc
import json
import os
import socket

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

IN, DIM, OUT, BLOCKS, BATCH = 32, 128, 10, 4, 64


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(DIM)
        self.fc1 = nn.Linear(DIM, 4 * DIM)
        self.fc2 = nn.Linear(4 * DIM, DIM)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.norm(x))))


class LoRA(nn.Module):
    """A frozen Linear plus a trained low-rank update (its second factor starts at zero)."""

    def __init__(self, base, rank=8):
        super().__init__()
        self.base = base
        self.a = nn.Linear(base.in_features, rank, bias=False)
        self.b = nn.Linear(rank, base.out_features, bias=False)
        nn.init.zeros_(self.b.weight)

    def forward(self, x):
        return self.base(x) + self.b(self.a(x))


class Net(nn.Module):
    def __init__(self, keyword_calls=False, inputs=IN, tied=False):
        super().__init__()
        self.keyword_calls = keyword_calls
        self.inp = nn.Embedding(OUT, DIM) if tied else nn.Linear(inputs, DIM)
        self.layers = nn.ModuleList(Block() for _ in range(BLOCKS))
        self.head = nn.Linear(DIM, OUT, bias=not tied)
        if tied:  # a language model's tied embeddings: the head's weight is the embedding's
            self.head.weight = self.inp.weight

    def forward(self, x):
        x = self.inp(x)
        for b in self.layers:
            x = b(x=x) if self.keyword_calls else b(x)
        return self.head(x)

    def generate(self, x, tokens):
        """A decode loop that calls the model's parts itself, as generation methods do (not
        self(x)): FSDP2 gathers the root's own parameters for it only when it is registered
        (register_fsdp_forward_method)."""
        for _ in range(tokens):
            h = self.inp(x)
            for b in self.layers:
                h = b(h)
            x = x + 0.01 * self.head(h).mean()
        return x


class Batches(torch.utils.data.Dataset):
    """Random samples, each with the pid of the process that made it (a loader worker's)."""

    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(IN, generator=g), torch.randint(0, OUT, (), generator=g), os.getpid()


def batches(a):
    """What the loop trains on: fresh random tensors, or a DataLoader's batches with --loader-workers."""
    if not a.loader_workers:
        while True:
            yield torch.randn(BATCH, IN), torch.randint(0, OUT, (BATCH,)), os.getpid()
    loader = torch.utils.data.DataLoader(Batches(), batch_size=BATCH, num_workers=a.loader_workers,
                                         multiprocessing_context=a.loader_start, persistent_workers=True)
    for x, y, pids in loader:
        yield x, y, int(pids[0])


def save_checkpoint(model, opt, folder):
    """What FSDP2 loops do to checkpoint: sharded state dicts written by every rank with DCP."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict

    model_state, optim_state = get_state_dict(model, opt)
    dcp.save({"model": model_state, "optim": optim_state}, checkpoint_id=folder)


def parse():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu", choices=["cpu"])  # fsdp2_run.torchrun passes it
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--micro-batches", type=int, default=1)
    ap.add_argument("--no-sync", action="store_true")
    ap.add_argument("--summary", default="")
    ap.add_argument("--no-reshard-after-backward", action="store_true",
                    help="with --micro-batches: set_reshard_after_backward(False) on all but the last (FSDP2's recipe "
                         "for accumulating without gathering again)")
    ap.add_argument("--extras", action="store_true")
    ap.add_argument("--compile", action="store_true",
                    help="torch.compile(model) after sharding: the model compiled whole (Dynamo through aot_eager)")
    ap.add_argument("--eval-every", type=int, default=2, help="with --extras: an evaluation after every N-th step")
    ap.add_argument("--loader-workers", type=int, default=0, help="a DataLoader with this many worker processes")
    ap.add_argument("--loader-start", default="spawn", choices=["spawn", "fork", "forkserver"])
    ap.add_argument("--keyword-calls", action="store_true", help="the blocks called as block(x=h)")
    ap.add_argument("--teacher", action="store_true", help="learn a frozen teacher's outputs (run under no_grad)")
    ap.add_argument("--lora", action="store_true", help="frozen weights, a rank-8 adapter on each block's Linears")
    ap.add_argument("--two-forwards", action="store_true",
                    help="the model called on two inputs before one backward (a siamese loss; DPO's chosen and rejected)")
    ap.add_argument("--rollouts", type=int, default=0,
                    help="this many forwards of the trained model under no_grad before each step's training forward "
                         "(RLHF's generation, PPO's old log-probabilities)")
    ap.add_argument("--generate", type=int, default=0,
                    help="before each training forward, N decode steps under no_grad through model.generate, a method "
                         "registered with register_fsdp_forward_method (RLHF's generation)")
    ap.add_argument("--encoder", action="store_true",
                    help="a frozen, unsharded encoder run under no_grad on each batch before the model (a diffusion "
                         "loop's VAE and text encoder)")
    ap.add_argument("--tied", action="store_true",
                    help="token inputs through an embedding whose weight the output head shares (tied embeddings)")
    ap.add_argument("--nested", action="store_true",
                    help="each block's fc1 and fc2 sharded as units of their own inside the block's unit")
    ap.add_argument("--freeze", default="", help="comma-separated modules whose parameters are frozen (inp,layers.0)")
    ap.add_argument("--gan", action="store_true", help="train the model as a GAN's generator against a discriminator")
    ap.add_argument("--two-optimizers", action="store_true",
                    help="SGD with momentum for the blocks' matrices, AdamW for the rest (each stepped every step)")
    ap.add_argument("--zero-grad", default="after-step", choices=["after-step", "before-forward", "before-backward", "keep"],
                    help="where the loop calls zero_grad(): after the optimizer step, or at the next iteration's "
                         "start or right before its backward (the gradients then live through its forward); keep: "
                         "after the step with set_to_none=False (zeroed in place, never freed)")
    ap.add_argument("--unsharded", default="",
                    help="comma-separated blocks (layers.N; with --nested also layers.N.fc1, layers.N.fc2) sharded with "
                         "reshard_after_forward=False, as a plan keeps them")
    ap.add_argument("--checkpoint-after", type=int, default=-1,
                    help="save model and optimizer with torch.distributed.checkpoint after this step (into --checkpoint-dir)")
    ap.add_argument("--checkpoint-dir", default="")
    ap.add_argument("--explicit-prefetch", type=int, default=0,
                    help="each block prefetches the next N in forward and the previous N in backward, and the "
                         "root is unsharded before each forward (PyTorch's FSDP2 example)")
    ap.add_argument("--prefetch-from-step", type=int, default=0, metavar="K",
                    help="--explicit-prefetch: set the lists (and unshard the root) from step K on")
    ap.add_argument("--spawn-ranks", type=int, default=0,
                    help="start this many ranks with torch.multiprocessing.spawn (run without torchrun)")
    return ap.parse_args()


def main(rank=None, a=None):
    a = a or parse()
    if a.spawn_ranks and rank is None:
        with socket.socket() as s:  # a free port for the ranks' rendezvous
            s.bind(("127.0.0.1", 0))
            os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(s.getsockname()[1]))
        torch.multiprocessing.spawn(main, args=(a,), nprocs=a.spawn_ranks)
        return
    from torch.distributed.fsdp import fully_shard

    if rank is None:
        dist.init_process_group("gloo")
    else:
        dist.init_process_group("gloo", rank=rank, world_size=a.spawn_ranks)
    torch.manual_seed(0)
    model = Net(keyword_calls=a.keyword_calls, tied=a.tied)
    if a.lora:
        model.requires_grad_(False)
        for b in model.layers:
            b.fc1, b.fc2 = LoRA(b.fc1), LoRA(b.fc2)
    for name in filter(None, a.freeze.split(",")):
        model.get_submodule(name).requires_grad_(False)
    params = list(model.parameters())
    summary = {"params": sum(p.numel() for p in params), "param_tensors": len(params),
               "units": {"": sum(p.numel() for p in nn.ModuleList([model.inp, model.head]).parameters())}}  # tied: once
    summary["units"].update({"layers.%d" % i: sum(p.numel() for p in b.parameters()) for i, b in enumerate(model.layers)})
    summary["trainable"] = {"": sum(p.numel() for p in nn.ModuleList([model.inp, model.head]).parameters() if p.requires_grad)}
    summary["trainable"].update({"layers.%d" % i: sum(p.numel() for p in b.parameters() if p.requires_grad)
                                 for i, b in enumerate(model.layers)})
    teacher = Net() if a.teacher else None
    encoder = nn.Sequential(nn.Linear(IN, 4 * IN), nn.GELU(), nn.Linear(4 * IN, IN)).requires_grad_(False) if a.encoder else None
    disc = Net(inputs=OUT) if a.gan else None  # scores the generator's OUT outputs (OUT logits, averaged)
    if disc is not None:
        summary["disc_units"] = {"": sum(p.numel() for m in (disc.inp, disc.head) for p in m.parameters())}
        summary["disc_units"].update({"layers.%d" % i: sum(p.numel() for p in b.parameters()) for i, b in enumerate(disc.layers)})
    for m in [n for n in (teacher, model, disc) if n is not None]:
        for i, b in enumerate(m.layers):
            if a.nested:
                for name in ("fc1", "fc2"):
                    fully_shard(getattr(b, name), reshard_after_forward="layers.%d.%s" % (i, name) not in a.unsharded.split(","))
            fully_shard(b, reshard_after_forward=m is teacher or "layers.%d" % i not in a.unsharded.split(","))
        fully_shard(m)
    if a.generate:
        from torch.distributed.fsdp import register_fsdp_forward_method

        register_fsdp_forward_method(model, "generate")

    def set_prefetch_lists():
        n, blocks = a.explicit_prefetch, list(model.layers)
        for i, b in enumerate(blocks):
            b.set_modules_to_forward_prefetch(blocks[i + 1:i + 1 + n])
            b.set_modules_to_backward_prefetch(blocks[max(0, i - n):i][::-1])

    if a.explicit_prefetch and a.prefetch_from_step == 0:
        set_prefetch_lists()
    if teacher is not None:
        teacher.requires_grad_(False)
    if a.two_optimizers:
        matrices = [p for n, p in model.named_parameters() if p.ndim == 2 and n.startswith("layers.")]
        opt = torch.optim.AdamW([p for p in model.parameters() if all(p is not q for q in matrices)], lr=1e-3)
        optimizers = [torch.optim.SGD(matrices, lr=1e-2, momentum=0.9), opt]
    else:
        opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
        optimizers = [opt]
    opt_d = torch.optim.AdamW(disc.parameters(), lr=1e-4) if disc is not None else None
    sharded = model
    if a.compile:
        model = torch.compile(model, backend="aot_eager")
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(opt, a.steps)
    data, loader_pids = batches(a), set()
    for step in range(a.steps):
        if a.explicit_prefetch and step == a.prefetch_from_step > 0:
            set_prefetch_lists()
        for micro in range(a.micro_batches):
            if a.no_sync:
                sharded.set_requires_gradient_sync(micro == a.micro_batches - 1)
            if a.no_reshard_after_backward:
                sharded.set_reshard_after_backward(micro == a.micro_batches - 1)
            x, y, pid = next(data)
            if a.tied:
                x = y.roll(1)  # tokens: the next one is the label
            loader_pids.add(pid)
            if a.zero_grad == "before-forward" and micro == 0:
                for o in optimizers:
                    o.zero_grad()
            if a.explicit_prefetch and step >= a.prefetch_from_step:
                sharded.unshard()
            if encoder is not None:
                with torch.no_grad():
                    x = encoder(x)
            if teacher is not None:
                with torch.no_grad():
                    y = teacher(x).softmax(-1)
            with torch.no_grad():
                for _ in range(a.rollouts):
                    x = x + 0.01 * model(x).mean()
                if a.generate:
                    x = sharded.generate(x, a.generate)
            out = model(x)
            if a.two_forwards:
                out = out - model(x.flip(0)).flip(0)
            loss = F.cross_entropy(out, y) / a.micro_batches
            if disc is not None:  # DCGAN's order: the discriminator's step, then the generator through it
                opt_d.zero_grad()
                real = F.one_hot(y, OUT).float()
                d_loss = F.softplus(-disc(real)).mean() + F.softplus(disc(out.detach())).mean()
                d_loss.backward()
                opt_d.step()
                loss = F.softplus(-disc(out)).mean()
            if a.zero_grad == "before-backward" and micro == 0:
                for o in optimizers:
                    o.zero_grad()
            loss.backward()
        if a.extras:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            logged = loss.detach().clone()
            dist.all_reduce(logged)
            logged.item()
        for o in optimizers:
            o.step()
        schedule.step()
        if a.zero_grad in ("after-step", "keep"):
            for o in optimizers:
                o.zero_grad(set_to_none=a.zero_grad == "after-step")
        if step == a.checkpoint_after:
            save_checkpoint(sharded, opt, a.checkpoint_dir)
        if a.extras and step % a.eval_every == a.eval_every - 1:
            model.eval()
            with torch.no_grad():
                model(torch.randn(BATCH, IN))
            model.train()
    if a.loader_workers or a.spawn_ranks:  # which processes were the ranks and which their loaders
        pids = [None] * dist.get_world_size()
        dist.all_gather_object(pids, {"rank": os.getpid(), "loader": sorted(loader_pids - {os.getpid()})})
        summary["pids"] = pids
    if a.summary and dist.get_rank() == 0:
        with open(a.summary, "w") as f:
            json.dump(summary, f)
    model = opt = loss = disc = opt_d = None
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
