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

    @classmethod
    def for_this_process(cls, output_dir):
        return cls(os.path.join(output_dir, _rank.stem(_rank.identity()) + TRACE_SUFFIX))

    def stop_and_write(self):
        """Stops the profiler and writes the trace (under a temporary name, then renamed)."""
        if self._stopped or os.getpid() != self._pid:  # a forked child never writes its parent's trace
            return
        self._stopped = True
        try:
            self._prof.stop()
            tmp = self.path + ".partial-%d" % os.getpid()
            self._prof.export_chrome_trace(tmp)
            os.replace(tmp, self.path)
        except Exception as e:  # never break the job
            sys.stderr.write("[shardscope] CPU trace not written: %r\n" % (e,))
