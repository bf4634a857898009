"""A 2-rank FSDP2 job for test_mem_tracker_cpu (run with torchrun on CPU/gloo): four linear layers,
the first two sharded as one unit (fully_shard([layers.0, layers.1])) unless --no-bucket, a tracker
around step 1 of 4 (--tracker shardscope | torch). With --chunked-head N the output layer is a unit
of its own, called N times a step outside the model's forward (torchtitan's chunked loss). Rank 0 writes, to the file given, the
all-gathers FSDP ran in each step, the unsharded gradients still alive after each post-backward
(per step), the tracker's snapshots at its units' hook points (Unsharded
Param, bytes), whether every step ran, and whether the modules' forward hooks after the tracked
step are as many as FSDP had before it."""
import argparse
import gc
import json
import weakref

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.distributed.fsdp._fully_shard._fsdp_param_group as param_group
from torch.distributed.fsdp import fully_shard

DIM, LAYERS, STEPS, TRACKED = 32, 4, 4, 1


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Sequential(nn.Linear(DIM, DIM), nn.ReLU()) for _ in range(LAYERS)])
        self.out = nn.Linear(DIM, 8)

    def forward(self, x, head=True):
        for layer in self.layers:
            x = layer(x)
        return self.out(x) if head else x


def loss_of(model, x, chunks):
    """The step's loss: the head inside the forward, or run on `chunks` slices of the batch after it."""
    if not chunks:
        return model(x).sum()
    hidden = model(x, head=False)
    return sum(model.out(part).sum() for part in hidden.chunk(chunks))


def forward_hooks(model):
    """How many forward pre- and post-hooks each module has, by name."""
    return {name: (len(m._forward_pre_hooks), len(m._forward_hooks)) for name, m in model.named_modules()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--tracker", choices=["shardscope", "torch"], default="shardscope")
    ap.add_argument("--no-bucket", action="store_true")
    ap.add_argument("--chunked-head", type=int, default=0, metavar="N")
    args = ap.parse_args()
    if args.tracker == "torch":
        from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker
    else:
        from shardscope.mem_tracker import FSDPMemTracker
    dist.init_process_group("gloo")
    out = run_steps(args, FSDPMemTracker)
    if dist.get_rank() == 0:
        with open(args.out, "w") as f:
            json.dump(out, f)
    # Nothing of the model left before the group goes: a collective's work that gloo's threads
    # still hold otherwise aborts a rank at exit now and then ("terminate called without an active
    # exception"; scripts/fsdp_train_sample.py's close_process_group).
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


def run_steps(args, FSDPMemTracker):
    """The job's four steps, the tracker around one: what main writes."""
    torch.manual_seed(0)
    model = Net()
    if args.no_bucket:
        for layer in model.layers:
            fully_shard(layer)
    else:
        fully_shard([model.layers[0], model.layers[1]])
        for layer in model.layers[2:]:
            fully_shard(layer)
    if args.chunked_head:
        fully_shard(model.out)
    fully_shard(model)
    opt = torch.optim.Adam(model.parameters())
    gathers = [0] * STEPS
    step = 0
    gather = param_group.foreach_all_gather

    def counted(*a, **kw):
        gathers[step] += 1
        return gather(*a, **kw)

    param_group.foreach_all_gather = counted
    # Unsharded gradients still alive when FSDP's post-backward has returned (it hands them to the
    # reduce-scatter and drops them): per step. Patched on the class, so a tracker wraps this.
    alive = [0] * STEPS
    post_backward = param_group.FSDPParamGroup.post_backward

    def post_backward_checked(group, *a, **kw):
        grads = [weakref.ref(p._unsharded_param.grad) for p in group.fsdp_params if p._unsharded_param.grad is not None]
        out = post_backward(group, *a, **kw)
        alive[step] += sum(1 for g in grads if g() is not None)
        return out

    param_group.FSDPParamGroup.post_backward = post_backward_checked
    out = {"steps_run": 0}
    names = {id(m): n for n, m in model.named_modules()}
    for step in range(STEPS):
        x = torch.randn(4, DIM)
        tracker = None
        if step == TRACKED:
            before = forward_hooks(model)
            tracker = FSDPMemTracker(model, opt)
            tracker.track_inputs((x,))
            tracker.__enter__()
        try:
            loss_of(model, x, args.chunked_head).backward()
            opt.step()
            opt.zero_grad()
        except NotImplementedError as e:
            out["error"] = "step %d: %s" % (step, e)
            if tracker is not None:
                tracker.__exit__(None, None, None)
            break
        if tracker is not None:
            tracker.__exit__(None, None, None)
            out["hooks_restored"] = forward_hooks(model) == before
            out["unsharded_param"] = {
                names[id(m)]: {getattr(state, "value", str(state)): [s[torch.device("cpu")]["Unsharded Param"] for s in snaps]
                               for state, snaps in stats.snapshots.items()}
                for m, stats in tracker.memory_tracking.items() if id(m) in names}
        out["steps_run"] = step + 1
    out["all_gathers"] = gathers
    out["grads_alive_after_post_backward"] = alive
    out["unit_bytes"] = {name: 4 * sum(p.numel() for p in m.parameters()) for name, m in
                         [("layers.0", model.layers[0]), ("out", model.out)]}
    return out


if __name__ == "__main__":
    main()
