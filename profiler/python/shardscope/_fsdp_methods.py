"""FSDP2's registered forward methods (`register_fsdp_forward_method(model, "generate")`) recorded as
calls of their module.

A generation method that runs the model's parts itself (an RLHF rollout's decode loop: the
embeddings, the blocks, the head; not `self(x)`) is no module call, so the global module hooks do
not see it: FSDP2 gathers the model's own parameters for it, but its first module call was the
embedding, which the hooks then named as the model (and each block as a model of its own), and
the replay made 9 all-gathers a step for a job's 17. Wrapped here, each call of such a method is a
forward call of its module (a range, and the module named as the model it is); the blocks it calls
are then calls again within the pass, as no_grad rollouts through `model(x)` are.

torch imports the function with `torch.distributed.fsdp`, which a job imports after torch (where
the hooks start): the function is wrapped when its module is loaded, or at once when it is already.
"""
import functools
import sys

from ._after_import import AfterImport

_API = "torch.distributed.fsdp._fully_shard._fully_shard"
_REEXPORTS = ("torch.distributed.fsdp._fully_shard", "torch.distributed.fsdp")


def _traced_method(tracker, module, method):
    """`method` (FSDP's wrapper of the registered one) as a call of `module` for `tracker`."""

    @functools.wraps(method)
    def traced(*args, **kwargs):
        tracker.forward_pre(module, args)
        out = method(*args, **kwargs)
        tracker.forward_post(module, args, out, kwargs)
        return out

    return traced


def _wrap_register(tracker, register):
    @functools.wraps(register)
    def register_fsdp_forward_method(module, method_name):
        before = getattr(module, method_name, None)
        register(module, method_name)
        after = getattr(module, method_name, None)
        if after is not None and after is not before:  # FSDP wrapped it (a no-op on a non-FSDP module)
            setattr(module, method_name, _traced_method(tracker, module, after))

    register_fsdp_forward_method._shardscope_original = register
    return register_fsdp_forward_method


def _patch(tracker, api):
    """Wraps the function in `api` and where torch re-exports it; returns the undo."""
    original = getattr(api, "register_fsdp_forward_method", None)
    if original is None or getattr(original, "_shardscope_original", None) is not None:
        return lambda: None
    wrapped = _wrap_register(tracker, original)
    patched = [m for m in [api] + [sys.modules.get(n) for n in _REEXPORTS]
               if m is not None and getattr(m, "register_fsdp_forward_method", None) is original]
    for m in patched:
        m.register_fsdp_forward_method = wrapped

    def restore():
        for m in patched:
            if getattr(m, "register_fsdp_forward_method", None) is wrapped:
                m.register_fsdp_forward_method = original

    return restore


def hook_fsdp_forward_methods(tracker):
    """Wraps register_fsdp_forward_method now or when torch loads it; returns [undo]."""
    undo = []
    api = sys.modules.get(_API)
    if api is not None:
        undo.append(_patch(tracker, api))
        return undo
    finder = AfterImport(_API, lambda m: undo.append(_patch(tracker, m))).install()

    def remove():
        finder.remove()
        for u in undo:
            u()

    return [remove]
