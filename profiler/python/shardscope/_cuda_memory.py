"""Per-tensor GPU memory from PyTorch's caching allocator (`shardscope record --memory history`).

The caching allocator serves tensors from large cudaMalloc segments, so CUPTI sees segments, not
tensors. The allocator's own history does see tensors (what memory_viz reads): on a CUDA rank this
module turns it on when CUDA initialises (torch.cuda._lazy_call, so importing torch stays cheap
and CUDA is not initialised early) and dumps the snapshot at exit as
<stem>.cuda_memory.pickle. The hooks' tensor facts (which allocations hold the sharded
parameters and the optimizer states, hooks.Tracker.tensor_facts) go to
<stem>.cuda_memory.facts.tsv, one "<unix ns>\\t<message>" line each. `record` reads both after the
job and attributes every allocation to the module and category that made it
(profiler/collector/launcher/allocator_history.h). The job's allocator and its settings stay as
the job chose them.

Environment: SHARDSCOPE_MEMORY=history (set by record), SHARDSCOPE_HISTORY_ENTRIES (the history's
ring size, default 2,000,000 allocations and frees).
"""
import atexit
import os
import sys
import time

from . import _rank

SNAPSHOT_SUFFIX = ".cuda_memory.pickle"
FACTS_SUFFIX = ".cuda_memory.facts.tsv"
DEFAULT_ENTRIES = 2_000_000


class AllocatorHistory:
    def __init__(self, stem_path, torch, max_entries=DEFAULT_ENTRIES):
        self.snapshot_path = stem_path + SNAPSHOT_SUFFIX
        self.facts_path = stem_path + FACTS_SUFFIX
        self.max_entries = max_entries
        self._torch = torch
        self._pid = os.getpid()
        self._facts = []
        self.enabled = False
        self.dumped = False

    @classmethod
    def for_this_process(cls, output_dir, torch):
        entries = int(os.environ.get("SHARDSCOPE_HISTORY_ENTRIES", DEFAULT_ENTRIES))
        return cls(os.path.join(output_dir, _rank.stem(_rank.identity())), torch, entries)

    def start(self):
        """Turns the history on at CUDA's lazy init (at once if CUDA is initialised already)."""
        lazy_call = getattr(self._torch.cuda, "_lazy_call", None)
        if lazy_call is None or self._torch.cuda.is_initialized():
            self._enable()
        else:
            lazy_call(self._enable)

    def _enable(self):
        record = self._torch.cuda.memory._record_memory_history
        # No stacks: the hooks' ranges name the module, and a frame-less entry is small and cheap.
        # Annotations from every thread: FSDP's backward ranges run on autograd's thread. Older
        # torch lacks the keyword; stacks of allocations are the last resort.
        base = dict(enabled="all", stacks="python", max_entries=self.max_entries)
        attempts = (dict(base, context=None, global_record_annotations=True), dict(base, context=None), dict(base, context="alloc"))
        error = None
        for kwargs in attempts:
            try:
                record(**kwargs)
                self.enabled = True
                return
            except (TypeError, ValueError, RuntimeError) as e:
                error = e
        sys.stderr.write("[shardscope] allocator history not recorded: %r\n" % (error,))  # the job runs on

    def dump_and_stop(self):
        """At the end of a capture window (record --steps A:B): the snapshot then holds the window,
        whatever the job runs after it, and the history costs nothing more."""
        self.dump()
        if self.enabled:
            try:
                self._torch.cuda.memory._record_memory_history(enabled=None)
            except Exception as e:  # never break the job
                sys.stderr.write("[shardscope] allocator history not stopped: %r\n" % (e,))

    def fact(self, message):
        """A tensor fact from the hooks ("ss:mem:<category>:<address>[:<module>]"), timed now."""
        self._facts.append((time.time_ns(), message))

    def dump(self):
        """Writes the snapshot and the facts (under temporary names, then renamed)."""
        if self.dumped or not self.enabled or os.getpid() != self._pid:  # a forked child writes nothing
            return
        self.dumped = True
        try:
            tmp = self.facts_path + ".partial-%d" % os.getpid()
            with open(tmp, "w") as f:
                for t, message in self._facts:
                    f.write("%d\t%s\n" % (t, message))
            os.replace(tmp, self.facts_path)
            tmp = self.snapshot_path + ".partial-%d" % os.getpid()
            self._torch.cuda.memory._dump_snapshot(tmp)
            os.replace(tmp, self.snapshot_path)
        except Exception as e:  # never break the job
            sys.stderr.write("[shardscope] allocator history not written: %r\n" % (e,))


class FactBackend:
    """A range backend (backends.py) that also takes the hooks' tensor facts for the history."""

    def __init__(self, backend, history):
        self.backend = backend
        self.history = history

    def start(self, message):
        return self.backend.start(message)

    def end(self, token):
        self.backend.end(token)

    def fact(self, message):
        self.history.fact(message)


def start_if_asked(output_dir, backend, torch=None):
    """Under `record --memory history` on a CUDA rank: starts the history, registers its dump at
    exit and returns the backend that also takes tensor facts; otherwise returns `backend`."""
    if os.environ.get("SHARDSCOPE_MEMORY") != "history":
        return backend
    try:
        if torch is None:
            import torch
        history = AllocatorHistory.for_this_process(output_dir, torch)
        history.start()
        atexit.register(history.dump)
        return FactBackend(backend, history)
    except Exception as e:  # never break the job
        sys.stderr.write("[shardscope] allocator history not started: %r\n" % (e,))
        return backend
