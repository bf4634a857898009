"""`record --steps A:B`: profile only steps A to B-1 (a capture range, as in Nsight Systems), and
time every other step with the wall clock alone.

Steps are the optimizers' (hooks.py: step n ends with the optimizer that steps last in iteration n,
_step_cycle.py). Outside the window the job runs unprofiled: no torch.profiler on a CPU rank, no
kernel, copy or launch tracing by the CUPTI collector on a GPU rank (_collector.py), no module
ranges, no backward hooks, no collective sizes; the module hooks are removed once the model is named
(in step 0; they are back for the window), the optimizer's hooks count the steps, and each step
outside the window is written to the sidecar as "step <n> <start> <end> <calls>" (py_sidecar.h): from
when the job had control back after step n-1 (after ShardScope started or stopped its trace there,
so that cost is not the job's) to the end of its optimizer step, and how many times the job called
its model in that time (a forward pre-hook on the model alone, Tracker.model_calls: an evaluation
between optimizer steps lands in the next step and adds calls). `record` stores them in the
profile's `unobserved_steps`, and `simulate` / `plan` calibrate their predictions to those with the
fewest calls (the job's training step as it runs without the profiler).

At the window's start (A > 0) the trace begins after step A-1, and the tensors alive then
(parameters, gradients, optimizer state) are told to it with their sizes (Tracker.live_facts),
since their allocations happened before it. At its end the trace stops; its events are written at
exit as usual.

Environment (set by record): SHARDSCOPE_STEPS="A:B" (also "A:" to the end, ":B" from the start).

Without SHARDSCOPE_STEPS a rank that ShardScope traces profiles steps 0 to DEFAULT_STEPS-1 only
(default_window), on a CPU rank and on a GPU rank alike:
- CPU: torch.profiler keeps its whole trace in the job's memory until it stops, and it grows with
  every profiled step (about 18 MB a step on each rank of the sample decoder, RSS 967 -> 1,486 MB
  over 30 steps, against a flat 860 MB unrecorded: 1.3 MB a step of trace, the rest glibc's heap
  fragmenting around it; docs/benchmarks.md), so an every-step default would take a long CPU job's
  memory without bound.
- GPU: a traced step of a launch-bound FSDP2 job ran +39 to +49 % slower on an H200 (kernel records,
  module ranges, the allocator history), while the steps after a window, with CUPTI detached, ran as
  fast as the job without `record` (docs/gpu-runs.md, fourth loan). A window from step 0 also leaves
  no step before it, where the memory records (on from CUDA's start) cost +15 % or more.
`record --steps 0:` profiles every step.
"""
import os
import sys
import time


def parse_steps(text):
    """(first, end) of "A:B" (end None for "A:"); raises ValueError for anything else."""
    a, sep, b = text.partition(":")
    if not sep:
        raise ValueError("expected A:B (steps A to B-1), got %r" % text)
    first = int(a) if a.strip() else 0
    end = int(b) if b.strip() else None
    if first < 0 or (end is not None and end <= first):
        raise ValueError("expected 0 <= A < B in A:B, got %r" % text)
    return first, end


# Ten steps: the simulator averages the profiled steps but the first (nine here). On CPU each
# profiled step costs the job ~10 % and ~22 MB of resident memory per rank, plus the profiler's stop
# at the window's end (~0.2 s idle for ten steps of the sample decoder, more on a busy machine); on
# a busy 60-step job the total step time came out +4.9 % (median of 6 pairs) with ten against +7.2 %
# with twenty (docs/benchmarks.md). On a GPU a traced step of a launch-bound job costs ~+40 % and the
# window's end ~0.33 s (the trace's flush, the history's dump, CUPTI's detach).
DEFAULT_STEPS = 10


def default_window(traced_here):
    """(first, end) for a rank that `record` runs without --steps: steps 0 to DEFAULT_STEPS-1 where
    ShardScope traces the device (torch.profiler on a CPU rank, the CUPTI collector on a GPU rank);
    None elsewhere (torchrun's agent, a process ShardScope does not trace)."""
    return (0, DEFAULT_STEPS) if traced_here else None


def from_env():
    text = os.environ.get("SHARDSCOPE_STEPS", "")
    if not text:
        return None
    try:
        return parse_steps(text)
    except ValueError as e:
        sys.stderr.write("[shardscope] SHARDSCOPE_STEPS ignored (every step is profiled): %s\n" % e)
        return None


class CaptureWindow:
    """Drives the trace and the hooks from the tracker's step ends (Tracker.step_end_callbacks)."""

    def __init__(self, first, end, tracker, trace, sidecar):
        self.first, self.end = first, end
        self.tracker, self.trace, self.sidecar = tracker, trace, sidecar
        self.reached = first == 0
        self.close_message = None  # said once when the window closes (the default window's bound)
        self._step_start = None  # when the job had control back for the current step (ns since the epoch)
        tracker.recording = first == 0
        if sidecar is not None:
            sidecar.meta("capture_window", "%d:%s" % (first, "" if end is None else end))

    def inside(self, step):
        return step >= self.first and (self.end is None or step < self.end)

    def on_step_end(self, step, end_ns, optimizers):
        calls = self.tracker.take_model_calls()
        if not self.inside(step) and self._step_start is not None and self.sidecar is not None:
            self.sidecar.step(step, self._step_start, end_ns, calls)
        following = step + 1
        if following == self.first:
            self._open(optimizers)
        elif self.end is not None and following == self.end:
            self._close()
        elif not self.inside(following) and self.tracker.has_named_modules():
            # Before the window, once the job's models are named (their first calls, in step 0), the
            # module hooks have nothing left to do: off until the window opens.
            self._module_hooks(False)
        self._step_start = time.time_ns()

    def _module_hooks(self, on):
        if self.tracker.module_hooks is not None:
            self.tracker.module_hooks.switch(on)

    def _open(self, optimizers):
        self.reached = True
        # The hooks record even when the trace cannot start (the job's own profiler runs): their
        # ranges then go to the sidecar only, as after the trace stands aside.
        self._module_hooks(True)
        self.tracker.recording = True
        if self.trace is not None and not self.trace.start():
            return
        try:
            self.tracker.live_facts(optimizers)
        except Exception as e:  # never break the job
            sys.stderr.write("[shardscope] tensors alive at the window's start not named: %r\n" % (e,))

    def _close(self):
        self.tracker.close_open_backward()
        self.tracker.recording = False
        self._module_hooks(False)
        if self.trace is not None:
            self.trace.stop()
        if self.sidecar is not None:
            self.sidecar.flush()
        if self.close_message:
            sys.stderr.write(self.close_message)

    def at_exit(self):
        if not self.reached and self.tracker.step > 0:  # (a process that trained nothing, e.g. torchrun's agent: silent)
            sys.stderr.write("[shardscope] the capture window %d:%s was never reached: the job ran %d step(s); nothing "
                             "was profiled\n" % (self.first, "" if self.end is None else self.end, self.tracker.step))
