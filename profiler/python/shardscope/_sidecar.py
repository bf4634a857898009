"""The per-rank sidecar file (format: profiler/collector/core/py_sidecar.h).

Tab-separated lines appended as the job runs; flushed at every optimizer step, when the buffer
passes 1 MB, and at exit, so a killed rank keeps what it wrote up to its last flush. Fields never
contain tabs or newlines (they are replaced by spaces).

The buffer is ours and written with os.write: a forked child (DataLoader worker) drops its copy of
the buffer and stops writing, so nothing the parent buffered is ever written twice.
"""
import os
import socket
import threading

from . import _rank

_FLUSH_BYTES = 1 << 20


def _clean(value):
    return str(value).replace("\t", " ").replace("\n", " ")


class SidecarWriter:
    def __init__(self, path):
        self.path = path
        self._lock = threading.Lock()
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._buf = ["# shardscope-sidecar 1\n"]
        self._size = 0
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._forget_in_child)

    def _forget_in_child(self):
        self._buf = []
        self._fd = None  # not closed: the parent still writes through its own descriptor

    @classmethod
    def for_this_process(cls, output_dir):
        ident = _rank.identity()
        w = cls(os.path.join(output_dir, _rank.stem(ident) + _rank.SIDECAR_SUFFIX))
        w.meta("host", socket.gethostname())
        w.meta("pid", ident["pid"])
        if ident["rank"] is not None:
            w.meta("rank", ident["rank"])
        w.meta("world_size", ident["world_size"])
        return w

    def _line(self, *fields):
        line = "\t".join(_clean(f) for f in fields) + "\n"
        with self._lock:
            if self._fd is None:
                return
            self._buf.append(line)
            self._size += len(line)
            if self._size >= _FLUSH_BYTES:
                self._flush_locked()

    def _flush_locked(self):
        if self._fd is None or not self._buf:
            return
        data = "".join(self._buf).encode("utf-8")
        self._buf = []
        self._size = 0
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]

    def meta(self, key, value):
        self._line("meta", key, value)

    def module(self, fqn, class_name, param_count, param_bytes, is_fsdp_unit, reshard_policy, unit_owner=""):
        fields = ["module", fqn, class_name, int(param_count), int(param_bytes), 1 if is_fsdp_unit else 0, reshard_policy]
        if unit_owner:  # a member of a grouped unit (fully_shard([a, b])): the member that stands for it
            fields.append(unit_owner)
        self._line(*fields)

    def range(self, tid, start_ns, end_ns, message):
        self._line("range", int(tid), int(start_ns), int(end_ns), message)

    def step(self, number, start_ns, end_ns, model_calls=None):
        """A step outside record --steps' capture window, timed by the wall clock only, and how
        many times the job called its model in it (None: not counted)."""
        if model_calls is None:
            self._line("step", int(number), int(start_ns), int(end_ns))
        else:
            self._line("step", int(number), int(start_ns), int(end_ns), int(model_calls))

    def flush(self):
        with self._lock:
            self._flush_locked()

    def close(self):
        with self._lock:
            self._flush_locked()
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
