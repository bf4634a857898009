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

    @classmethod
    def for_this_process(cls, output_dir):
        return cls(os.path.join(output_dir, _rank.stem(_rank.identity()) + TRACE_SUFFIX))

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
            if self._distributed is not None:
                _add_distributed_info(tmp, self._distributed)
            os.replace(tmp, self.path)
        except Exception as e:  # never break the job
            sys.stderr.write("[shardscope] CPU trace not written: %r\n" % (e,))


def _add_distributed_info(path, info):
    """Puts "distributedInfo" first in the trace's top-level object unless it has one (a copy of
    the file, not a parse: traces are large)."""
    import json

    with open(path, "rb") as f:
        head = f.read(4096)
        if b'"distributedInfo"' in head:
            return
        brace = head.find(b"{")
        if brace < 0:
            return
        tmp = path + ".dist"
        with open(tmp, "wb") as out:
            out.write(head[: brace + 1])
            out.write(b'\n  "distributedInfo": ' + json.dumps(info).encode() + b",")
            out.write(head[brace + 1:])
            while True:
                chunk = f.read(1 << 20)
                if not chunk:
                    break
                out.write(chunk)
    os.replace(tmp, path)
