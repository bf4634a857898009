"""Plans from a process that ran two FSDP models: a distillation's teacher beside its student,
RLHF's reference model beside the policy, a GAN's two. `record` names the modules of the first
model called by their paths ("layers.0") and those of any other by its class and their paths
("FSDPNet.layers.0"), so one plan may name units of both. apply_plan(model, plan, root=...) takes
one model's: root="" the first model's, root="FSDPNet" the other's, their names made relative to
that model; without root a name of the other model is refused with this hint. fsdp1_wrap_policy
takes root= the same way."""


def _children(model):
    return {name for name, _ in model.named_children()}


def _relative(name, root, children):
    """`name` relative to the model the profile named `root`, or None when it is another model's."""
    if root:
        if name == root:
            return ""
        return name[len(root) + 1:] if name.startswith(root + ".") else None
    return name if name in ("", "*") or name.split(".")[0] in children else None


def plan_for_root(plan, root, model):
    """The plan's entries for the model the profile named `root` ("" = the first model called),
    with names relative to it; None = the plan as it is."""
    if root is None:
        return plan
    if not isinstance(root, str):
        raise TypeError("root must be a model's name in the profile (\"\" or its class name), not %r" % (root,))
    children = _children(model)
    out = dict(plan)
    if "unsharded" in plan:
        out["unsharded"] = [r for r in (_relative(n, root, children) if isinstance(n, str) else n
                                        for n in plan["unsharded"]) if r is not None]
    for key in ("reshard_after_forward", "activation_checkpointing"):
        if isinstance(plan.get(key), dict):
            out[key] = {r: v for r, v in ((_relative(n, root, children), v) for n, v in plan[key].items()) if r is not None}
    for key in ("forward_prefetch", "backward_prefetch"):  # a list stays whole or goes: one model's units only
        if isinstance(plan.get(key), dict):
            out[key] = {}
            for n, targets in plan[key].items():
                names = [_relative(t, root, children) if isinstance(t, str) else None for t in [n] + list(targets)]
                if None not in names:
                    out[key][names[0]] = names[1:]
    for key in ("buckets", "fsdp2_buckets"):  # a bucket, too, is one model's or goes
        if isinstance(plan.get(key), list):
            out[key] = []
            for b in plan[key]:
                names = [_relative(n, root, children) if isinstance(n, str) else None for n in b] if isinstance(b, list) else [None]
                if None not in names:
                    out[key].append(names)
    return out


def other_model_hint(model, name):
    """Why `name` may be missing from `model`: a unit of a second model in the profile."""
    first, _, rest = name.partition(".")
    if not rest or first in _children(model):
        return ""
    try:
        model.get_submodule(rest)
    except AttributeError:
        return ""
    return (" (it looks like a unit of a second model in the profile: two FSDP models ran in the recorded process, and "
            "record names the one called second by its class, here %r; apply_plan(model, plan, root=%r) (FSDP1: "
            "fsdp1_wrap_policy(model, plan, wrap, root=%r)) takes that model's units, root=\"\" the first model's)"
            % (first, first, first))
