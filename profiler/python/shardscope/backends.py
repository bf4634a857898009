"""Where module / optimizer ranges go. A backend has start(message) -> token and end(token).

NvtxBackend      torch.cuda.nvtx start/end ranges, seen by the CUPTI collector (GPU runs).
FileBackend      CPU timestamps written to the sidecar file (no collector, e.g. CPU runs).
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


class FileBackend:
    def __init__(self, sidecar):
        self.sidecar = sidecar

    def start(self, message):
        return (message, _tid(), time.time_ns())

    def end(self, token):
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
