"""Runs code right after a module is imported, without importing it first (torch costs seconds;
torch.distributed.fsdp is imported by the job when it wants it)."""
import importlib.abc
import importlib.util
import sys


class AfterImport(importlib.abc.MetaPathFinder):
    """A meta-path finder that finds nothing itself: it wraps the loader of the module `name` so
    that `then(module)` runs once that module has been executed, and then steps aside."""

    def __init__(self, name, then):
        self.name, self.then = name, then

    def find_spec(self, name, path, target=None):
        if name != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        original_exec = loader.exec_module

        def exec_module(module):
            original_exec(module)
            self.then(module)

        loader.exec_module = exec_module
        return spec

    def install(self):
        sys.meta_path.insert(0, self)
        return self

    def remove(self):
        if self in sys.meta_path:
            sys.meta_path.remove(self)
