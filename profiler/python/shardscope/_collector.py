"""The CUPTI collector's capture switch, for `record --steps A:B` on a GPU rank.

The collector (libshardscope_collector.so, loaded into this process by the CUDA driver through
CUDA_INJECTION64_PATH) traces kernels, copies, NVTX ranges and launch-API records only while the
capture window is open: under SHARDSCOPE_STEPS with A > 0 it starts with them off, and this switch,
driven by the window (_window.CaptureWindow, in place of the CPU trace), turns them on after step
A-1 and off after step B-1. Outside the window the job then pays for none of the trace (on an
H100 it made a launch-bound FSDP2 step 10-62 % slower, docs/gpu-runs.md). Memory records stay on
until the window closes; then the collector detaches CUPTI from the job (cuptiFinalize at the next
CUDA call: a CUPTI that traced kernels slows every later launch, docs/collector.md).

The library is reached without loading it a second time (RTLD_NOLOAD): if CUDA has not loaded it,
there is nothing to switch, and the window says so once.
"""
import ctypes
import os
import sys


class CollectorCapture:
    """start() / stop() for CaptureWindow; each returns True when the collector did it."""

    def __init__(self, torch, library=None):
        self._torch = torch
        self.after_stop = []  # called once the trace is off (e.g. the allocator history's dump)
        self._library = library if library is not None else os.environ.get("CUDA_INJECTION64_PATH", "")
        self._switch = None
        self._warned = False

    def _function(self):
        if self._switch is None:
            lib = ctypes.CDLL(self._library, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)  # OSError when not loaded
            self._switch = lib.shardscope_collector_capture
            self._switch.argtypes = [ctypes.c_int]
            self._switch.restype = ctypes.c_int
        return self._switch

    def _set(self, on):
        try:
            if self._function()(1 if on else 0) == 1:
                return True
            why = "the collector is not recording in this process"
        except (OSError, AttributeError) as e:
            why = "the collector library %r is not loaded here (%s)" % (self._library, e)
        if not self._warned:
            self._warned = True
            sys.stderr.write("[shardscope] cannot switch the GPU trace %s at the capture window: %s\n"
                             % ("on" if on else "off", why))
        return False

    def start(self):
        return self._set(True)

    def stop(self):
        # The window's last kernels finish while their tracing is on, so that none is lost.
        try:
            self._torch.cuda.synchronize()
        except Exception:  # never break the job
            pass
        done = self._set(False)
        for f in self.after_stop:
            f()
        return done


def say_when_the_job_profiles():
    """CUPTI serves one subscriber at a time and the collector holds it, so a torch.profiler session
    the job starts gets no CUDA activity (Kineto logs CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
    and goes on with CPU operators). Said once, in ShardScope's words, when the job starts one."""
    from ._cpu_trace import watch_job_profilers

    said = []

    def say():
        if not said:
            said.append(True)
            sys.stderr.write("[shardscope] the job started its own torch.profiler while the ShardScope collector holds "
                             "CUPTI: its trace will have CPU operators but no CUDA kernels or copies (CUPTI serves one "
                             "profiler at a time); the ShardScope profile has them\n")

    watch_job_profilers(say)
