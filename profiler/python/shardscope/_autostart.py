"""Starts the hooks inside a program run by `shardscope record` (imported by sitecustomize).

Importing torch costs seconds, so nothing happens until the program imports torch itself: a
meta-path finder watches for the `torch` import and installs the global hooks right after it.
Environment (set by record): SHARDSCOPE_OUTPUT_DIR, SHARDSCOPE_MODULES ("0" = off),
SHARDSCOPE_COLLECTOR ("1" when the CUPTI collector is injected), SHARDSCOPE_CPU_TRACE ("0" = no
torch.profiler trace on CPU runs, see _cpu_trace.py), SHARDSCOPE_STEPS ("A:B": the capture window,
_window.py), SHARDSCOPE_SIDECAR_RANGES ("1": on CPU runs the module ranges go to the sidecar too,
not only into the trace; see below), SHARDSCOPE_BACKWARD_RANGES ("modules" or "units", hooks.Tracker).
"""
import atexit
import os
import sys

_started = False


def _start():
    global _started
    if _started:
        return
    _started = True
    try:
        from . import _rank, _window, hooks
        from ._sidecar import SidecarWriter
        from .backends import FileBackend, NvtxBackend, ProfilerBackend, TeeBackend

        out_dir = os.environ.get("SHARDSCOPE_OUTPUT_DIR")
        # torchrun's agent, or a DataLoader worker / helper a rank started: no rank, nothing recorded.
        if not out_dir or _is_launcher() or _rank.started_by_a_rank():
            return
        modules = os.environ.get("SHARDSCOPE_MODULES", "1") != "0"
        backward_ranges = os.environ.get("SHARDSCOPE_BACKWARD_RANGES") or "modules"
        import torch

        _mark_ranks(torch)
        # On a machine without CUDA the CPU is the device: torch.profiler records its operators,
        # gloo collectives and allocations, with or without the module hooks (--no-modules).
        cpu_trace = not torch.cuda.is_available() and os.environ.get("SHARDSCOPE_CPU_TRACE", "1") != "0"
        gpu_collector = os.environ.get("SHARDSCOPE_COLLECTOR") == "1" and torch.cuda.is_available()
        window = _window.from_env()
        # Without --steps a traced rank profiles a bounded number of steps (_window.py: on CPU the
        # trace lives in the job's memory until it stops; on a GPU a traced step costs a
        # launch-bound job ~40 %, and the steps after the window run as without record).
        default_window = window is None and not os.environ.get("SHARDSCOPE_STEPS")
        if default_window:
            window = _window.default_window(cpu_trace or gpu_collector)
            default_window = window is not None
        if not modules and not cpu_trace and window is None:
            return
        sidecar = None
        if modules or window is not None:  # the window's unobserved steps are written there
            sidecar = SidecarWriter.for_this_process(out_dir)
            atexit.register(sidecar.close)
            sidecar.meta("torch_version", torch.__version__)
            if modules:
                sidecar.meta("backward_ranges", backward_ranges)
        # NVTX only reaches a profile when the collector runs and CUDA exists; otherwise the ranges
        # are timed here and written to the sidecar.
        trace = None
        window_trace = None  # what the capture window starts and stops: the CPU trace or the collector's
        if gpu_collector:
            backend = NvtxBackend()
            sidecar.meta("ranges", "nvtx")
            from ._collector import say_when_the_job_profiles

            say_when_the_job_profiles()
            if window is not None:  # the collector's trace follows the window (_collector.py)
                from ._collector import CollectorCapture

                window_trace = CollectorCapture(torch)
        elif cpu_trace:
            # Our ranges go into that trace (same clock) while it records, and into the sidecar.
            from ._cpu_trace import CpuTrace, is_tracing

            trace = CpuTrace.for_this_process(out_dir, start=window is None or window[0] == 0)
            in_trace = ProfilerBackend(active=is_tracing)
            # The sidecar (flushed every step) is what survives a killed rank (the trace is written
            # at exit), so the module ranges go there too by default; SHARDSCOPE_SIDECAR_RANGES=0
            # writes only the optimizer's ranges (the steps) there (what it saves: docs/benchmarks.md).
            if sidecar is None:
                backend = in_trace
            elif os.environ.get("SHARDSCOPE_SIDECAR_RANGES", "1") == "1":
                backend = TeeBackend(in_trace, FileBackend(sidecar))
            else:
                # Once the job's own profiler stops the trace, the sidecar takes every range.
                in_sidecar = FileBackend(sidecar, only_prefix="ss:opt:")
                backend = TeeBackend(in_trace, in_sidecar)
                trace.on_stand_aside.append(lambda step: setattr(in_sidecar, "only_prefix", None))
            if sidecar is not None:
                sidecar.meta("ranges", "sidecar+kineto")
                trace.on_stand_aside.append(lambda step: sidecar.meta("cpu_trace_stopped_at_step", step))
        else:
            backend = FileBackend(sidecar)
            sidecar.meta("ranges", "sidecar")
        if torch.cuda.is_available():  # record --memory history (_cuda_memory.py)
            from . import _cuda_memory

            backend = _cuda_memory.start_if_asked(out_dir, backend, torch)
            history = getattr(backend, "history", None)
            if window_trace is not None and history is not None and window[1] is not None:
                window_trace.after_stop.append(history.dump_and_stop)
        # --no-modules: only the optimizer's steps (the iterations), no module hooks.
        handle = hooks.install(backend, sidecar, modules=modules, backward_ranges=backward_ranges)
        if trace is not None:
            handle.tracker.step_callbacks.append(trace.capture_distributed)
            trace.step = lambda: handle.tracker.step
        capture = None
        if window is not None:
            capture = _window.CaptureWindow(window[0], window[1], handle.tracker, window_trace or trace, sidecar)
            handle.tracker.step_end_callbacks.append(capture.on_step_end)
            if default_window and (_rank.identity()["rank"] or 0) == 0:
                capture.close_message = (
                    "[shardscope] profiled steps 0-%d, the default (%s); the steps after them are timed only. "
                    "`record --steps 0:` profiles every step\n"
                    % (window[1] - 1, "a traced GPU step costs a launch-bound job ~40 %" if gpu_collector else
                       "torch.profiler holds its trace in the job's memory, more with every step"))

        def at_exit():  # registered last, so it runs before the sidecar closes
            if hooks._global:
                hooks._global.tracker.close_open_backward()
            if trace is not None:
                trace.stop_and_write()
            if capture is not None:
                capture.at_exit()

        atexit.register(at_exit)
    except Exception as e:  # never break the job
        sys.stderr.write("[shardscope] module hooks not installed: %r\n" % (e,))


def _mark_ranks(torch):
    """Marks this process as a rank (_rank.mark_as_rank) where that is known: a torchrun worker at
    once (its DataLoader may start workers before the process group exists), any other process when
    it joins a process group (ranks started by torch.multiprocessing.spawn or srun). A process that
    starts ranks itself (torchrun's agent, mp.spawn's parent) is never marked: it joins no group."""
    from . import _rank

    if os.environ.get("TORCHELASTIC_RUN_ID") and os.environ.get("RANK") is not None:
        _rank.mark_as_rank()
    dist = getattr(torch, "distributed", None)
    init = getattr(dist, "init_process_group", None)
    if init is None or getattr(init, "_shardscope_marks", False):
        return
    import functools

    @functools.wraps(init)
    def init_process_group(*args, **kwargs):
        _rank.mark_as_rank()
        return init(*args, **kwargs)

    init_process_group._shardscope_marks = True
    dist.init_process_group = init_process_group


_LAUNCHER_MODULES = ("torch.distributed.run", "torch.distributed.launch")


def _is_launcher():
    """torchrun's agent imports torch too, but trains nothing: no trace for it. Started as
    `python -m torch.distributed.run`, it imports torch while Python looks the module up, when
    sys.argv[0] is still "-m": the command line as given (sys.orig_argv) says it (before, that
    agent ran a torch.profiler trace and the module hooks for the whole job)."""
    script = (sys.argv[0] if sys.argv else "") or ""
    if os.path.basename(script) == "torchrun":
        return True
    if script.replace(os.sep, "/").endswith(("torch/distributed/run.py", "torch/distributed/launch.py")):
        return True
    argv = list(getattr(sys, "orig_argv", ()))
    return any(a == "-m" and b in _LAUNCHER_MODULES for a, b in zip(argv, argv[1:]))


def activate():
    if os.environ.get("SHARDSCOPE_OUTPUT_DIR") is None:
        return
    if "torch" in sys.modules:
        _start()
    else:
        from ._after_import import AfterImport

        AfterImport("torch", lambda torch: _start()).install()
