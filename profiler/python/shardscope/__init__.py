"""ShardScope's Python side: module / optimizer ranges for the collector.

    import shardscope
    handle = shardscope.annotate(model)          # NVTX ranges per module and phase
    handle = shardscope.annotate(model, backend=shardscope.backends.RecordingBackend())

Under `shardscope record` nothing needs importing: the sitecustomize it puts on PYTHONPATH
installs global hooks as soon as the program imports torch (see _autostart.py).
"""
from . import backends, hooks  # noqa: F401
from .hooks import annotate, install, uninstall  # noqa: F401

__all__ = ["annotate", "install", "uninstall", "hooks", "backends", "apply_plan"]


def __getattr__(name):
    # plan.py belongs to the planner (issue 5); imported only when asked for.
    if name == "apply_plan":
        from .plan import apply_plan

        return apply_plan
    raise AttributeError(name)
