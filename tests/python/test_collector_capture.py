"""`record --steps A:B` on a GPU rank: the capture window switches the CUPTI collector's trace
(_collector.CollectorCapture) at the window's edges. No GPU here: what is checked is that the window
switches at the right steps, that the switch reaches the collector library's exported function
when CUDA has loaded it (and loads nothing itself), and that a failure is said once and never
raised into the job. On a GPU the kit's overhead stage measures what the switch saves
(scripts/gpu/checks.py, docs/gpu-runs.md)."""
import contextlib
import ctypes
import io
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

from shardscope import _cuda_memory, _window
from shardscope._collector import CollectorCapture


class FakeCuda:
    def __init__(self):
        self.synchronized = 0

    def synchronize(self):
        self.synchronized += 1


class FakeMemory:
    def __init__(self):
        self.calls = []

    def _record_memory_history(self, **kwargs):
        self.calls.append(("record", kwargs.get("enabled")))

    def _dump_snapshot(self, path):
        self.calls.append(("dump", None))
        with open(path, "wb") as f:
            f.write(b"snapshot")


class FakeTorch:
    def __init__(self):
        self.cuda = FakeCuda()
        self.cuda.memory = FakeMemory()
        self.cuda.is_initialized = lambda: True


class FakeTracker:
    def __init__(self):
        self.recording = None
        self.facts = 0
        self.module_hooks = None  # (the real module hooks' switching: test_hooks.py)

    def has_named_modules(self):
        return True

    def live_facts(self, optimizers):
        self.facts += 1

    def close_open_backward(self):
        pass

    def take_model_calls(self):
        return 1


class RecordingSwitch:
    """Stands in for the collector: logs every start / stop with the step it came after."""

    def __init__(self):
        self.calls = []
        self.step = None

    def start(self):
        self.calls.append(("on", self.step))
        return True

    def stop(self):
        self.calls.append(("off", self.step))
        return True


class WindowSwitchesTheTrace(unittest.TestCase):
    def run_steps(self, first, end, steps):
        tracker, switch = FakeTracker(), RecordingSwitch()
        window = _window.CaptureWindow(first, end, tracker, switch, None)
        for n in range(steps):
            switch.step = n
            window.on_step_end(n, 0, optimizers=[])
        return tracker, switch

    def test_on_after_step_a_minus_1_and_off_after_step_b_minus_1(self):
        tracker, switch = self.run_steps(10, 15, 30)
        self.assertEqual(switch.calls, [("on", 9), ("off", 14)])
        self.assertEqual(tracker.facts, 1)  # the tensors alive at the window's start are told once
        self.assertFalse(tracker.recording)

    def test_a_window_from_step_0_is_only_switched_off(self):
        tracker, switch = self.run_steps(0, 4, 10)
        self.assertEqual(switch.calls, [("off", 3)])

    def test_an_open_window_is_never_switched_off(self):
        tracker, switch = self.run_steps(3, None, 10)
        self.assertEqual(switch.calls, [("on", 2)])
        self.assertTrue(tracker.recording)


class CollectorCaptureReachesTheLibrary(unittest.TestCase):
    def test_a_library_not_loaded_is_said_once_and_nothing_is_raised(self):
        torch = FakeTorch()
        capture = CollectorCapture(torch, library="/nonexistent/libshardscope_collector.so")
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertFalse(capture.start())
            self.assertFalse(capture.stop())
        lines = err.getvalue().splitlines()
        self.assertEqual(len(lines), 1, lines)
        self.assertIn("cannot switch the GPU trace on at the capture window", lines[0])
        self.assertIn("not loaded", lines[0])
        self.assertEqual(torch.cuda.synchronized, 1)  # stop() waits for the window's kernels

    def test_the_switch_is_the_collector_libraries_exported_function(self):
        lib = os.environ.get("SHARDSCOPE_COLLECTOR_LIB")
        if not lib:
            self.skipTest("no CUPTI collector in this build (SHARDSCOPE_COLLECTOR_LIB unset)")
        # As the CUDA driver would have: loaded before the window opens. Without a GPU nothing
        # records, so the collector answers "not recording" through the same function.
        ctypes.CDLL(lib)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertFalse(CollectorCapture(FakeTorch(), library=lib).start())
        self.assertIn("the collector is not recording in this process", err.getvalue())


class WindowEndDumpsTheAllocatorHistory(unittest.TestCase):
    def test_the_history_is_dumped_then_stopped_after_the_trace_goes_off(self):
        torch = FakeTorch()
        with tempfile.TemporaryDirectory() as d:
            history = _cuda_memory.AllocatorHistory(os.path.join(d, "rank0"), torch)
            history.start()
            capture = CollectorCapture(torch, library="/nonexistent/lib.so")
            capture.after_stop.append(history.dump_and_stop)
            with contextlib.redirect_stderr(io.StringIO()):
                capture.stop()  # the switch fails here (no collector); the history is still written
            self.assertEqual(torch.cuda.memory.calls, [("record", "all"), ("dump", None), ("record", None)])
            self.assertTrue(os.path.exists(history.snapshot_path))
            history.dump()  # at exit: already written, nothing more
            self.assertEqual(len(torch.cuda.memory.calls), 3)


class AGpuRankWithoutStepsProfilesTheDefaultWindow(unittest.TestCase):
    """Without --steps a GPU rank profiles steps 0-9 and times the later ones (_window.default_window:
    a traced step costs a launch-bound job ~40 %, docs/gpu-runs.md). Record's Python side is started
    in a job whose torch says CUDA is available and whose collector is said to be injected (no GPU
    here: the switch to the library fails, and is said once); the window is read back from the
    sidecar that record merges."""

    JOB = textwrap.dedent("""
        import torch
        torch.cuda.is_available = lambda: True  # a GPU rank, as far as record's Python side can tell
        from shardscope import _autostart
        _autostart._start()
        model = torch.nn.Linear(4, 4)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(%d):
            model(torch.ones(2, 4)).sum().backward()
            opt.step()
            opt.zero_grad()
        """)

    def run_job(self, steps, env_steps=None):
        from shardscope import _window

        with tempfile.TemporaryDirectory(prefix="ss_gpu_default_") as d:
            env = dict(os.environ, SHARDSCOPE_OUTPUT_DIR=d, SHARDSCOPE_COLLECTOR="1", CUDA_INJECTION64_PATH="",
                       PYTHONPATH=os.path.dirname(os.path.dirname(_window.__file__)))
            env.pop("SHARDSCOPE_STEPS", None)
            if env_steps is not None:
                env["SHARDSCOPE_STEPS"] = env_steps
            done = subprocess.run([sys.executable, "-c", self.JOB % steps], env=env, capture_output=True, text=True,
                                  timeout=300)
            self.assertEqual(done.returncode, 0, done.stderr)
            sidecars = [f for f in os.listdir(d) if f.endswith(".modules.tsv")]
            self.assertEqual(len(sidecars), 1, os.listdir(d))
            with open(os.path.join(d, sidecars[0])) as f:
                rows = [line.rstrip("\n").split("\t") for line in f if not line.startswith("#")]
        window = [r[2] for r in rows if r[:2] == ["meta", "capture_window"]]
        timed = [int(r[1]) for r in rows if r[0] == "step"]
        return window, timed, done.stderr

    def test_steps_0_to_9_are_profiled_and_the_rest_timed(self):
        from shardscope import _window

        steps = _window.DEFAULT_STEPS + 3
        window, timed, stderr = self.run_job(steps)
        self.assertEqual(window, ["0:%d" % _window.DEFAULT_STEPS])
        self.assertEqual(timed, list(range(_window.DEFAULT_STEPS, steps)))
        self.assertEqual(stderr.count("profiled steps 0-%d, the default (a traced GPU step" % (_window.DEFAULT_STEPS - 1)),
                         1, stderr)

    def test_steps_0_open_profiles_every_step(self):
        window, timed, stderr = self.run_job(12, env_steps="0:")
        self.assertEqual(window, ["0:"])
        self.assertEqual(timed, [])
        self.assertNotIn("the default", stderr)


class TheJobsOwnProfilerIsToldAbout(unittest.TestCase):
    def test_said_once_when_the_job_starts_torch_profiler(self):
        try:
            import torch
        except ImportError:
            self.skipTest("torch is not installed")
        from shardscope._collector import say_when_the_job_profiles

        say_when_the_job_profiles()
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            for _ in range(2):
                with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
                    torch.ones(4).sum()
        said = [l for l in err.getvalue().splitlines() if l.startswith("[shardscope]")]
        self.assertEqual(len(said), 1, said)
        self.assertIn("its own torch.profiler while the ShardScope collector holds CUPTI", said[0])


if __name__ == "__main__":
    unittest.main()
