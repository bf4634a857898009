"""torch.profiler on a CPU run under `shardscope record` (no CUDA, so no CUPTI collector).

On a CPU machine the device is the CPU: its operators, gloo's collectives (with their shapes) and
every CPU allocation are what a profile needs, and torch.profiler records all three. The trace is
written as <stem>.kineto.json next to the sidecar when the process exits; `record` imports it with
the Kineto importer and merges it with the sidecar's module facts.

Environment: SHARDSCOPE_CPU_TRACE=0 turns it off (module ranges and steps still come from the sidecar).
"""
import os
import sys

from . import _rank

TRACE_SUFFIX = ".kineto.json"


class CpuTrace:
    def __init__(self, path):
        import torch
        from torch.profiler import ProfilerActivity, profile

        self.path = path
        self._torch = torch
        self._prof = profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True)
        self._prof.start()
        self._stopped = False
        self._pid = os.getpid()
        self._distributed = None
        self._pg_threads = {}  # process group name -> the native thread ids its creation started
        self._watch_process_groups()

    @classmethod
    def for_this_process(cls, output_dir):
        return cls(os.path.join(output_dir, _rank.stem(_rank.identity()) + TRACE_SUFFIX))

    def _watch_process_groups(self):
        """gloo runs each process group's collectives on that group's own worker threads, and its
        trace events name no group. The threads a group's creation starts are its workers: noted
        here (thread ids from /proc, before and after c10d creates the group) and written to the
        trace as "shardscope_pg_threads", so the importer can give every collective its group
        (a 2D mesh has several groups of the same size)."""
        try:
            import torch.distributed as dist

            if not dist.is_available() or not os.path.isdir("/proc/self/task"):
                return
            c10d = dist.distributed_c10d
            create = getattr(c10d, "_new_process_group_helper", None)
            if create is None or getattr(create, "_shardscope_wrapped", False):
                return
            threads = self._pg_threads

            def tids():
                try:
                    return {int(t) for t in os.listdir("/proc/self/task")}
                except (OSError, ValueError):
                    return set()

            def watched(*args, **kwargs):
                before = tids()
                out = create(*args, **kwargs)
                try:
                    pg = out[0] if isinstance(out, tuple) else out
                    name = getattr(pg, "group_name", None) if isinstance(pg, dist.ProcessGroup) else None
                    new = sorted(tids() - before)
                    if name is not None and new:
                        threads[str(name)] = new
                except Exception:
                    pass
                return out

            watched._shardscope_wrapped = True
            c10d._new_process_group_helper = watched
            self._annotate_p2p(dist)
        except Exception as e:  # never break the job
            sys.stderr.write("[shardscope] process group threads not watched: %r\n" % (e,))

    def _annotate_p2p(self, dist):
        """gloo runs send / recv on the calling thread, not on a group's workers, so their thread
        says nothing: ProcessGroup.send / recv are wrapped in an "ss:pg:<group name>" range, which
        the importer gives to the c10d op inside it (and so to the send it issued)."""
        pg_class = getattr(dist, "ProcessGroup", None)
        record_function = self._torch.profiler.record_function
        for name in ("send", "recv"):
            original = getattr(pg_class, name, None)
            if original is None or getattr(original, "_shardscope_wrapped", False):
                continue

            def wrapped(group, *args, _original=original, **kwargs):
                try:
                    label = "ss:pg:" + str(group.group_name)
                except Exception:
                    return _original(group, *args, **kwargs)
                with record_function(label):
                    return _original(group, *args, **kwargs)

            wrapped._shardscope_wrapped = True
            setattr(pg_class, name, wrapped)

    def capture_distributed(self):
        """Kineto writes `distributedInfo` (rank, backend, process groups) only while the default
        group exists; a script usually destroys it before exit, so it is taken while training runs
        (at the first optimizer step) and spliced into the trace when it lacks one."""
        if self._distributed is not None:
            return
        try:
            import torch.distributed as dist

            if not (dist.is_available() and dist.is_initialized()):
                return
            c10d = dist.distributed_c10d
            groups = []
            for pg, name in list(getattr(c10d._world, "pg_names", {}).items()):
                ranks = sorted(getattr(c10d._world, "pg_group_ranks", {}).get(pg, {}).keys())
                desc = getattr(pg, "group_desc", "") or ("default_pg" if pg is c10d._get_default_group() else "")
                groups.append({"pg_name": str(name), "pg_desc": desc, "backend_config": str(dist.get_backend(pg)),
                               "pg_size": len(ranks) or pg.size(), "ranks": ranks or list(range(pg.size()))})
            self._distributed = {"backend": str(dist.get_backend()), "rank": dist.get_rank(),
                                 "world_size": dist.get_world_size(), "pg_count": len(groups), "pg_config": groups}
        except Exception as e:  # never break the job
            sys.stderr.write("[shardscope] process groups not captured: %r\n" % (e,))

    def stop_and_write(self):
        """Stops the profiler and writes the trace (under a temporary name, then renamed)."""
        if self._stopped or os.getpid() != self._pid:  # a forked child never writes its parent's trace
            return
        self._stopped = True
        try:
            self.capture_distributed()
            self._prof.stop()
            tmp = self.path + ".partial-%d" % os.getpid()
            self._prof.export_chrome_trace(tmp)
            extra = {}
            if self._distributed is not None:
                extra["distributedInfo"] = self._distributed
            if self._pg_threads:
                extra["shardscope_pg_threads"] = [{"pg_name": n, "tids": t} for n, t in self._pg_threads.items()]
            if extra:
                _add_top_level(tmp, extra)
            os.replace(tmp, self.path)
        except Exception as e:  # never break the job
            sys.stderr.write("[shardscope] CPU trace not written: %r\n" % (e,))


def _add_top_level(path, entries):
    """Puts the entries first in the trace's top-level object, each unless the trace has that key
    already (Kineto writes its own distributedInfo while the default group exists): a copy of
    the file, not a parse, since traces are large."""
    import json

    with open(path, "rb") as f:
        head = f.read(4096)
        brace = head.find(b"{")
        if brace < 0:
            return
        add = [(k, v) for k, v in entries.items() if b'"%s"' % k.encode() not in head]
        if not add:
            return
        tmp = path + ".dist"
        with open(tmp, "wb") as out:
            out.write(head[: brace + 1])
            for k, v in add:
                out.write(b"\n  " + json.dumps(k).encode() + b": " + json.dumps(v).encode() + b",")
            out.write(head[brace + 1:])
            while True:
                chunk = f.read(1 << 20)
                if not chunk:
                    break
                out.write(chunk)
    os.replace(tmp, path)
