"""Put on PYTHONPATH by `shardscope record`: starts ShardScope's hooks, then runs the
sitecustomize that would otherwise have run (a distribution's or a virtualenv's), if any."""
import importlib.machinery
import importlib.util
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
try:
    sys.path.insert(0, os.path.dirname(os.path.dirname(_here)))  # the folder holding shardscope/
    from shardscope import _autostart

    _autostart.activate()
except Exception as _e:  # never break the job
    sys.stderr.write("[shardscope] sitecustomize: %r\n" % (_e,))
finally:
    del sys.path[0]

# Chain to the next sitecustomize on the path.
_saved = sys.modules.pop("sitecustomize", None)
try:
    _rest = [p for p in sys.path if os.path.abspath(p or ".") != _here]
    _spec = importlib.machinery.PathFinder.find_spec("sitecustomize", _rest)
    if _spec is not None and _spec.loader is not None:
        _mod = importlib.util.module_from_spec(_spec)
        _spec.loader.exec_module(_mod)
finally:
    if _saved is not None:
        sys.modules["sitecustomize"] = _saved
