"""Apply a ShardScope plan (``shardscope plan -o plan.json``) to a model in one call.

The plan names the modules to keep unsharded after forward (FSDP2 ``reshard_after_forward=False``)
and, optionally, modules that keep a 1/k slice (``reshard_after_forward=k``). ``apply_plan`` calls
``fully_shard`` on exactly those modules, by fully-qualified name, innermost first; wrap the rest of
the model (the blocks and the root) afterwards as usual -- FSDP2 skips parameters that an earlier,
nested ``fully_shard`` call already owns.

    from shardscope.plan import apply_plan
    apply_plan(model, "plan.json", mesh=mesh, mp_policy=mp)
"""

import json
import os


def load_plan(plan_path_or_dict):
    """Returns the plan as a dict from a path, a JSON string's file, or a dict."""
    if isinstance(plan_path_or_dict, dict):
        return plan_path_or_dict
    if isinstance(plan_path_or_dict, (str, os.PathLike)):
        with open(plan_path_or_dict, "r", encoding="utf-8") as f:
            try:
                plan = json.load(f)
            except json.JSONDecodeError as e:
                raise ValueError("%s: invalid JSON at line %d column %d: %s" % (plan_path_or_dict, e.lineno, e.colno, e.msg))
        if not isinstance(plan, dict):
            raise ValueError("%s: expected a JSON object" % plan_path_or_dict)
        return plan
    raise TypeError("plan must be a path or a dict, not %s" % type(plan_path_or_dict).__name__)


def planned_policies(plan):
    """[(module_name, reshard_after_forward)] in the plan, deepest modules first."""
    out = {}
    for name in plan.get("unsharded", []):
        if not isinstance(name, str):
            raise ValueError("unsharded: expected module names, got %r" % (name,))
        out[name] = False
    for name, value in plan.get("reshard_after_forward", {}).items():
        if value is True:
            continue  # FSDP2's default; nothing to apply
        if value is False or value == 1:
            out[name] = False
        elif isinstance(value, int) and value >= 2:
            out[name] = value
        else:
            raise ValueError("reshard_after_forward.%s: expected true, false or an integer k >= 2" % name)
    # Innermost first: a nested fully_shard must run before its ancestors'.
    return sorted(out.items(), key=lambda kv: (-kv[0].count("."), kv[0]))


def _default_fully_shard():
    try:
        from torch.distributed.fsdp import fully_shard  # PyTorch >= 2.6
    except ImportError:  # pragma: no cover - older PyTorch
        from torch.distributed._composable.fsdp import fully_shard
    return fully_shard


def apply_plan(model, plan_path_or_dict, fully_shard_fn=None, **fully_shard_kwargs):
    """Applies ``fully_shard(module, reshard_after_forward=...)`` to every module the plan names.

    Returns the list of (name, module) that were sharded. Unknown names raise ValueError before
    anything is applied, so a stale plan never half-applies.
    """
    plan = load_plan(plan_path_or_dict)
    policies = planned_policies(plan)
    modules = []
    for name, _ in policies:
        try:
            modules.append(model.get_submodule(name) if name else model)
        except AttributeError:
            raise ValueError("plan names module %r, which the model does not have" % name)
    shard = fully_shard_fn or _default_fully_shard()
    applied = []
    for (name, policy), module in zip(policies, modules):
        shard(module, reshard_after_forward=policy, **fully_shard_kwargs)
        applied.append((name, module))
    return applied
