"""Where module / optimizer ranges go. A backend has start(message) -> token and end(token).

NvtxBackend      torch.cuda.nvtx start/end ranges, seen by the CUPTI collector (GPU runs).
ProfilerBackend  torch.profiler record_function ranges: they land in the Kineto trace of a
                 running torch.profiler, on its clock (CPU runs under `record`, or a user's own
                 profiler with shardscope.annotate(model, backend=ProfilerBackend())).
FileBackend      CPU timestamps written to the sidecar file (no collector, e.g. CPU runs).
TeeBackend       several at once (CPU runs under `record`: the trace, plus the sidecar, which is
                 flushed every step and so survives a killed rank).
RecordingBackend keeps every range in memory (tests, and to inspect what the hooks do).
Start/end ranges (not push/pop) are used because backward ranges open and close from autograd
hooks that need not nest in LIFO order on one thread.
"""
import threading
import time


def _tid():
    return threading.get_native_id()  # = gettid() = CUPTI's thread id (THREAD_ID_TYPE_SYSTEM)


class NvtxBackend:
    def __init__(self):
        import torch.cuda.nvtx as nvtx

        self._start = nvtx.range_start
        self._end = nvtx.range_end

    def start(self, message):
        return self._start(message)

    def end(self, token):
        self._end(token)


class ProfilerBackend:
    """`active()` says whether the trace meant to receive the ranges records (under `record`: while
    ShardScope's CPU trace runs, so that none of its ranges lands in a profiler the job starts)."""

    def __init__(self, active=None):
        import torch

        self._enter = torch.ops.profiler._record_function_enter_new
        self._exit = torch.ops.profiler._record_function_exit._RecordFunction
        self._no_subclass = torch._C.DisableTorchFunctionSubclass
        self._active = active

    def start(self, message):
        if self._active is not None and not self._active():
            return None
        return self._enter(message, None)

    def end(self, token):
        if token is None:
            return
        with self._no_subclass():
            self._exit(token)

    def fact(self, message):
        """A zero-length range: a tensor fact ("ss:mem:<category>:<address>") in the trace."""
        self.end(self.start(message))

    @property
    def trace(self):
        """The backend whose ranges go into the trace alone (not the sidecar): this one."""
        return self


class TeeBackend:
    def __init__(self, *backends):
        self.backends = backends
        # The one that writes a trace (ProfilerBackend), for ranges only a trace can use.
        self.trace = next((b.trace for b in backends if getattr(b, "trace", None) is not None), None)

    def start(self, message):
        return [b.start(message) for b in self.backends]

    def end(self, token):
        for b, t in zip(self.backends, token):
            b.end(t)

    def fact(self, message):
        for b in self.backends:
            if hasattr(b, "fact"):
                b.fact(message)


class FileBackend:
    """`only_prefix`: only ranges whose message starts with it are written (None: all)."""

    def __init__(self, sidecar, only_prefix=None):
        self.sidecar = sidecar
        self.only_prefix = only_prefix

    def start(self, message):
        if self.only_prefix is not None and not message.startswith(self.only_prefix):
            return None
        return (message, _tid(), time.time_ns())

    def end(self, token):
        if token is None:
            return
        message, tid, start = token
        self.sidecar.range(tid, start, time.time_ns(), message)


class RecordingBackend:
    """Records (message, tid, start_ns, end_ns) for every closed range, in closing order."""

    def __init__(self):
        self._lock = threading.Lock()
        self.ranges = []
        self.open = {}
        self._next = 0

    def start(self, message):
        with self._lock:
            self._next += 1
            token = self._next
            self.open[token] = (message, _tid(), time.perf_counter_ns())
        return token

    def end(self, token):
        now = time.perf_counter_ns()
        with self._lock:
            message, tid, start = self.open.pop(token)
            self.ranges.append((message, tid, start, now))

    def messages(self):
        """Closed ranges ordered by start time."""
        return [r[0] for r in sorted(self.ranges, key=lambda r: r[2])]
