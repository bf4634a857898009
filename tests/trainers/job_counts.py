"""What a training job itself knows, for the trainers tests to compare a profile with: the FSDP
collectives it issues per step and its FSDP units, counted inside the job (torchtitan's launcher,
the Lightning script), independently of ShardScope."""


def count_fsdp_collectives(per_step):
    """What the job itself issues, per step: FSDP2's all-gathers and reduce-scatters as it calls
    them (torch.distributed.all_gather_single / reduce_scatter_single; SimpleFSDP's through the
    functional collectives), (type, bytes) with the bytes `record` stores (an all-gather's output,
    a reduce-scatter's input)."""
    import torch.distributed as dist

    def wrap(name, kind, tensor_arg):
        original = getattr(dist, name)

        def counted(*args, **kwargs):
            t = args[tensor_arg] if len(args) > tensor_arg else kwargs.get(("output_tensor", "input")[tensor_arg])
            if per_step and t is not None:
                per_step[-1].append((kind, t.numel() * t.element_size()))
            return original(*args, **kwargs)

        setattr(dist, name, counted)

    wrap("all_gather_single", "all_gather", 0)
    wrap("reduce_scatter_single", "reduce_scatter", 1)

    # SimpleFSDP gathers and reduces through DTensor, i.e. the functional collectives, which take
    # the shard (an all-gather's output is the shard x the group's size).
    import torch.distributed._functional_collectives as funcol
    import torch.distributed.distributed_c10d as c10d

    def wrap_funcol(name, kind):
        original = getattr(funcol, name)

        def counted(t, *args, **kwargs):
            if per_step:
                n = t.numel() * t.element_size()
                if kind == "all_gather":
                    group = args[1] if len(args) > 1 else kwargs.get("group")
                    n *= c10d._get_group_size_by_name(funcol._resolve_group_name(group))
                per_step[-1].append((kind, n))
            return original(t, *args, **kwargs)

        setattr(funcol, name, counted)

    wrap_funcol("all_gather_single", "all_gather")
    wrap_funcol("reduce_scatter_single", "reduce_scatter")


def fsdp_units(model):
    """{fqn: parameters} of every FSDP unit with parameters of its own, as the trainer built them."""
    from torch.distributed.fsdp import FSDPModule

    from shardscope.hooks import fsdp2_param_groups

    units, seen = {}, set()
    for name, m in model.named_modules():
        if isinstance(m, FSDPModule):
            groups = fsdp2_param_groups(m)  # several with expert parallelism: the experts on their own mesh
            if groups and id(groups[0]) not in seen:  # a grouped unit under its first member's name
                seen.add(id(groups[0]))
                units[name] = sum(p.sharded_param.shape.numel() for g in groups for p in g.fsdp_params)
    return units


def count_gradient_bytes(per_step):
    """What the job's gradients hold when its optimizer steps, per step: the bytes of their storages,
    each once (FSDP2's sharded gradients of a unit are views of its one reduce output; a DTensor's
    local tensor on this rank), the last optimizer call of the step counting."""
    from torch.optim.optimizer import register_optimizer_step_pre_hook

    def before_step(optimizer, args, kwargs):
        if not per_step:
            return
        storages = {}
        for group in optimizer.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                local = g.to_local() if hasattr(g, "to_local") else g
                storage = local.untyped_storage()
                storages[storage.data_ptr()] = storage.nbytes()
        per_step[-1] = sum(storages.values())

    register_optimizer_step_pre_hook(before_step)
