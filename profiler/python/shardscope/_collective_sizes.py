"""Collective sizes for the CPU trace without torch.profiler's record_shapes.

record_shapes makes the profiler keep every operator's input shapes, which costs time on every
operator and breaks meta-device initialisation (`to_empty()` cannot swap a parameter the profiler
has seen: "Expected no weakrefs to t1's Tensor object"). The sizes a profile needs are only those
of the collectives, and the program hands them to torch.distributed: each collective API called
from Python (what FSDP2, DTensor and training loops call) is wrapped here in a range named

    ss:cb:<elements>:<dtype>

around the call, so the `c10d::*` operator it issues carries that size in the trace; the Kineto
importer reads it for an operator that has no shapes (docs/importers.md). Elements follow the
importer's convention for c10d operators: an all-gather's output, a reduce-scatter's input, the
buffer of an all-reduce / broadcast / send / recv, an all-to-all's input. Nested wrapped calls
(funcol's all_gather_tensor calling all_gather_single) annotate once. Inside torch.compile's
tracing nothing is added (the collective goes into the graph as it is).
"""
import inspect
import sys
import threading

_local = threading.local()
enabled = False  # set while ShardScope's CPU trace records (_cpu_trace.py)

# torch dtype -> the spelling the profiler writes in "Input type" (so profiles with and without
# shapes store the same dtype text).
_KINETO_DTYPE = {
    "torch.float32": "float", "torch.float64": "double", "torch.float16": "c10::Half",
    "torch.bfloat16": "c10::BFloat16", "torch.int64": "long int", "torch.int32": "int",
    "torch.int16": "short int", "torch.int8": "signed char", "torch.uint8": "unsigned char", "torch.bool": "bool",
}


def _numel(t):
    return t.numel() if t is not None and hasattr(t, "numel") else None


def _list_numel(ts):
    try:
        return sum(t.numel() for t in ts)
    except Exception:
        return None


def _first_dtype(*values):
    for v in values:
        if isinstance(v, (list, tuple)):
            v = v[0] if v else None
        if v is not None and hasattr(v, "dtype"):
            return v.dtype
    return None


def _group_size(group):
    try:
        import torch.distributed._functional_collectives as funcol
        import torch.distributed.distributed_c10d as c10d

        return c10d._get_group_size_by_name(funcol._resolve_group_name(group))
    except Exception:
        return None


# name -> (parameter whose elements count, how): "tensor" its numel, "list" the sum over a list,
# "gathered" numel x the group's size (funcol's all-gathers take the shard).
_C10D = {
    "all_gather_single": ("output_tensor", "tensor"), "all_gather_into_tensor": ("output_tensor", "tensor"),
    "_all_gather_base": ("output_tensor", "tensor"),
    "reduce_scatter_single": ("input", "tensor"), "reduce_scatter_tensor": ("input", "tensor"),
    "_reduce_scatter_base": ("input", "tensor"),
    "all_reduce": ("tensor", "tensor"), "broadcast": ("tensor", "tensor"), "reduce": ("tensor", "tensor"),
    "all_gather": ("tensor_list", "list"), "reduce_scatter": ("input_list", "list"),
    "all_to_all_single": ("input", "tensor"),
    "all_to_all": ("input_tensor_list", "list"),  # spmd_types' all_to_all (torchtitan's expert dispatch)
    # Not send / recv / isend / irecv: P2POp checks its op *is* torch.distributed's isend / irecv
    # (pipelining stores and calls them), so they keep their identity. Point-to-point calls are
    # sized one level down instead, where every one of them passes: ProcessGroup.send / recv
    # (_cpu_trace._annotate_p2p, with sized() below).
}
_FUNCOL = {
    "all_reduce": ("self", "tensor"), "broadcast": ("self", "tensor"), "all_to_all_single": ("self", "tensor"),
    "reduce_scatter_single": ("self", "tensor"), "reduce_scatter_tensor": ("self", "tensor"),
    "all_gather_single": ("self", "gathered"), "all_gather_tensor": ("self", "gathered"),
}


def _wrap(module, name, spec, record_function, is_compiling):
    fn = getattr(module, name, None)
    if fn is None or getattr(fn, "_shardscope_sized", False):
        return
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    param, how = spec
    if param not in sig.parameters:
        return
    index = list(sig.parameters).index(param)

    def sized(*args, **kwargs):
        if is_compiling() or not enabled or getattr(_local, "inside", False):  # compiling first: Dynamo traces no thread-local
            return fn(*args, **kwargs)
        label = None
        try:
            value = args[index] if index < len(args) else kwargs.get(param)
            n = _list_numel(value) if how == "list" else _numel(value)
            if n is not None and how == "gathered":
                g = _group_size(args[2] if len(args) > 2 else kwargs.get("group"))
                n = n * g if g else None
            dtype = _first_dtype(value)
            if n is not None and dtype is not None:
                label = "ss:cb:%d:%s" % (n, _KINETO_DTYPE.get(str(dtype), str(dtype)))
        except Exception:
            label = None
        if label is None:
            return fn(*args, **kwargs)
        _local.inside = True
        try:
            with record_function(label):
                return fn(*args, **kwargs)
        finally:
            _local.inside = False

    sized._shardscope_sized = True
    sized.__wrapped__ = fn
    sized.__name__ = getattr(fn, "__name__", name)
    sized.__doc__ = getattr(fn, "__doc__", None)
    setattr(module, name, sized)


class _Sized:
    """Context: the "ss:cb" range around one call that moves `tensors` (for callers that wrap a
    call themselves, as _cpu_trace's ProcessGroup.send / recv wrapper); nothing when the trace is
    off, inside another sized call, or the size is unknown."""

    def __init__(self, tensors, record_function):
        self._range = None
        if not enabled or getattr(_local, "inside", False):
            return
        n, dtype = _list_numel(tensors), _first_dtype(tensors)
        if n is not None and dtype is not None:
            self._range = record_function("ss:cb:%d:%s" % (n, _KINETO_DTYPE.get(str(dtype), str(dtype))))

    def __enter__(self):
        if self._range is not None:
            _local.inside = True
            self._range.__enter__()
        return self

    def __exit__(self, *exc):
        if self._range is not None:
            self._range.__exit__(*exc)
            _local.inside = False
        return False


def sized(tensors, record_function):
    return _Sized(tensors, record_function)


def install():
    """Wraps torch.distributed's and its functional collectives' Python APIs (once)."""
    try:
        import torch
        import torch.distributed as dist

        if not dist.is_available():
            return
        record_function = torch.profiler.record_function
        is_compiling = getattr(torch.compiler, "is_compiling", lambda: False)
        for name, spec in _C10D.items():
            _wrap(dist, name, spec, record_function, is_compiling)
        import torch.distributed._functional_collectives as funcol

        for name, spec in _FUNCOL.items():
            _wrap(funcol, name, spec, record_function, is_compiling)
    except Exception as e:  # never break the job
        sys.stderr.write("[shardscope] collective sizes not annotated: %r\n" % (e,))
