"""torch.profiler on a CPU run under `shardscope record` (no CUDA, so no CUPTI collector).

On a CPU machine the device is the CPU: its operators, gloo's collectives and every CPU
allocation are what a profile needs, and torch.profiler records all three. The trace is written as
<stem>.kineto.json next to the sidecar when the process exits; `record` imports it with the Kineto
importer and merges it with the sidecar's module facts.

What the job can observe is unchanged (docs/collector.md, "What record changes in a job"):
* no record_shapes: it would slow every operator and hold references the job can see (a
  meta-device model's `to_empty()` then fails: "Expected no weakrefs to t1's Tensor object").
  Collective sizes come from the collective API calls instead (_collective_sizes.py);
* the job's own torch.profiler wins: when the job starts one, this trace stops first (its events so
  far are kept and written at exit, with a message and `meta cpu_trace_stopped`), no more ShardScope
  ranges go into any trace, and the job's profiler runs as it would without `record`. Module ranges
  and steps go on in the sidecar.

A capture window (`record --steps A:B`, _window.py) starts the trace at step A (start()) and
stops it after step B-1 (stop()); the events it holds are written at exit all the same.

Environment: SHARDSCOPE_CPU_TRACE=0 turns it off (module ranges and steps still come from the sidecar).
The profiler's options, for measuring what each costs (bench/collector/bench_record_overhead.py;
defaults chosen from those figures, docs/benchmarks.md): SHARDSCOPE_PROFILE_MEMORY (1: allocations,
needed for memory by category), SHARDSCOPE_WITH_STACK (0), SHARDSCOPE_RECORD_SHAPES (0; 1 breaks
meta-device initialisation, see above).
"""
import os
import sys
import weakref

from . import _collective_sizes, _rank

_active = None  # weak reference to the running CpuTrace: the job's own profiler stops it

TRACE_SUFFIX = ".kineto.json"


def _env_flag(name, default):
    return os.environ.get(name, "1" if default else "0") not in ("0", "", "false", "no")


def profiler_options():
    """torch.profiler's options for the CPU trace, from the environment (defaults: memory on,
    stacks and shapes off)."""
    return {"profile_memory": _env_flag("SHARDSCOPE_PROFILE_MEMORY", True),
            "with_stack": _env_flag("SHARDSCOPE_WITH_STACK", False),
            "record_shapes": _env_flag("SHARDSCOPE_RECORD_SHAPES", False)}


class CpuTrace:
    def __init__(self, path, start=True):
        import torch

        self.path = path
        self._torch = torch
        self.running = False
        self.stood_aside = None  # the optimizer step at which the job's own profiler took over
        self.on_stand_aside = []  # callbacks(step) when the job's profiler stops this trace
        self.step = lambda: -1
        _collective_sizes.install()
        watch_job_profilers(_stand_aside_for_the_jobs_profiler)
        self._prof = None
        self._starting = False
        global _active
        _active = weakref.ref(self)
        self._stopped = False
        self._pid = os.getpid()
        self._distributed = None
        self._pg_threads = {}  # process group name -> the native thread ids its creation started
        self._watch_process_groups()
        if start:
            self.start()

    @classmethod
    def for_this_process(cls, output_dir, start=True):
        return cls(os.path.join(output_dir, _rank.stem(_rank.identity()) + TRACE_SUFFIX), start)

    def start(self):
        """Starts recording (at import, or when a capture window opens). Once only: a trace that
        stopped, or stood aside for the job's own profiler, does not start again."""
        if self._prof is not None or self.stood_aside is not None or os.getpid() != self._pid:
            return False
        from torch.profiler import ProfilerActivity, profile

        enabled = getattr(self._torch._C._autograd, "_profiler_enabled", lambda: False)
        if enabled():  # the job's own profiler runs (one Kineto session per process): it wins
            self.stood_aside = self.step()
            sys.stderr.write("[shardscope] the job's own torch.profiler runs at step %d: ShardScope's CPU trace does not "
                             "start\n" % self.stood_aside)
            for cb in self.on_stand_aside:
                cb(self.stood_aside)
            return False
        self._prof = profile(activities=[ProfilerActivity.CPU], **profiler_options())
        self._starting = True
        try:
            self._prof.start()
        finally:
            self._starting = False
        self.running = True
        _collective_sizes.enabled = True
        return True

    def stop(self):
        """Stops recording (a capture window closes); the events are written at exit."""
        if not self.running or os.getpid() != self._pid:
            return
        self.running = False
        _collective_sizes.enabled = False
        try:
            self.capture_distributed()
            self._prof.stop()
        except Exception as e:  # never break the job
            sys.stderr.write("[shardscope] CPU trace not stopped cleanly: %r\n" % (e,))

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
        the importer gives to the c10d op inside it (and so to the send it issued), and in the
        "ss:cb" range of its size (_collective_sizes.py)."""
        pg_class = getattr(dist, "ProcessGroup", None)
        record_function = self._torch.profiler.record_function
        for name in ("send", "recv"):
            original = getattr(pg_class, name, None)
            if original is None or getattr(original, "_shardscope_wrapped", False):
                continue

            def wrapped(group, *args, _original=original, **kwargs):
                try:
                    label = "ss:pg:" + str(group.group_name)
                    size = _collective_sizes.sized(args[0] if args else kwargs.get("tensors"), record_function)
                except Exception:
                    return _original(group, *args, **kwargs)
                with record_function(label), size:
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

    def stand_aside(self):
        """The job starts its own torch.profiler: ours stops now (one Kineto session per process),
        keeping its events for the file written at exit."""
        if not self.running or os.getpid() != self._pid:
            return
        self.running = False
        _collective_sizes.enabled = False
        self.stood_aside = self.step()
        try:
            self.capture_distributed()
            self._prof.stop()
        except Exception as e:  # never break the job
            sys.stderr.write("[shardscope] CPU trace not stopped cleanly: %r\n" % (e,))
        sys.stderr.write("[shardscope] the job started its own torch.profiler at step %d: ShardScope's CPU trace stops "
                         "there (operators, collectives and memory of the steps before it are kept); module ranges and "
                         "steps go on from the hooks, and the job's profiler runs as it would without record\n"
                         % self.stood_aside)
        for cb in self.on_stand_aside:
            cb(self.stood_aside)

    def stop_and_write(self):
        """Stops the profiler and writes the trace (under a temporary name, then renamed); nothing
        when it never started (a capture window the job did not reach)."""
        if self._stopped or os.getpid() != self._pid or self._prof is None:  # a forked child never writes its parent's trace
            return
        self._stopped = True
        try:
            self.capture_distributed()
            if self.running:
                self.running = False
                _collective_sizes.enabled = False
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


_job_profiler_callbacks = []  # called (no arguments) before any torch.profiler session the job starts


def watch_job_profilers(callback):
    """Calls `callback` before every torch.profiler session the job starts (torch.profiler.profile
    and the legacy torch.autograd.profiler.profile both prepare through _prepare_trace)."""
    if callback not in _job_profiler_callbacks:
        _job_profiler_callbacks.append(callback)
    try:
        from torch.autograd import profiler as autograd_profiler

        cls = autograd_profiler.profile
        original = cls._prepare_trace
        if getattr(original, "_shardscope_wrapped", False):
            return

        def _prepare_trace(prof, *args, **kwargs):
            for cb in list(_job_profiler_callbacks):
                try:
                    cb()
                except Exception as e:  # never break the job
                    sys.stderr.write("[shardscope] %r\n" % (e,))
            return original(prof, *args, **kwargs)

        _prepare_trace._shardscope_wrapped = True
        cls._prepare_trace = _prepare_trace
    except Exception as e:  # never break the job
        sys.stderr.write("[shardscope] the job's own profilers are not watched: %r\n" % (e,))


def _stand_aside_for_the_jobs_profiler():
    """A session the job starts while ours runs makes ours stand aside first."""
    ours = _active() if _active is not None else None
    if ours is not None and ours.running and not ours._starting:
        ours.stand_aside()


def is_tracing():
    """Whether ShardScope's CPU trace is recording (ranges go into it only then)."""
    ours = _active() if _active is not None else None
    return ours is not None and ours.running


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
