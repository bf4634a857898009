"""Apply a ShardScope plan (``shardscope plan -o plan.json``) to a model in one call.

The plan names the modules to keep unsharded after forward (FSDP2 ``reshard_after_forward=False``)
and, optionally, modules that keep a 1/k slice (``reshard_after_forward=k``). ``apply_plan`` calls
``fully_shard`` on exactly those modules, by fully-qualified name, innermost first; wrap the rest of
the model (the blocks and the root) afterwards as usual -- FSDP2 skips parameters that an earlier,
nested ``fully_shard`` call already owns. On a model a trainer has already sharded (torchtitan,
Lightning), it sets each named unit's ``reshard_after_forward`` in place instead
(``FSDPModule.set_reshard_after_forward``; see shardscope/torchtitan.py for torchtitan's hook).
FSDP1 (``FullyShardedDataParallel``) takes the plan when it wraps the model:
``auto_wrap_policy=fsdp1_wrap_policy(model, plan, {Block})``.

    from shardscope.plan import apply_plan
    apply_plan(model, "plan.json", mesh=mesh, mp_policy=mp)

Plans may also carry activation checkpointing (``activation_checkpointing``: ``{"layers.3": "full",
"*": "attention"}``; "*" means every block, i.e. every element of the model's ``nn.ModuleList`` s)
and offload (``offload``: ``"cpu"`` = FSDP2's ``CPUOffloadPolicy``). ``apply_plan`` wraps the
checkpointed modules with ``checkpoint_wrapper`` *before* any ``fully_shard`` call, and passes the
offload policy to its own ``fully_shard`` calls; pass ``plan_fully_shard_kwargs(plan)`` to the calls
that shard the rest of the model so every unit agrees.

Buckets (``buckets``: ``[["layers.0", "layers.1"], ...]``, modules that share one all-gather and one
reduce-scatter; ``shardscope plan --buckets`` chooses them) are FSDP2's ``fully_shard([m1, m2])``:
one call for the list, with the policy of its members (kept unsharded if any member is).
``shardscope plan -o`` and the GUI's export also write ``fsdp2_buckets``: the buckets as modules,
those the plan's caps (``bucket_cap_mb``) form on the profiled model and the groups the job shards
itself that the plan changes, which apply_plan then applies. On a sharded model a bucket must be a
group the model already has.
"""

import fnmatch
import json
import os
import warnings

try:
    from ._plan_roots import other_model_hint, plan_for_root
except ImportError:  # plan.py imported alone, outside the package (tests/python/test_plan.py)
    from _plan_roots import other_model_hint, plan_for_root


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


def planned_buckets(plan):
    """[[module names]] of the plan's buckets of two or more modules (one all-gather each): the
    buckets its lists and caps formed on the profiled model (``fsdp2_buckets``, written by
    ``shardscope plan -o`` and the GUI's export) or else its ``buckets``; checked: names are
    strings, no module in two buckets, no member inside another member."""
    key = "fsdp2_buckets" if "fsdp2_buckets" in plan else "buckets"
    if plan.get("bucket_cap_mb") and key != "fsdp2_buckets":
        warnings.warn("the plan's bucket_cap_mb is not applied: the buckets the caps form depend on the model's forward "
                      "order, which `shardscope plan -o` and the GUI's export write as fsdp2_buckets", stacklevel=3)
    buckets = plan.get(key, [])
    if not isinstance(buckets, list) or not all(isinstance(b, list) for b in buckets):
        raise ValueError("%s: expected a list of lists of module names" % key)
    seen = {}
    out = []
    for i, b in enumerate(buckets):
        for name in b:
            if not isinstance(name, str):
                raise ValueError("%s[%d]: expected module names, got %r" % (key, i, name))
            if name in seen:
                raise ValueError("%s: %r is in buckets %d and %d" % (key, name, seen[name], i))
            seen[name] = i
        for a in b:
            for c in b:
                if a != c and (a == "" or c.startswith(a + ".")):
                    raise ValueError("%s[%d]: %r is inside %r; a bucket's modules are disjoint" % (key, i, c, a or "(root)"))
        if len(b) >= 2:
            out.append(list(b))
    return out


def _bucket_policy(bucket, policies):
    """A bucket's reshard_after_forward: False if any member is kept unsharded (as the simulator
    has it), else the largest k among its members, else True (FSDP2's default)."""
    values = [policies.get(n, True) for n in bucket]
    if any(v is False for v in values):
        return False
    ks = [v for v in values if v is not True]
    return max(ks) if ks else True


def _depth(name):
    return -1 if name == "" else name.count(".")


def planned_checkpointing(plan):
    """{module or "*": "full" | sub-module glob} from the plan's activation_checkpointing."""
    v = plan.get("activation_checkpointing", {})
    if isinstance(v, str):
        v = {"*": v}
    if not isinstance(v, dict):
        raise ValueError("activation_checkpointing: expected an object {module: mode} or a mode string")
    out = {}
    for name, mode in v.items():
        if not isinstance(mode, str) or not mode:
            raise ValueError("activation_checkpointing.%s: expected \"none\", \"full\" or a sub-module name" % name)
        if mode != "none":
            out[name] = mode
    return out


def _blocks(model):
    """What "*" checkpoints: every element of every nn.ModuleList or nn.ModuleDict (a transformer's
    blocks; torchtitan keeps them in a ModuleDict)."""
    names = []
    for name, mod in model.named_modules():
        if type(mod).__name__ in ("ModuleList", "ModuleDict"):
            names += [(name + "." + c) if name else c for c, _ in mod.named_children()]
    return names


def checkpoint_targets(model, plan, blocks=None):
    """[module names to wrap] for the plan's checkpointing: whole units ("full") or their sub-modules
    whose name (relative to the unit) matches the glob (selective). Raises ValueError naming what
    does not exist, before anything is wrapped."""
    wanted = planned_checkpointing(plan)
    units = {}
    if "*" in wanted:
        for b in (blocks if blocks is not None else _blocks(model)):
            units[b] = wanted["*"]
    units.update({k: v for k, v in wanted.items() if k != "*"})
    targets = []
    for unit, mode in sorted(units.items()):
        try:
            m = model.get_submodule(unit) if unit else model
        except AttributeError:
            raise ValueError("activation_checkpointing names module %r, which the model does not have" % unit)
        if not unit:
            raise ValueError("activation_checkpointing: the root cannot be checkpointed")
        if mode == "full":
            targets.append(unit)
            continue
        subs = [n for n, _ in m.named_modules() if n and fnmatch.fnmatchcase(n, mode)]
        if not subs:
            raise ValueError("activation_checkpointing: %r matches no sub-module of %r (sub-modules: %s)"
                             % (mode, unit, ", ".join(n for n, _ in m.named_children())))
        targets += [unit + "." + n for n in subs]
    return targets


def apply_checkpointing(model, plan, wrap_fn=None, blocks=None):
    """Replaces each checkpointed module by ``wrap_fn(module)`` (default: torch's non-reentrant
    ``checkpoint_wrapper``) in its parent. Call before fully_shard. Returns the wrapped names."""
    targets = checkpoint_targets(model, plan, blocks)
    if not targets:
        return []
    if wrap_fn is None:
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper as wrap_fn
    for name in targets:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, wrap_fn(getattr(parent, child)))
    return targets


def plan_fully_shard_kwargs(plan_path_or_dict):
    """Keyword arguments every fully_shard call needs under the plan: the offload policy."""
    plan = load_plan(plan_path_or_dict)
    offload = plan.get("offload", "none")
    if offload not in ("none", "cpu", "optimizer"):
        raise ValueError("offload: expected \"none\", \"cpu\" or \"optimizer\", got %r" % (offload,))
    if offload == "cpu":
        from torch.distributed.fsdp import CPUOffloadPolicy

        return {"offload_policy": CPUOffloadPolicy()}
    if offload == "optimizer":
        warnings.warn("the plan offloads optimizer states only: FSDP2 has no policy for that; use a CPU optimizer "
                      "(e.g. DeepSpeed's CPUAdam) on the sharded parameters", stacklevel=2)
    return {}


def _default_fully_shard():
    try:
        from torch.distributed.fsdp import fully_shard  # PyTorch >= 2.6
    except ImportError:  # pragma: no cover - older PyTorch
        from torch.distributed._composable.fsdp import fully_shard
    return fully_shard


def warn_unapplied_parallelism(plan):
    """A plan's `parallelism` (tp, cp, pp, ep) needs the device mesh and the model-parallel wrapping
    before fully_shard, which only the training script can build; apply_plan applies the per-module
    FSDP choices and says so instead of ignoring it silently."""
    par = plan.get("parallelism") or {}
    degrees = {k: par.get(k, 1) for k in ("tp", "cp", "pp", "ep")}
    if any(v != 1 for v in degrees.values()):
        warnings.warn("the plan's parallelism (%s) is not applied by apply_plan: build the mesh and parallelize the "
                      "model first (scripts/fsdp_tp_train.py shows TP and pipelining), then apply_plan shards each "
                      "part" % ", ".join("%s=%s" % kv for kv in degrees.items() if kv[1] != 1), stacklevel=3)


def _fsdp_module_class():
    try:
        from torch.distributed.fsdp import FSDPModule  # PyTorch >= 2.6
    except ImportError:  # pragma: no cover - older PyTorch
        try:
            from torch.distributed._composable.fsdp import FSDPModule
        except ImportError:
            return None
    return FSDPModule


def is_sharded(model):
    """Whether fully_shard was already applied somewhere in the model (a trainer's parallelize step ran)."""
    cls = _fsdp_module_class()
    return cls is not None and any(isinstance(m, cls) for m in model.modules())


def _is_fsdp1_wrapped(model):
    try:
        from torch.distributed.fsdp import FullyShardedDataParallel
    except ImportError:  # pragma: no cover - a torch without FSDP
        return False
    return any(isinstance(m, FullyShardedDataParallel) for m in model.modules())


def _fsdp_state(model, name):
    """The FSDP2 state a module of a sharded model belongs to (one per fully_shard call), or None."""
    module = _named(model, name)
    get = getattr(module, "_get_fsdp_state", None)
    return get() if get is not None else None


def _named(model, name):
    """The module the plan names ("" = the model), or ValueError saying why it is missing."""
    try:
        return model.get_submodule(name) if name else model
    except AttributeError:
        raise ValueError("plan names module %r, which the model does not have%s" % (name, other_model_hint(model, name)))


def planned_prefetch(plan):
    """{"forward": {unit: [units]}, "backward": {...}} from the plan's forward_prefetch /
    backward_prefetch (a profile's recorded lists, or a what-if's); ValueError when malformed."""
    out = {}
    for phase in ("forward", "backward"):
        lists = plan.get(phase + "_prefetch", {})
        if not isinstance(lists, dict) or not all(isinstance(v, list) and all(isinstance(t, str) for t in v)
                                                  for v in lists.values()):
            raise ValueError("%s_prefetch: expected an object {unit: [units it prefetches]}" % phase)
        out[phase] = lists
    return out


def _prefetch_lists(model, plan):
    """[(phase, unit, [units])] of the plan's prefetch lists on a sharded model; ValueError naming
    what is not an FSDP unit of it."""
    cls = _fsdp_module_class()
    out = []
    for phase, by_unit in planned_prefetch(plan).items():
        for name, targets in sorted(by_unit.items()):
            modules = [_named(model, n) for n in [name] + targets]
            bad = [n for n, m in zip([name] + targets, modules) if cls is None or not isinstance(m, cls)]
            if bad:
                raise ValueError("%s_prefetch names %s, not an FSDP unit of the model: set the lists once the model "
                                 "is sharded" % (phase, ", ".join(repr(n) for n in bad)))
            out.append((phase, modules[0], modules[1:]))
    return out


def _set_prefetch(lists):
    for phase, unit, targets in lists:
        getattr(unit, "set_modules_to_%s_prefetch" % phase)(targets)


def apply_prefetch(model, plan_path_or_dict, root=None):
    """Sets the plan's explicit prefetch lists on a sharded model (FSDP2's
    ``set_modules_to_forward_prefetch`` / ``set_modules_to_backward_prefetch``; a list replaces the
    unit's own). Every name must be an FSDP unit of it, else ValueError before anything is set.
    Returns the number of lists set. apply_plan calls it on a model already sharded; on a model it
    shards, call it once every unit is. ``root``: as apply_plan's."""
    lists = _prefetch_lists(model, plan_for_root(load_plan(plan_path_or_dict), root, model))
    _set_prefetch(lists)
    return len(lists)


def _apply_to_sharded(model, plan, policies):
    """The plan on a model that is already sharded (torchtitan after its parallelize step, Lightning
    after its strategy's setup): FSDP2 refuses a second fully_shard on a module ("Each distinct
    composable distributed API can only be applied to a module once"), so each planned unit's
    `reshard_after_forward` is set in place (`FSDPModule.set_reshard_after_forward`)."""
    cls = _fsdp_module_class()
    units = [n for n, m in model.named_modules() if isinstance(m, cls)]
    targets = []
    for name, policy in policies:
        module = _named(model, name)
        if not isinstance(module, cls):
            raise ValueError("plan names module %r, which is not an FSDP unit of the sharded model (units: %s); "
                             "apply the plan before sharding, or plan from a profile of this model"
                             % (name, ", ".join(u or "(root)" for u in units)))
        if not isinstance(policy, bool):
            raise ValueError("reshard_after_forward.%s = %r: a sharded model takes only true / false "
                             "(FSDPModule.set_reshard_after_forward); shard that module with fully_shard("
                             "reshard_after_forward=%r) instead" % (name, policy, policy))
        targets.append((name, module, policy))
    # A bucket is fixed when FSDP2 shards it (fully_shard([m1, m2])): on a sharded model it must be one
    # already (torchtitan's [norm, output]), which the plan may name (fsdp2_buckets lists the job's groups).
    def grouped(bucket):
        states = [_fsdp_state(model, n) for n in bucket]
        return states[0] is not None and all(s is states[0] for s in states)

    regroup = [b for b in planned_buckets(plan) if not grouped(b)]
    if regroup:
        raise ValueError("the plan groups modules into buckets that the sharded model does not have (%s): FSDP2 fixes a "
                         "bucket when it shards it (fully_shard([m1, m2])); apply the plan before sharding"
                         % "; ".join("+".join(b) for b in regroup))
    prefetch = _prefetch_lists(model, plan)  # every name checked before anything is applied
    if plan.get("offload", "none") != "none":
        warnings.warn("the plan's offload (%r) is not applied to an already sharded model: pass the offload policy "
                      "to the trainer's own fully_shard calls" % plan.get("offload"), stacklevel=3)
    if planned_checkpointing(plan):
        apply_checkpointing(model, plan)
    _set_prefetch(prefetch)
    for _, module, policy in targets:
        module.set_reshard_after_forward(policy, recurse=False)
    return [(name, module) for name, module, _ in targets]


def fsdp1_wrap_policy(model, plan_path_or_dict, wrap=(), root=None):
    """The plan for FSDP1 (``FullyShardedDataParallel``): an ``auto_wrap_policy`` that wraps each
    module the plan names as its own unit with ``ShardingStrategy.SHARD_GRAD_OP`` (FSDP1's
    reshard_after_forward=False; keeping a 1/k slice has no FSDP1 equivalent and is refused) and
    every module of a class in ``wrap`` (the blocks) as the model's other units. Call it on the
    unwrapped model, whose module names are the plan's:

        from shardscope.plan import fsdp1_wrap_policy
        model = FSDP(model, auto_wrap_policy=fsdp1_wrap_policy(model, "plan.json", {Block}), ...)

    Unknown names raise ValueError before anything is wrapped. The root keeps its parameters
    unsharded after forward anyway (FSDP1 never frees the root's), so the plan may name it.
    ``root``: for a plan from a process that ran two FSDP models, which one `model` is, as in
    apply_plan ("" the first called, else its name in the profile: its class)."""
    from torch.distributed.fsdp import ShardingStrategy
    from torch.distributed.fsdp.wrap import CustomPolicy

    plan = plan_for_root(load_plan(plan_path_or_dict), root, model)
    warn_unapplied_parallelism(plan)
    if planned_checkpointing(plan) or plan.get("offload", "none") != "none":
        warnings.warn("the plan's activation checkpointing and offload are not applied by fsdp1_wrap_policy: "
                      "apply_checkpointing(model, plan) first, and pass FSDP1's cpu_offload yourself", stacklevel=2)
    if planned_buckets(plan):
        warnings.warn("the plan's buckets are not applied by fsdp1_wrap_policy (FSDP1 wraps one module per unit); "
                      "its unshard set is", stacklevel=2)
    names = {m: n for n, m in model.named_modules()}
    known = set(names.values())
    keep = set()
    for name, policy in planned_policies(plan):
        if name not in known:
            raise ValueError("plan names module %r, which the model does not have%s" % (name, other_model_hint(model, name)))
        if policy is not False:
            raise ValueError("reshard_after_forward.%s = %r: FSDP1 has no partial reshard; plan with true / false"
                             % (name, policy))
        keep.add(name)
    wrap = tuple(wrap)

    def decide(module):
        name = names.get(module)
        if name in keep and name != "":
            return {"sharding_strategy": ShardingStrategy.SHARD_GRAD_OP}
        return bool(wrap) and isinstance(module, wrap) and name != ""

    return CustomPolicy(decide)


def apply_plan(model, plan_path_or_dict, fully_shard_fn=None, root=None, **fully_shard_kwargs):
    """Applies ``fully_shard(module, reshard_after_forward=...)`` to every module the plan names.

    On a model that is already sharded (a trainer sharded it), sets each named unit's
    ``reshard_after_forward`` in place instead (``FSDPModule.set_reshard_after_forward``).
    Returns the list of (name, module) that were sharded or changed. Unknown names raise
    ValueError before anything is applied, so a stale plan never half-applies. ``root``: for a
    plan from a process that ran two FSDP models (a teacher and its student), which one `model`
    is: "" the first called, or the other's name in the profile (its class: "FSDPNet");
    only that model's units are applied (shardscope/_plan_roots.py).
    """
    plan = plan_for_root(load_plan(plan_path_or_dict), root, model)
    warn_unapplied_parallelism(plan)
    policies = planned_policies(plan)
    if fully_shard_fn is None and _is_fsdp1_wrapped(model):
        raise ValueError("the model is wrapped with FSDP1 (FullyShardedDataParallel), whose units' sharding strategy is "
                         "fixed when they are wrapped: pass auto_wrap_policy=fsdp1_wrap_policy(model, plan, {Block}) "
                         "when wrapping the unwrapped model instead (Lightning: FSDPStrategy(auto_wrap_policy=...))")
    if fully_shard_fn is None and is_sharded(model):
        return _apply_to_sharded(model, plan, policies)
    buckets = planned_buckets(plan)
    for name in [n for n, _ in policies] + [n for b in buckets for n in b]:  # every name before anything is wrapped
        _named(model, name)
    # Checkpoint wrappers first: fully_shard then wraps the checkpointed module, as torchtitan does.
    if planned_checkpointing(plan):
        apply_checkpointing(model, plan)
    for k, v in plan_fully_shard_kwargs(plan).items():
        fully_shard_kwargs.setdefault(k, v)
    if any(planned_prefetch(plan).values()):
        warnings.warn("the plan's forward_prefetch / backward_prefetch lists need their units sharded: call "
                      "shardscope.plan.apply_prefetch(model, plan) once the model is (a plan from a profile of a job "
                      "that sets them itself carries the job's lists: nothing to do)", stacklevel=2)
    shard = fully_shard_fn or _default_fully_shard()
    # One call per bucket (fully_shard([m1, m2]): one all-gather for the list) and per other planned
    # module, innermost first: FSDP2 takes the parameters of the innermost call.
    policy_of = dict(policies)
    in_bucket = {n for b in buckets for n in b}
    calls = [([name], policy) for name, policy in policies if name not in in_bucket]
    calls += [(b, _bucket_policy(b, policy_of)) for b in buckets]
    calls.sort(key=lambda c: (-max(_depth(n) for n in c[0]), c[0]))
    applied = []
    for names, policy in calls:
        modules = [_named(model, n) for n in names]
        shard(modules if len(modules) > 1 else modules[0], reshard_after_forward=policy, **fully_shard_kwargs)
        applied += list(zip(names, modules))
    return applied
