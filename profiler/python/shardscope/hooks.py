"""Module and optimizer hooks that turn a PyTorch training loop into named ranges.

Every nn.Module call becomes a range named with the module's fully-qualified name ("layers.3.attn")
and its phase: forward, backward, or recompute (a forward that runs during backward, i.e.
activation checkpointing). Every optimizer step becomes a range "ss:opt:<n>" that closes iteration
n. Module facts (class, parameter count and bytes including children, FSDP unit -- FSDP2,
FSDP1 or SimpleFSDP -- and reshard_after_forward) go to the sidecar file when one is configured.

Two ways in:
  install(backend)          global hooks on every module (what `shardscope record` does through
                            sitecustomize; no change to the training script)
  annotate(model, backend)  hooks on one model only; returns a handle with remove()

Backward ranges: the first gradient reaching any of a module's outputs opens the range; the
gradients of all of its inputs that require grad close it (or the end of the backward pass when
none do). Tensor hooks are used instead of module full-backward hooks, which rewrap outputs and
can break modules with in-place ops or views. With backward_ranges="units" only FSDP units get
backward ranges (forward ranges stay per module): each range is a Python call from autograd, on
its device thread for CUDA tensors.
"""
import sys
import threading
import time
import weakref
from collections import OrderedDict

from . import _names, _pipeline
from ._step_cycle import StepCycle
from .backends import RecordingBackend  # noqa: F401  (re-exported for tests)


def _torch():
    import torch

    return torch


# Set by _bind_torch when the first Tracker is made: looked up per module call, where importing
# torch in every call showed in the hooks' cost.
_Tensor = None
_PLAIN_TENSOR_TYPES = frozenset()  # types whose register_hook is Tensor's own (no subclass dispatch)


def _bind_torch(torch):
    global _Tensor, _PLAIN_TENSOR_TYPES
    _Tensor = torch.Tensor
    _PLAIN_TENSOR_TYPES = frozenset((torch.Tensor, torch.nn.Parameter))


def _flatten_tensors(value, out, depth=0):
    if isinstance(value, _Tensor):
        out.append(value)
    elif depth > 4:
        return
    elif isinstance(value, (list, tuple)):
        for v in value:
            _flatten_tensors(v, out, depth + 1)
    elif isinstance(value, dict):
        for v in value.values():
            _flatten_tensors(v, out, depth + 1)
    elif hasattr(value, "__dataclass_fields__"):
        for k in value.__dataclass_fields__:
            _flatten_tensors(getattr(value, k, None), out, depth + 1)
    return out


def _fsdp_module_class():
    for path in ("torch.distributed.fsdp", "torch.distributed._composable.fsdp"):
        try:
            mod = __import__(path, fromlist=["FSDPModule"])
            cls = getattr(mod, "FSDPModule", None)
            if cls is not None:
                return cls
        except Exception:  # old torch (e.g. Debian's 1.13) has no FSDP2, or its fsdp import fails
            continue
    return None


def _is_simple_fsdp(module):
    """SimpleFSDP (torchtitan's compiler-based FSDP, `data_parallel`) makes each module that holds
    parameters a class named SimpleFSDP<class> whose parameters are DTensor shards, gathered by a
    parametrization each time the module uses them: that module is the unit of one all-gather and
    one reduce-scatter. Eagerly, autograd keeps the gathered tensor for backward (no re-gather):
    reshard_after_forward=False."""
    return type(module).__name__.startswith("SimpleFSDP") and any(True for _ in module.parameters(recurse=False))


# FSDP1 (FullyShardedDataParallel, still the default of Lightning's strategy="fsdp" and of many
# loops) wraps each unit: the wrapper holds the unit's FlatParameter and calls the wrapped module,
# its child named "_fsdp_wrapped_module" (FSDP1's FSDP_WRAPPED_MODULE). Names leave that component
# out, as FSDP1's own state-dict names do, so "layers.3" is the wrapper and the unit; the wrapped
# module is transparent: no range of its own (the wrapper's range holds its unshard and the call).
FSDP1_WRAPPED = "_fsdp_wrapped_module"
# FSDP1 reshards a unit after forward under these strategies (HandleShardingStrategy names;
# torch/distributed/fsdp/_runtime_utils.py, _post_forward_reshard), except the root unit.
_FSDP1_RESHARDING = frozenset(("FULL_SHARD", "HYBRID_SHARD"))


def _fsdp1_class():
    try:
        from torch.distributed.fsdp import FullyShardedDataParallel
    except Exception:
        return None
    return FullyShardedDataParallel


def _fsdp1_handle(module):
    """The FlatParamHandle of an FSDP1 wrapper that shards parameters; None otherwise (a wrapper
    without parameters of its own, NO_SHARD: no all-gather; any other module)."""
    cls = _fsdp1_class()
    if cls is None or not isinstance(module, cls):
        return None
    handle = getattr(module, "_handle", None)
    if handle is None or getattr(handle, "flat_param", None) is None or not getattr(handle, "uses_sharded_strategy", True):
        return None
    return handle


def _fsdp1_info(module):
    handle = _fsdp1_handle(module)
    if handle is None:
        return None
    strategy = getattr(getattr(handle, "_sharding_strategy", None), "name", "")
    # The root's _is_root is None until FSDP1's lazy init in its first forward: refresh_fsdp_units
    # writes the units again after the first step.
    reshards = strategy in _FSDP1_RESHARDING and not getattr(module, "_is_root", False)
    return True, "true" if reshards else "false"


# torch.compile(model) wraps the model in an OptimizedModule that calls it as `_orig_mod`: the
# wrapper stands for the model (its name, its range: the model's own call runs inside the compiled
# frame), and the model's modules keep their names ("_orig_mod.layers.0" -> "layers.0").
COMPILED_WRAPPED = "_orig_mod"
EAGER_RANGE = "_shardscope_eager_range"  # on an FSDP2 unit of a model compiled whole (Tracker._traced_unit)
_WRAPPER_PARTS = (FSDP1_WRAPPED, COMPILED_WRAPPED)


def clean_fqn(name):
    """A module name without FSDP1's or torch.compile's wrapper components
    ("layers.0._fsdp_wrapped_module.attn" -> "layers.0.attn", "_orig_mod.layers.0" -> "layers.0")."""
    if not any(w in name for w in _WRAPPER_PARTS):
        return name
    return ".".join(part for part in name.split(".") if part not in _WRAPPER_PARTS)


def _compiled_inner(module):
    """The model a torch.compile wrapper (OptimizedModule) stands for; the module itself otherwise."""
    inner = getattr(module, COMPILED_WRAPPED, None) if type(module).__name__ == "OptimizedModule" else None
    return inner if inner is not None else module


def fsdp_info(module):
    """(is_fsdp_unit, reshard_policy) for an FSDP2 (fully_shard), FSDP1 (FullyShardedDataParallel)
    or SimpleFSDP module, or a torch.compile wrapper of one; (False, "") otherwise."""
    module = _compiled_inner(module)
    cls = _fsdp_module_class()
    if cls is None or not isinstance(module, cls):
        if _is_simple_fsdp(module):
            return True, "false"
        return _fsdp1_info(module) or (False, "")
    try:
        groups = fsdp2_param_groups(module)
    except Exception:
        return True, ""
    if not groups:
        return True, ""
    # One policy for the unit: fully_shard's reshard_after_forward applies to each of its groups
    # alike (torchtitan's expert parallelism: the dense and the expert parameters of a block are
    # two groups on two meshes); the first group's stands for the unit.
    group = groups[0]
    post = group.post_forward_mesh_info
    if post is None:
        return True, "false"
    if post is group.mesh_info or post == group.mesh_info:
        return True, "true"
    return True, str(getattr(post, "shard_mesh_size", ""))


def _beside_sharded_models(root):
    """Whether `root` holds no FSDP unit while fully_shard has sharded some model of the process
    (FSDP2 makes a class for each class it shards): a frozen encoder run before the trained model
    (a diffusion loop's VAE and text encoder), which is not the model and is named by its class. It
    had been named as the model (""), the trained one called after it by its class ("FSDPNet"), so
    that its plans needed apply_plan(..., root="FSDPNet")."""
    api = sys.modules.get("torch.distributed.fsdp._fully_shard._fully_shard")
    if not getattr(api, "cls_to_fsdp_cls", None):
        return False
    return not any(fsdp_info(m)[0] for m in root.modules())


def fsdp2_param_groups(module):
    """The FSDPParamGroups of an FSDP2 unit: one, or several when fully_shard's shard_placement_fn
    puts parameters on other meshes (ShardPlacementResult; torchtitan's expert parallelism), where
    the singular `_fsdp_param_group` raises. Torch versions before per-parameter meshes have only
    the singular."""
    state = module._get_fsdp_state()
    groups = getattr(state, "_fsdp_param_groups", None)
    if groups is None:
        group = state._fsdp_param_group
        return [group] if group is not None else []
    return list(groups)


def fsdp2_group_sizes(module):
    """[(elements unsharded on this rank, shard mesh size)] of each parameter group of an FSDP2
    unit; [] when it is not one or its groups cannot be read. Several groups: parameters placed on
    other meshes (torchtitan's routed experts on the expert-FSDP mesh, dp_shard / ep ranks: with
    ep = dp_shard a mesh of one rank, never gathered)."""
    cls = _fsdp_module_class()
    if cls is None or not isinstance(module, cls):
        return []
    try:
        return [(sum(p._orig_size.numel() for p in g.fsdp_params), int(g.mesh_info.shard_mesh_size))
                for g in fsdp2_param_groups(module)]
    except Exception:
        return []


def _unit_name(state, names):
    """The name an FSDP2 state's unit has in the profile: its module's, or for a grouped unit its
    earliest-named member's (fsdp_group_owner); None for a state of modules never named."""
    named = [(names.order(m), names.get(m)) for m in getattr(state, "_modules", ()) if names.get(m) is not None]
    return min(named)[1] if named else None


def fsdp_group_owner(module, names):
    """For a module sharded together with others (`fully_shard([model.norm, model.output])`: one
    FSDP unit, one all-gather): the fully-qualified name of the group's first member, which stands
    for the unit, when `module` is another member; "" otherwise. First = earliest in the model's
    named_modules() order (the order FSDP2 names the group in its ranges: "norm, output")."""
    module = _compiled_inner(module)
    cls = _fsdp_module_class()
    if cls is None or not isinstance(module, cls):
        return ""
    try:
        state = module._get_fsdp_state()
    except Exception:
        return ""
    if len(getattr(state, "_modules", ())) < 2:
        return ""
    owner = _unit_name(state, names)
    return "" if owner is None or owner == names.get(module) else owner


def fsdp2_prefetch_lists(module, names):
    """The units an FSDP2 unit prefetches explicitly (FSDPModule.set_modules_to_forward_prefetch /
    set_modules_to_backward_prefetch, as PyTorch's FSDP2 example does two layers ahead), as
    ([forward names], [backward names]), in the order FSDP2 issues them; empty lists when it has
    none (FSDP2's own prefetch: none in forward, the next unit in backward) or is not a unit."""
    module = _compiled_inner(module)
    cls = _fsdp_module_class()
    if cls is None or not isinstance(module, cls):
        return [], []
    try:
        state = module._get_fsdp_state()
        lists = (state._states_to_forward_prefetch, state._states_to_backward_prefetch)
    except Exception:
        return [], []
    return tuple([n for n in (_unit_name(s, names) for s in lst) if n is not None] for lst in lists)


def _fsdp2_unit_groups(module):
    """The FSDPParamGroups of an FSDP2 unit (a torch.compile wrapper stands for the model it wraps);
    [] when `module` is not one or its groups cannot be read."""
    cls = _fsdp_module_class()
    module = _compiled_inner(module)
    if cls is None or not isinstance(module, cls):
        return []
    try:
        return fsdp2_param_groups(module)
    except Exception:
        return []


def model_parallel_dims(module):
    """The mesh dimensions an FSDP2 unit's parameters are sharded over besides FSDP's own, as
    "name=size ..." (torchtitan's tensor parallelism: "tp=2"); "" when none or not a unit. FSDP2
    keeps each parameter's whole mesh (FSDPParam._spmd_mesh) beside its own (mesh_info.mesh)."""
    try:
        for group in _fsdp2_unit_groups(module):
            for fp in group.fsdp_params:
                whole, own = fp._spmd_mesh, fp.mesh_info.mesh
                if whole.ndim <= own.ndim:
                    continue
                names = whole.mesh_dim_names or tuple("dim%d" % i for i in range(whole.ndim))
                mine = set(own.mesh_dim_names or ())
                return " ".join("%s=%d" % (n, s) for n, s in zip(names, whole.shape) if n not in mine)
    except Exception:
        pass
    return ""


def model_parallel_ranks(module):
    """How many ranks an FSDP2 unit's parameters are split over beside FSDP's own: each parameter's
    whole mesh (FSDPParam._spmd_mesh) against the unit's largest FSDP mesh (its dense parameters'),
    the most of them; 1 when none or not a unit. Tensor parallelism: dp x tp over dp, tp. Expert
    parallelism carves its ranks out of the dense parameters' FSDP mesh (torchtitan's experts on
    dp_shard / ep ranks of FSDP, ep of EP): its whole mesh is that mesh, 1."""
    try:
        groups = _fsdp2_unit_groups(module)
        main = max((g.mesh_info.mesh.size() for g in groups), default=1)
        whole = max((fp._spmd_mesh.size() for g in groups for fp in g.fsdp_params
                     if getattr(fp, "_spmd_mesh", None) is not None), default=main)
        return max(1, whole // main) if whole % main == 0 else 1
    except Exception:
        return 1


def fsdp2_dtype_bytes(module):
    """(bytes per element FSDP2 gathers, bytes per element it reduces) for a unit, from its
    MixedPrecisionPolicy as FSDPParam resolved it (param_dtype None: the parameter's own dtype;
    reduce_dtype None: the gathered one); None when it is not a unit or has no parameters."""
    try:
        for group in _fsdp2_unit_groups(module):
            for fp in group.fsdp_params:
                gathered = fp.param_dtype or fp.orig_dtype
                return gathered.itemsize, (fp.reduce_dtype or gathered).itemsize
    except Exception:
        pass
    return None


def fsdp2_shard_group_name(module):
    """The name of the process group an FSDP2 unit shards its parameters over (its first group's
    mesh: the data-parallel dimension), as the profile's collectives name their groups; "" when it
    is not a unit or has none. Beside tensor parallelism it tells FSDP's all-gathers and
    reduce-scatters from sequence parallelism's, which are the same kinds of collective."""
    try:
        groups = _fsdp2_unit_groups(module)
        return str(groups[0].mesh_info.shard_process_group.group_name) if groups else ""
    except Exception:
        return ""


def _fsdp1_parameter_ids(flat):
    """id() of a FlatParameter and of the original parameters it stands for (use_orig_params: the
    modules keep them as views of its shard)."""
    if flat is None:
        return set()
    ids = {id(flat)}
    ids.update(id(p) for p in (getattr(flat, "_params", None) or ()))
    ids.update(id(p) for p in (getattr(flat, "_shared_params", None) or ()))
    return ids


class Fsdp1Sizes:
    """Parameter sizes under FSDP1, whose modules hold only shards: the FlatParameter of each unit
    (use_orig_params=False) or views of its local shard, empty on the ranks that hold none of a
    parameter (use_orig_params=True). Each FlatParameter lists its original parameters with their
    modules and unsharded sizes (_param_infos, _numels): those are the sizes counted, by module."""

    def __init__(self, root):
        self.direct = {}  # id(module) -> [count, bytes] of the original parameters it holds
        self.managed = set()  # id() of the parameters and FlatParameters the handles stand for
        for m in root.modules():
            handle = _fsdp1_handle(m)
            flat = getattr(handle, "flat_param", None)
            infos, numels = getattr(flat, "_param_infos", None), getattr(flat, "_numels", None)
            if infos is None or numels is None:
                continue
            size = flat.element_size()
            for info, n in zip(infos, numels):
                entry = self.direct.setdefault(id(info.module), [0, 0])
                entry[0] += n
                entry[1] += n * size
            self.managed |= _fsdp1_parameter_ids(flat)

    def __bool__(self):
        return bool(self.managed)

    def of(self, module):
        """(count, bytes) of every parameter under the module, at unsharded size."""
        count = nbytes = 0
        for m in module.modules():
            c, b = self.direct.get(id(m), (0, 0))
            count += c
            nbytes += b
        for p in module.parameters():  # parameters FSDP1 does not manage (ignored_states)
            if id(p) not in self.managed:
                count += p.numel()
                nbytes += p.numel() * p.element_size()
        return count, nbytes


def module_params(module, fsdp1=None):
    """(count, bytes) of every parameter under the module (DTensor shards and FSDP1's flat
    parameters count at full size; fsdp1: the tree's Fsdp1Sizes when it has FSDP1 units)."""
    if fsdp1:
        return fsdp1.of(module)
    count = 0
    nbytes = 0
    for p in module.parameters():
        n = p.numel()
        count += n
        nbytes += n * p.element_size()
    return count, nbytes


class _GradEvents:
    """The backward-range events that one tensor's gradient stands for, as one tensor hook: the ranges
    of the modules that took the tensor as an input end (in the order they were armed: inner modules
    first), then those of the modules that returned it begin, outer modules first. A module that
    returns its last child's output (a Sequential, a wrapper) shares that tensor with the child; one
    hook per module and tensor fired in arming order, child first, so the child's backward range began
    before its parent's and its kernels went to the parent (the innermost range is the one that began
    last, module_lanes.h)."""

    __slots__ = ("tracker", "closes", "opens")

    def __init__(self, tracker):
        self.tracker = tracker
        self.closes = []
        self.opens = []

    def __call__(self, grad):
        tracker = self.tracker
        for state in self.closes:
            state.inputs_left -= 1
            if state.inputs_left == 0:
                tracker._close(state)
        for state in reversed(self.opens):
            tracker._open(state)
        return None


def _grad_events(tensor, tracker):
    """The tensor's _GradEvents for this tracker, hooked on at the first call. On a plain tensor it
    goes into the tensor's hook dict as register_hook would put it, without the RemovableHandle
    (these hooks live as long as the graph and are never removed one by one; the handle was a third
    of what arming a backward range cost), keyed by the tracker, where the next module finds it. A
    tensor subclass may route register_hook through __torch_function__: it gets the real call, and a
    _GradEvents per module."""
    plain = type(tensor) in _PLAIN_TENSOR_TYPES
    hooks = tensor._backward_hooks if plain else None
    if hooks is not None:
        events = hooks.get(tracker)
        if events is not None:
            return events
    events = _GradEvents(tracker)
    if not plain:
        tensor.register_hook(events)
        return events
    grad_fn = tensor.grad_fn  # read first, as register_hook does: refreshes a stale view's grad_fn
    if hooks is None:
        hooks = tensor._backward_hooks = OrderedDict()
        if grad_fn is not None:
            grad_fn._register_hook_dict(tensor)
    hooks[tracker] = events
    return events


class _BackwardState:
    """One module call's pending backward range."""

    __slots__ = ("token", "inputs", "inputs_left", "closed", "fqn")

    def __init__(self, inputs_left, fqn):
        self.fqn = fqn
        self.inputs = inputs_left
        self.token = None
        self.inputs_left = inputs_left
        self.closed = False


BACKWARD_RANGE_SCOPES = ("modules", "units")


class Tracker:
    def __init__(self, backend, sidecar=None, backward_ranges="modules"):
        if backward_ranges not in BACKWARD_RANGE_SCOPES:
            raise ValueError("backward_ranges: expected one of %s, not %r" % (BACKWARD_RANGE_SCOPES, backward_ranges))
        self.backend = backend
        self.sidecar = sidecar
        self.enabled = True
        # "units": backward ranges for FSDP units only (the granularity simulate and plan read),
        # each one a Python gradient hook fewer per module call; a tree without units keeps them all.
        self.backward_ranges = backward_ranges
        self._units_only = backward_ranges == "units"  # read per module call: a plain attribute
        self._no_backward_range = weakref.WeakSet()  # modules whose backward range "units" leaves out
        self._names = weakref.WeakKeyDictionary()  # module -> fqn (None: an FSDP1 wrapped module)
        self._wrapped = weakref.WeakKeyDictionary()  # FSDP1's wrapped module -> its wrapper's fqn
        self.restorers = []  # undo what the tracker patched on seeing a model (FSDP1's runtime)
        self._order = weakref.WeakKeyDictionary()  # module -> position in its root's named_modules()
        self._roots = 0
        self._model_parallel_written = False
        self._pipeline = None  # _pipeline.Pipeline once a stage of a pipelined model is called
        self._dtypes_written = False
        # FSDP2 unit -> (fqn, {meta key: the prefetch list last written}): read again at every
        # profiled step's end, since a job may set its lists after the model's first call.
        self._prefetch_lists = weakref.WeakKeyDictionary()
        self._inputs_written = weakref.WeakSet()  # modules whose forward input was looked at (_write_unit_input)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._backward_depth = 0  # fallback "inside backward" when torch lacks _current_graph_task_id
        self._open_backward = set()
        self.step = 0
        # How many times the job called its model (a root named "") since the last step ended. Out
        # of a capture window it is all that tells an evaluation between optimizer steps: the
        # unobserved step it lands in has more calls, and simulate leaves such steps out
        # (sim_inputs.cpp). One forward pre-hook on each model, on while the job runs.
        self.model_calls = 0
        self._counted_models = weakref.WeakSet()
        self._counter_removers = []
        self._step_token = None
        self._cycle = StepCycle()  # which optimizer call ends a training step (_step_cycle.py)
        self._open_optimizers = []  # ids of the optimizer steps running (nested: torchtitan's container)
        self._step_optimizers = []  # every optimizer that stepped in the current training step
        self._previous_end_ns = None  # the end of the latest optimizer call that did not end a step
        self._facts_sent = set()
        self._state_facts_sent = set()
        self._units_refreshed = False
        self.step_callbacks = []  # called at the first optimizer step (e.g. to capture process groups)
        # False outside `record --steps A:B`'s capture window (_window.py): the hooks then only count
        # optimizer steps (and name the model once); no range, fact or backward hook is made.
        self.recording = True
        # Called after every training step with (the step that ended, its end in ns since the
        # epoch, the optimizers that stepped in it): the capture window's step clock.
        self.step_end_callbacks = []
        self.module_hooks = None  # install()'s GlobalModuleHooks (None for annotate()'s per-model hooks)
        self._torch = _torch()
        _bind_torch(self._torch)
        self._graph_task_id = getattr(self._torch._C, "_current_graph_task_id", None)
        compiler = getattr(self._torch, "compiler", None)
        self._compiling = getattr(compiler, "is_compiling", None) or (lambda: False)
        # A model compiled whole (torch.compile(model)) is traced through its FSDP2 units, whose
        # hooks then run nowhere: at a unit they call themselves with Dynamo off, so its range is
        # recorded at run time, at the cost of a graph break at the unit's entry and exit while
        # they record (the capture window). Other modules stay inside the graph, without ranges.
        # Only units that register_root marked (EAGER_RANGE): under a compile that allows graph
        # breaks, not fullgraph=True, and not compiled in place (those have their own wrapper).
        disable = getattr(compiler, "disable", None)
        self._eager_pre = disable(self.forward_pre) if disable else None
        self._eager_post = disable(self.forward_post) if disable else None

    def _traced_unit(self, module):
        # An attribute read: Dynamo traces it as a constant (a lookup in a weak dict of modules
        # it fails on).
        return self._eager_pre is not None and getattr(module, EAGER_RANGE, False)

    def _mark_traced_units(self, root):
        """Under a model compiled whole without fullgraph (the wrapper's dynamo_ctx says so),
        marks its FSDP2 units for ranges at a graph break of their own (_traced_unit)."""
        if type(root).__name__ != "OptimizedModule" or getattr(getattr(root, "dynamo_ctx", None), "fullgraph", True) is not False:
            return
        cls = _fsdp_module_class()
        for m in root.modules():
            if cls is not None and isinstance(m, cls) and getattr(m, "_compiled_call_impl", None) is None:
                setattr(m, EAGER_RANGE, True)

    # -- names ---------------------------------------------------------------------------
    def register_root(self, root, name=None):
        """Names every module under `root`; a later, larger tree renames what it contains."""
        with self._lock:
            if name is None:
                has_params = any(True for _ in root.parameters()) and not _beside_sharded_models(root)
                name = "" if (self._roots == 0 and has_params) else type(root).__name__
                if has_params or self._roots > 0:
                    self._roots += 1
                # A pipeline stage (torch.distributed.pipelining) is a part of the model, its
                # modules under the model's names: a rank's second stage (interleaved schedules)
                # had been named as a second model ("FSDPLlama3Model.layers.3").
                called_by = _pipeline.stage_on_stack() if has_params else None
                if called_by is not None:
                    if self._pipeline is None:
                        self._pipeline = _pipeline.Pipeline()
                    self._pipeline.add(*called_by)
                    name = ""
                    if self.sidecar is not None:
                        self.sidecar.meta("pipeline", self._pipeline.describe())
            if name == "":
                self._count_calls_of(root)
            fsdp1 = False
            for i, (sub, m) in enumerate(root.named_modules()):
                full = sub if not name else (name + "." + sub if sub else name)
                if full.endswith(FSDP1_WRAPPED):  # FSDP1's wrapped module: its wrapper's name and range
                    self._names[m] = None
                    self._wrapped[m] = clean_fqn(full)
                    fsdp1 = True
                elif full.split(".")[-1] == COMPILED_WRAPPED:  # torch.compile's: likewise
                    self._names[m] = None
                    self._wrapped[m] = clean_fqn(full)
                else:
                    self._names[m] = clean_fqn(full)
                self._order[m] = i
            if fsdp1 and not self.restorers:
                self.restorers += _name_fsdp1_units(self)
            self._mark_traced_units(root)
            if self._units_only:
                modules = list(root.modules())
                units = [fsdp_info(m)[0] for m in modules]
                keep_all = not any(units)
                for m, unit in zip(modules, units):
                    if unit or keep_all:
                        self._no_backward_range.discard(m)
                    else:
                        self._no_backward_range.add(m)
        if self.sidecar is not None:
            fsdp1 = Fsdp1Sizes(root)
            for sub, m in root.named_modules():
                if m not in self._wrapped:
                    self._write_module(m, self._names.get(m) or clean_fqn(sub), fsdp1)
            self.sidecar.flush()

    def _count_calls_of(self, model):
        if model not in self._counted_models:
            self._counted_models.add(model)
            self._counter_removers.append(model.register_forward_pre_hook(self._count_model_call).remove)

    def _count_model_call(self, module, inputs):
        # Not inside Dynamo's trace (a model compiled in place): Dynamo would guard on the count
        # and compile again at every call. Such a model's calls are then not counted (all zero).
        if not self._compiling():
            self.model_calls += 1

    def stop_counting_calls(self):
        """Removes the call counters' hooks (uninstall; a benchmark's off mode)."""
        for remove in self._counter_removers:
            remove()
        self._counter_removers = []
        self._counted_models = weakref.WeakSet()

    def take_model_calls(self):
        """The model's calls since the last call of this (the step clock's: one step's calls)."""
        calls, self.model_calls = self.model_calls, 0
        return calls

    def _write_module(self, m, fqn, fsdp1=None):
        count, nbytes = module_params(m, fsdp1)
        unit, policy = fsdp_info(m)
        owner = fsdp_group_owner(m, self)
        # A wrapper (FSDP1's, torch.compile's) stands for the module it wraps: that module's class
        # is the one to show.
        cls = type(getattr(m, FSDP1_WRAPPED, None) or _compiled_inner(m)).__name__
        # A grouped unit's other members are not units of their own: their parameters are the
        # owner's unit's (one all-gather for the group).
        self.sidecar.module(fqn, cls, count, nbytes, unit and not owner, policy, owner)
        if unit and not owner:
            groups = fsdp2_group_sizes(_compiled_inner(m))
            # Tensor (or context) parallelism beside FSDP: FSDP gathers each rank's TP shard of
            # the unit (a DTensor counts at full size in the modules table).
            dims = model_parallel_dims(m)
            if len(groups) > 1 or (groups and dims):
                self.sidecar.meta("param_groups." + fqn, " ".join("%d@%d" % g for g in groups))
            # A pipeline's ranks are the other dimension FSDP does not span (not in a parameter's
            # mesh: each stage holds its own blocks).
            pp = self._pipeline.ranks if self._pipeline is not None and groups else 1
            if pp > 1:
                dims = (dims + " " if dims else "") + "pp=%d" % pp
            # Once: the dimensions, and FSDP's own process group, which tells its collectives from
            # the other dimensions' in the profile.
            if dims and not self._model_parallel_written:
                self.sidecar.meta("model_parallel", dims)
                ranks, group = model_parallel_ranks(m) * pp, fsdp2_shard_group_name(m)
                if ranks > 1 and group:
                    self.sidecar.meta("model_parallel_ranks", str(ranks))
                    self.sidecar.meta("fsdp_group", group)
                self._model_parallel_written = True
            # The dtypes FSDP gathers and reduces in, for a replay with no FSDP collective to read
            # them from (FSDP over one rank beside tensor parallelism).
            dtypes = None if self._dtypes_written else fsdp2_dtype_bytes(m)
            if dtypes:
                self.sidecar.meta("fsdp_dtype_bytes", "%d %d" % dtypes)
                self._dtypes_written = True
            self._prefetch_lists[m] = (fqn, {})
            self._write_prefetch_lists(m)

    def _write_prefetch_lists(self, m):
        """The job's own prefetch lists of unit `m` where they changed since last written: the
        replay at the recorded plan issues its all-gathers as they did (a unit two ahead holds its
        parameters that much earlier). The last value of a key is the profile's: lists set after
        the first step (or cleared) are the ones the steps after it ran with."""
        fqn, written = self._prefetch_lists[m]
        for phase, targets in zip(("forward", "backward"), fsdp2_prefetch_lists(m, self)):
            key, value = phase + "_prefetch." + fqn, " ".join(targets)
            if written.get(key, "") != value:
                self.sidecar.meta(key, value)
                written[key] = value

    def get(self, module):
        return self._names.get(module)

    def has_named_modules(self):
        """Whether some module has been named (a model has been seen)."""
        return len(self._names) > 0

    def order(self, module):
        return self._order.get(module, 1 << 30)

    def name_of(self, module):
        """The module's fully-qualified name; None for a module outside every model that runs
        inside another module's forward and holds no parameters (a parametrization such as
        SimpleFSDP's ReplicateComputation, called when its owner reads a weight): its work is its
        caller's, it gets no range and no invented root of its own."""
        name = self._names.get(module)
        if name is None:
            if module in self._wrapped:
                return None
            if self._stack() and not any(True for _ in module.parameters()):
                return None
            self.register_root(module)
            name = self._names.get(module, "")
        return name

    def _name_outside_window(self, module):
        """Outside a capture window: the first model called is named (its whole tree, once), so
        that the tensors alive when the window starts can be given their modules. Modules without
        parameters (parametrizations, losses) are left for the window's own hooks."""
        # Compiling first: Dynamo tracing the lookup in the names (a WeakKeyDictionary keyed by the
        # module it traces) failed the job's compile ("FSDPManagedNNModuleVariable ... already
        # tracked for mutation") under record --steps A:B with A > 0.
        if self._compiling() or not self.enabled or module in self._names:
            return
        try:
            if any(True for _ in module.parameters()):
                self.register_root(module)
        except Exception:
            self._fail("forward_pre")

    # -- phases --------------------------------------------------------------------------
    def in_backward(self):
        task = self._graph_task_id
        if task is not None:
            return task() != -1
        return self._backward_depth > 0

    def _stack(self):
        s = getattr(self._local, "stack", None)
        if s is None:
            s = self._local.stack = []
        return s

    # -- forward hooks -------------------------------------------------------------------
    def forward_pre(self, module, inputs):
        # Inside torch.compile's tracing the hooks add nothing to the graph (they would break a
        # fullgraph=True compile); a compiled module's own range comes from _compiled_call below.
        if not self.recording:
            self._name_outside_window(module)
            return
        if not self.enabled:
            return
        if self._compiling():
            if self._traced_unit(module):
                self._eager_pre(module, inputs)
            return
        try:
            phase = _names.RECOMPUTE if self.in_backward() else _names.FORWARD
            fqn = self.name_of(module)
            if fqn is None:
                return
            token = self.backend.start(_names.module_message(phase, fqn))
            self._stack().append((module, token, fqn, inputs))
        except Exception:
            self._fail("forward_pre")

    def forward_post_kw(self, module, inputs, *rest):
        """forward_post as torch calls a hook registered with_kwargs=True: (kwargs, output), but
        after the forward raised (checkpointing's early-stopped recomputation) torch calls an
        always_call hook with (output) alone. Taking only the first form, that call failed (torch
        silences it), the module's stack entry stayed and held the recomputed graph: a
        checkpointed job's activations alive to the end of backward (677,548 vs 63,500 B)."""
        kwargs, output = rest if len(rest) == 2 else (None, rest[0] if rest else None)
        self.forward_post(module, inputs, output, kwargs)

    def forward_post(self, module, inputs, output, kwargs=None):
        if not self.recording or not self.enabled:
            return
        if self._compiling():
            if self._traced_unit(module):
                self._eager_post(module, inputs, output, kwargs)
            return
        try:
            stack = self._stack()
            if not stack or (stack[-1][0] is not module and not any(entry[0] is module for entry in stack)):
                return  # no range was opened for it (name_of returned None)
            # Pop to this module's entry (a module that raised inside may have left entries).
            while True:
                m, token, fqn, saved_inputs = stack.pop()
                self.backend.end(token)
                if m is module:
                    break
            # Recomputed forwards build the graph backward runs through.
            if self._torch.is_grad_enabled() and not (self._units_only and module in self._no_backward_range):
                self._arm_backward(fqn, (saved_inputs, kwargs), output)
            if module not in self._inputs_written:
                self._write_unit_input(module, fqn, (saved_inputs, kwargs))
        except Exception:
            self._fail("forward_post")

    def _write_unit_input(self, module, fqn, inputs):
        """Once per FSDP unit, at its first call in the window: the bytes of what its forward
        receives that needs a gradient (meta rank<R>.unit_input.<fqn>). That is the activation a
        block is handed: what full activation checkpointing keeps of the block, and what a
        pipeline stage sends on. A profile had no such size, so a checkpointing what-if kept
        nothing of a checkpointed block and a pipeline what-if sent 0 bytes (docs/simulator.md).
        Storages, each once: the tensor the previous block made is what stays alive."""
        self._inputs_written.add(module)
        if self.sidecar is None or self.in_backward() or not fsdp_info(module)[0]:
            return
        seen, total = set(), 0
        try:
            for t in _flatten_tensors(inputs, []):
                if not t.requires_grad:
                    continue
                local = getattr(t, "_local_tensor", t)  # a DTensor: this rank's shard
                storage = local.untyped_storage()
                if storage.data_ptr() not in seen:
                    seen.add(storage.data_ptr())
                    total += storage.nbytes()
        except Exception:  # a tensor subclass without a storage: the size stays unknown
            return
        self.sidecar.meta("unit_input." + fqn, total)

    # -- backward ------------------------------------------------------------------------
    def _arm_backward(self, fqn, inputs, output):
        # `inputs`: the call's positional and keyword arguments. A module called with its input
        # as a keyword (diffusers' blocks: block(hidden_states=h, temb=t)) had no input that
        # needed a gradient: its backward range ran to the end of the backward pass, over every
        # unit after it (a block's segment took the whole backward in the replay).
        outs = [t for t in _flatten_tensors(output, []) if t.requires_grad]
        if not outs:
            return
        ins = [t for t in _flatten_tensors(inputs, []) if t.requires_grad]
        state = _BackwardState(len(ins), fqn)
        for t in outs:
            _grad_events(t, self).opens.append(state)
        for t in ins:
            _grad_events(t, self).closes.append(state)

    def _open(self, state):
        if state.token is None and not state.closed and self.enabled:
            state.token = self.backend.start(_names.module_message(_names.BACKWARD, state.fqn))
            with self._lock:
                self._open_backward.add(state)
            if state.inputs_left == 0:
                if state.inputs:  # its inputs' gradients came first (a module returning its input)
                    self._close(state)
                else:  # no input needs a gradient: it ends with the backward pass
                    self._close_at_backward_end(state)

    def _close(self, state):
        if state.token is None or state.closed:
            return
        state.closed = True
        with self._lock:
            self._open_backward.discard(state)
        self.backend.end(state.token)

    def _close_at_backward_end(self, state):
        torch = _torch()
        try:
            torch.autograd.Variable._execution_engine.queue_callback(lambda: self._close(state))
        except Exception:
            pass

    def close_open_backward(self):
        """Ends backward ranges whose inputs' gradients never arrived (called at optimizer steps)."""
        with self._lock:
            pending = list(self._open_backward)
        for s in pending:
            self._close(s)

    # -- optimizer -----------------------------------------------------------------------
    def _param_owners(self):
        """id(parameter) -> fully-qualified name of the module that holds it directly."""
        owners = {}
        for m, fqn in list(self._names.items()):
            for _, p in m.named_parameters(recurse=False):  # FSDP1's FlatParameter: its wrapper's unit
                owners.setdefault(id(p), fqn if fqn is not None else self._wrapped.get(m))
        return owners

    def _sharded_ids(self):
        """id() of the FSDP1-managed parameters (FlatParameters, or their views with
        use_orig_params): sharded, like FSDP2's DTensors."""
        managed = set()
        for m in list(self._names.keys()):
            managed |= _fsdp1_parameter_ids(getattr(_fsdp1_handle(m), "flat_param", None))
        return managed

    @staticmethod
    def _parameter_kind(p, fsdp1_sharded):
        """A parameter's memory category: FSDP2's DTensors and FSDP1's managed parameters are shards."""
        return "sharded_parameter" if hasattr(p, "to_local") or id(p) in fsdp1_sharded else "unsharded_parameter"

    def _fact(self, kind, tensor, owner, seen):
        local = tensor.to_local() if hasattr(tensor, "to_local") else tensor
        try:
            addr = local.untyped_storage().data_ptr()
        except Exception:
            return
        if addr and addr not in seen:
            seen.add(addr)
            self.backend.fact(_names.tensor_fact_message(kind, addr, owner))

    def tensor_facts(self, optimizer):
        """Tells the trace which allocations hold the parameters (once per optimizer): a DTensor
        parameter's local storage is FSDP's sharded parameter, a plain one a whole parameter, each
        with the module that owns it. The importer gives those allocations that category and module
        (profiler/common/memory_categories.h). Only backends that write into a trace
        (ProfilerBackend) take facts.
        The gradients the step reads are told too: a job that zeroes them in place
        (zero_grad(set_to_none=False), torchtitan's default) keeps the first step's for the whole
        run (FSDP2's first reduce output; later steps add theirs into it and free them at once),
        and a CPU trace records no free of such a block, as of one lost on gloo's worker thread:
        named, it is not taken for one (lost_frees.h)."""
        if (not self.recording or getattr(self.backend, "fact", None) is None or optimizer is None
                or id(optimizer) in self._facts_sent):
            return
        self._facts_sent.add(id(optimizer))
        owners = self._param_owners()
        sharded = self._sharded_ids()
        seen = set()
        for group in getattr(optimizer, "param_groups", []):
            for p in group.get("params", []):
                self._fact(self._parameter_kind(p, sharded), p, owners.get(id(p)), seen)
                if p.grad is not None:
                    self._fact("gradient", p.grad, owners.get(id(p)), seen)

    def optimizer_state_facts(self, optimizer):
        """After the first step: the optimizer's state tensors, each with its parameter's module."""
        if (not self.recording or getattr(self.backend, "fact", None) is None or optimizer is None
                or id(optimizer) in self._state_facts_sent):
            return
        self._state_facts_sent.add(id(optimizer))
        owners = self._param_owners()
        seen = set()
        for p, state in getattr(optimizer, "state", {}).items():
            for value in state.values() if isinstance(state, dict) else []:
                if isinstance(value, self._torch.Tensor) and value.numel() > 0:
                    self._fact("optimizer_state", value, owners.get(id(p)), seen)

    def live_facts(self, optimizers):
        """A capture window starts (record --steps A:B, A > 0): the parameters, their gradients and
        the optimizer's state were allocated before the trace began, so it has no allocation
        event for them. Each storage alive now is told with its size ("ss:live:..."): the importer
        makes the allocation and its category from it, so the window's memory is that of the job
        by category. torch.profiler reports no free of such a block on a CPU: a weakref finalizer
        on each storage (storages keep their Python object while alive, as FSDPMemTracker relies
        on) tells its death ("ss:freed:<address>"). Nothing holds the tensors."""
        if getattr(self.backend, "fact", None) is None or not optimizers:
            return
        for optimizer in optimizers:
            self._facts_sent.add(id(optimizer))
            self._state_facts_sent.add(id(optimizer))
        owners = self._param_owners()
        sharded = self._sharded_ids()
        seen = set()
        torch = self._torch

        def tell(kind, tensor, owner):
            local = tensor.to_local() if hasattr(tensor, "to_local") else tensor
            try:
                storage = local.untyped_storage()
                addr, nbytes = storage.data_ptr(), storage.nbytes()
            except Exception:
                return
            if addr and nbytes and addr not in seen:
                seen.add(addr)
                self.backend.fact(_names.live_tensor_message(kind, addr, nbytes, owner))
                try:
                    weakref.finalize(storage, self._live_freed, addr).atexit = False
                except TypeError:  # a storage type without weak references: its free stays unknown
                    pass

        for optimizer in optimizers:  # several (a loop with two optimizers; a container and its own): told once
            for group in getattr(optimizer, "param_groups", []):
                for p in group.get("params", []):
                    owner = owners.get(id(p))
                    tell(self._parameter_kind(p, sharded), p, owner)
                    if p.grad is not None:
                        tell("gradient", p.grad, owner)
            for p, state in getattr(optimizer, "state", {}).items():
                for value in state.values() if isinstance(state, dict) else []:
                    if isinstance(value, torch.Tensor) and value.numel() > 0:
                        tell("optimizer_state", value, owners.get(id(p)))

    def _live_freed(self, address):
        try:
            self.backend.fact(_names.freed_tensor_message(address))
        except Exception:  # runs wherever the storage dies (any thread): never raise there
            pass

    def refresh_fsdp_units(self):
        """Writes the FSDP units' facts again once training has run: FSDP2 settles some only at
        its lazy init in the first forward (the root's reshard_after_forward becomes False), after
        the module tree was first written. Later sidecar lines replace earlier ones."""
        if self.sidecar is None or self._units_refreshed:
            return
        self._units_refreshed = True
        for m, fqn in list(self._names.items()):
            if fqn is not None and fsdp_info(m)[0]:
                self._write_module(m, fqn, Fsdp1Sizes(m))

    def optimizer_pre(self, *args, **kwargs):
        if not self.enabled:
            return
        optimizer = args[0] if args else None
        key = None if optimizer is None else id(optimizer)
        if key in self._open_optimizers:  # a step of it that raised never ended: forget what was open
            self._open_optimizers.clear()
        self._open_optimizers.append(key)
        outer = len(self._open_optimizers) == 1
        if outer and self._cycle.begin(key):
            self._end_step(self._previous_end_ns)
        try:
            self.tensor_facts(optimizer)
            if optimizer is not None and all(o is not optimizer for o in self._step_optimizers):
                self._step_optimizers.append(optimizer)
            if not self._units_refreshed:
                for cb in self.step_callbacks:
                    cb()
            self.refresh_fsdp_units()
        except Exception:
            self._fail("tensor_facts")
        if not outer:
            return
        self.close_open_backward()
        number = self.step - 1 if self._cycle.continues_previous else self.step
        self._step_token = self.backend.start(_names.optimizer_message(number))

    def optimizer_post(self, *args, **kwargs):
        if not self.enabled:
            return
        end_ns = time.time_ns()
        optimizer = args[0] if args else None
        key = None if optimizer is None else id(optimizer)
        try:
            self.optimizer_state_facts(optimizer)
        except Exception:
            self._fail("optimizer_state_facts")
        if key in self._open_optimizers:
            del self._open_optimizers[self._open_optimizers.index(key):]
        if self._open_optimizers or self._step_token is None:
            return  # a step inside another optimizer's (torchtitan's container): the outer one counts
        self.backend.end(self._step_token)
        self._step_token = None
        if self._cycle.end(key):
            self._end_step(end_ns)
        else:
            self._previous_end_ns = end_ns

    def _end_step(self, end_ns):
        optimizers, self._step_optimizers = self._step_optimizers, []
        self.step += 1
        if self.sidecar is not None:
            if self.recording:  # a profiled step's end: the lists it ran with (8 us a unit; benchmarks.md)
                for m in list(self._prefetch_lists.keys()):
                    self._write_prefetch_lists(m)
            self.sidecar.flush()
        for cb in self.step_end_callbacks:
            cb(self.step - 1, end_ns, optimizers)

    def _fail(self, where):
        # Never break the job: switch ourselves off after the first error.
        import sys
        import traceback

        self.enabled = False
        sys.stderr.write("[shardscope] module hooks disabled after an error in %s:\n" % where)
        traceback.print_exc()


class _Handle:
    def __init__(self, tracker, removers):
        self.tracker = tracker
        self._removers = removers

    def remove(self):
        for r in self._removers + self.tracker.restorers + [self.tracker.stop_counting_calls]:
            try:
                r()
            except Exception:
                pass
        self._removers = []
        self.tracker.restorers = []
        self.tracker.enabled = False


_global = None


def _patch_backward_entry(tracker):
    """Counts backward passes for torch versions without _current_graph_task_id (e.g. 1.13)."""
    torch = _torch()
    if hasattr(torch._C, "_current_graph_task_id"):
        return []
    originals = (torch.autograd.backward, torch.autograd.grad)

    def wrap(fn):
        def wrapper(*a, **k):
            tracker._backward_depth += 1
            try:
                return fn(*a, **k)
            finally:
                tracker._backward_depth -= 1

        wrapper.__wrapped__ = fn
        return wrapper

    torch.autograd.backward = wrap(originals[0])
    torch.autograd.grad = wrap(originals[1])

    def restore():
        torch.autograd.backward, torch.autograd.grad = originals

    return [restore]


def _hook_optimizers(tracker, optimizer=None):
    """Global optimizer step hooks (torch >= 2.0) or a wrapper around each optimizer's step."""
    torch = _torch()
    removers = []
    if optimizer is not None:
        if hasattr(optimizer, "register_step_pre_hook"):
            removers.append(optimizer.register_step_pre_hook(tracker.optimizer_pre).remove)
            removers.append(optimizer.register_step_post_hook(tracker.optimizer_post).remove)
        else:
            original = optimizer.step

            def step(*a, **k):
                tracker.optimizer_pre()
                try:
                    return original(*a, **k)
                finally:
                    tracker.optimizer_post()

            optimizer.step = step
            removers.append(lambda: setattr(optimizer, "step", original))
        return removers
    opt_mod = torch.optim.Optimizer.__module__
    opt_module = __import__(opt_mod, fromlist=["x"])
    if hasattr(opt_module, "register_optimizer_step_pre_hook"):
        removers.append(opt_module.register_optimizer_step_pre_hook(tracker.optimizer_pre).remove)
        removers.append(opt_module.register_optimizer_step_post_hook(tracker.optimizer_post).remove)
        return removers
    # torch < 2.0: wrap each optimizer class's step once, at the first construction.
    Optimizer = torch.optim.Optimizer
    original_init = Optimizer.__init__

    def init(self, *a, **k):
        original_init(self, *a, **k)
        cls = type(self)
        if not getattr(cls.step, "_shardscope", False):
            inner = cls.step

            def step(opt, *sa, **sk):
                tracker.optimizer_pre()
                try:
                    return inner(opt, *sa, **sk)
                finally:
                    tracker.optimizer_post()

            step._shardscope = True
            step.__wrapped__ = inner
            cls.step = step

    Optimizer.__init__ = init
    removers.append(lambda: setattr(Optimizer, "__init__", original_init))
    return removers


def _name_fsdp1_units(tracker):
    """FSDP1's own ranges name no unit ("FullyShardedDataParallel._pre_forward"), and its backward
    prefetch unshards layers.2 from inside layers.3's backward: a collective would go to the module
    that issued it, not the unit it gathers. So each unshard (FSDP1's _runtime_utils._unshard: its
    pre-forward, pre-backward and prefetches) runs inside a range "FSDP::unshard (<fqn>)" and each
    gradient reduction (_reduce_grad) inside "FSDP::post_backward_reduce (<fqn>)", FSDP2's name for
    the same, in ShardScope's CPU trace: the importer gives the collectives, the unsharded
    FlatParameter and the reduce-scatter buffers to that unit, and the thread's wait on gloo there
    is communication, not compute. Only into the trace ShardScope records (the backend's `trace`);
    the job's own profiler and NVTX get nothing."""
    try:
        from torch.distributed.fsdp import _runtime_utils
    except Exception:  # a torch without FSDP1
        return []
    restorers = []
    # An unshard of a unit that is unsharded already (the root in backward) gathers nothing: no range.
    gathers = lambda handle: getattr(handle, "needs_unshard", lambda: True)()
    for function, message, when in (("_unshard", _names.fsdp_unshard_message, gathers),
                                    ("_reduce_grad", _names.fsdp_reduce_message, lambda handle: True)):
        original = getattr(_runtime_utils, function, None)
        if original is None or getattr(original, "_shardscope", False):
            continue
        wrapper = _in_unit_range(tracker, original, message, when)
        setattr(_runtime_utils, function, wrapper)
        restorers.append(lambda f=function, w=wrapper, o=original: getattr(_runtime_utils, f) is w and setattr(_runtime_utils, f, o))
    return restorers


def _in_unit_range(tracker, original, message, when):
    """original(state, handle, ...) inside a trace range message(<fqn of the handle's unit>) where
    when(handle) says so."""

    def wrapper(state, handle, *args, **kwargs):
        trace = token = None
        try:  # never into FSDP's way: an error here switches the hooks off, the call goes on
            trace = getattr(tracker.backend, "trace", None)
            if trace is not None and tracker.recording and tracker.enabled and handle is not None and when(handle):
                module = getattr(handle, "_fully_sharded_module", None)
                fqn = tracker._wrapped.get(module) if module is not None else None
                if fqn is not None:
                    token = trace.start(message(fqn))
        except Exception:
            tracker._fail(original.__name__)
        try:
            return original(state, handle, *args, **kwargs)
        finally:
            if token is not None:
                trace.end(token)

    wrapper._shardscope = True
    return wrapper


def _hook_compiled_modules(tracker):
    """A module compiled in place (`module.compile()`, as torchtitan compiles each block) runs its
    forward hooks inside the compiled region, where they do nothing: its range is opened and closed
    around the compiled call instead, outside the graph (its children stay inside: no ranges)."""
    torch = _torch()
    Module = torch.nn.Module
    original = Module.__call__
    wrapper = original
    while wrapper is not None:  # ours already in place (maybe under another library's wrapper)
        if getattr(wrapper, "_shardscope", False):
            return []
        wrapper = getattr(wrapper, "__wrapped__", None)

    def __call__(self, *args, **kwargs):
        if getattr(self, "_compiled_call_impl", None) is None or tracker._compiling() or not tracker.enabled:
            return original(self, *args, **kwargs)
        tracker.forward_pre(self, args)
        out = original(self, *args, **kwargs)
        tracker.forward_post(self, args, out, kwargs)
        return out

    __call__._shardscope = True
    __call__.__wrapped__ = original
    Module.__call__ = __call__

    def restore():
        # Not over another library's patch made after ours: then ours stays in its chain (found
        # above when the hooks come back), passing calls through while the tracker does not record.
        if Module.__call__ is __call__:
            Module.__call__ = original

    return [restore]


def _register_forward_post(register, tracker):
    """Registers the tracker's forward hook with the call's keyword arguments (the inputs whose
    gradients end a module's backward range, _arm_backward), to run even when the forward raises.
    Activation checkpointing stops a recomputation early by raising inside the module
    (_StopRecomputationError): without always_call the module's range would stay open and its stack
    entry would keep the recomputed inputs, and with them each step's graph, alive for the rest of
    the run. Older torch has neither option (always_call: 2.1)."""
    for options in ({"with_kwargs": True, "always_call": True}, {"always_call": True}, {}):
        hook = tracker.forward_post_kw if options.get("with_kwargs") else tracker.forward_post
        try:
            return register(hook, **options)
        except TypeError:
            continue
    raise RuntimeError("cannot register a forward hook")


class GlobalModuleHooks:
    """install()'s hooks on every module call of the process, switched off where they have nothing
    to do: outside a capture window once the model is named (_window.py). Hooks that only return
    still cost every module call ~5 us of CPU (torch's call path with global hooks, the compiled-
    module wrapper, our checks; bench_hook_cost.py's `outside` on a chain of small modules), which
    a launch-bound GPU step pays in full; switched off, a module call costs the job nothing."""

    def __init__(self, tracker):
        self.tracker = tracker
        self._removers = None

    @property
    def on(self):
        return self._removers is not None

    def switch(self, on):
        if on == self.on:
            return
        if not on:
            for remove in self._removers:
                remove()
            self._removers = None
            return
        mm = _torch().nn.modules.module
        self._removers = [
            mm.register_module_forward_pre_hook(self.tracker.forward_pre).remove,
            _register_forward_post(mm.register_module_forward_hook, self.tracker).remove,
        ]
        self._removers += _patch_backward_entry(self.tracker)
        self._removers += _hook_compiled_modules(self.tracker)


def install(backend, sidecar=None, modules=True, backward_ranges="modules"):
    """Global hooks on every module (unless modules=False: optimizer steps only) and optimizer.
    Returns the handle (also kept module-wide); its tracker's module_hooks switches the module
    hooks (None with modules=False). backward_ranges: "modules" or "units" (Tracker)."""
    global _global
    if _global is not None:
        return _global
    tracker = Tracker(backend, sidecar, backward_ranges)
    removers = []
    if modules:
        tracker.module_hooks = GlobalModuleHooks(tracker)
        tracker.module_hooks.switch(True)
        removers.append(lambda: tracker.module_hooks.switch(False))
        from ._fsdp_methods import hook_fsdp_forward_methods

        removers += hook_fsdp_forward_methods(tracker)
        _quiet_compile_wrapper_warning()
    removers += _hook_optimizers(tracker)
    _global = _Handle(tracker, removers)
    return _global


def _quiet_compile_wrapper_warning():
    """torch.compile(model)'s wrapper warns at each call site of every rank while any global module
    hook exists (ours are): "the hooks fire an extra time for the OptimizedModule". Ours take the
    wrapper for the model it wraps (one range, not two), so the warning says nothing of the job and
    was the only trace of record in its output. (A job with global hooks of its own loses it too.)"""
    import warnings

    warnings.filterwarnings("ignore", message=r"Using `torch\.compile\(module\)` when there are global hooks",
                            category=UserWarning)


def uninstall():
    global _global
    if _global is not None:
        _global.remove()
        _global = None


def annotate(model, backend=None, optimizer=None, sidecar=None, backward_ranges="modules"):
    """Hooks on `model`'s modules only (and `optimizer`'s steps when given). Returns a handle.
    Call it after fully_shard when backward_ranges="units" (the units are found here)."""
    if backend is None:
        from .backends import NvtxBackend

        backend = NvtxBackend()
    tracker = Tracker(backend, sidecar, backward_ranges)
    tracker.register_root(model, name="")
    removers = []
    for m in model.modules():
        removers.append(m.register_forward_pre_hook(tracker.forward_pre).remove)
        removers.append(_register_forward_post(m.register_forward_hook, tracker).remove)
    removers += _patch_backward_entry(tracker)
    if optimizer is not None:
        removers += _hook_optimizers(tracker, optimizer)
    return _Handle(tracker, removers)
