"""`shardscope record --steps A:B` on real FSDP2 training on CPU (gloo, 2 ranks): only steps A to
B-1 are profiled, the others are timed by the wall clock alone (the profile's unobserved_steps), and
`simulate` / `plan` calibrate to them. What is asserted is fixed by the program: which steps are
where, the window's collectives (count and bytes), its memory by category against FSDPMemTracker at
a defined point of the tracked step (a unit's forward hooks), and what the calibration reports.
Recorded with `--backward-ranges units` (backward ranges for the FSDP units only), so the replay
and the plan above are also those of a profile without submodule backward ranges."""
import _torch_or_skip  # noqa: F401

import json
import os
import shutil
import subprocess
import tempfile
import unittest

import fsdp2_run as run
import memory_vs_tracker

WORLD = 2
STEPS = 8
FIRST, END = 3, 6  # record --steps 3:6 profiles steps 3, 4 and 5
TRACKED_STEP = 4


class RecordWindowCpu(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="ss_window_")
        cls.profile = os.path.join(cls.dir, "run.ssdb")
        cls.tracker = os.path.join(cls.dir, "tracker_{rank}.json")
        cls.output = run.record(cls.profile, "--tiny", "--steps", str(STEPS), "--mem-tracker-step", str(TRACKED_STEP),
                                "--mem-tracker-out", cls.tracker,
                                record_args=["--steps", "%d:%d" % (FIRST, END), "--backward-ranges", "units"])
        cls.units = run.tiny_unit_params()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_only_the_window_is_profiled_and_the_other_steps_are_timed(self):
        for rank in range(WORLD):
            steps = [n for (n,) in run.query(self.profile, "SELECT number FROM steps WHERE rank = ? ORDER BY number", rank)]
            self.assertEqual(steps, list(range(FIRST, END)))
            # Step 0 has no start (nothing before it to time from); the others outside the window are here.
            unobserved = run.query(self.profile, "SELECT number, duration_ns FROM unobserved_steps WHERE rank = ? "
                                   "ORDER BY number", rank)
            self.assertEqual([n for n, _ in unobserved], [1, 2, 6, 7])
            self.assertTrue(all(d > 0 for _, d in unobserved))
            # Nothing of the trace lies before the window: its first operator starts after step 2 ended.
            first_op = run.query(self.profile, "SELECT min(start_ns) FROM kernels WHERE rank = ?", rank)[0][0]
            step2_end = run.query(self.profile, "SELECT start_ns + duration_ns FROM unobserved_steps WHERE rank = ? "
                                  "AND number = 2", rank)[0][0]
            self.assertGreaterEqual(first_op, step2_end)
            meta = dict(run.query(self.profile, "SELECT key, value FROM meta WHERE key = ?", "rank%d.capture_window" % rank))
            self.assertEqual(meta, {"rank%d.capture_window" % rank: "%d:%d" % (FIRST, END)})

    def test_backward_ranges_of_the_units_only(self):
        module_ranges = "SELECT module, count(*) FROM range_view WHERE rank = ? AND kind = 'module' AND phase = ? GROUP BY module"
        for rank in range(WORLD):
            self.assertEqual(run.query(self.profile, "SELECT value FROM meta WHERE key = ?", "rank%d.backward_ranges" % rank),
                             [("units",)])
            # One backward range per unit and profiled step; forward ranges for every module as before.
            backward = run.query(self.profile, module_ranges, rank, "backward")
            self.assertEqual(sorted(backward), sorted((u, END - FIRST) for u in self.units), backward)
            forward = dict(run.query(self.profile, module_ranges, rank, "forward"))
            self.assertGreater(len(forward), len(self.units))
            self.assertTrue(all(n == END - FIRST for n in forward.values()), forward)
        self.assertEqual(json.loads(run.shardscope("info", self.profile, "--format", "json"))["backward_ranges"], "units")
        self.assertIn("Backward     module ranges for the FSDP units only", run.shardscope("info", self.profile))

    def test_every_collective_of_the_window_exactly(self):
        ag = lambda u: ("all_gather", 4 * self.units[u])
        rs = lambda u: ("reduce_scatter", 4 * self.units[u])
        want = sorted([ag(""), ag("layers.0"), ag("layers.1"), ag("layers.0"), ag("layers.1"),
                       rs(""), rs("layers.0"), rs("layers.1")])
        for rank in range(WORLD):
            per_step = run.fsdp_collectives_per_step(self.profile, rank)
            self.assertEqual(sorted(per_step), list(range(FIRST, END)))
            for step, got in per_step.items():
                self.assertEqual(got, want, "rank %d step %d" % (rank, step))

    def test_memory_of_the_window_by_category(self):
        # Parameters and optimizer state were allocated before the window: the hooks named them
        # with their sizes when it began. Sharded parameters: half of the model in fp32 per rank;
        # AdamW: two fp32 moments per parameter and a 4-byte step count per parameter tensor.
        sharded = 4 * sum(self.units.values()) // WORLD
        tensors = 2 * 9 + 3  # two layers of 9 tensors, the embedding, the final norm, the output head
        for rank in range(WORLD):
            by_cat = dict(run.query(self.profile, "SELECT category, sum(bytes) FROM memory_view WHERE rank = ? AND bytes > 0 "
                                    "AND time_ns = (SELECT min(time_ns) FROM memory_events WHERE rank = ?) GROUP BY 1",
                                    rank, rank))
            self.assertEqual(by_cat.get("sharded_parameter"), sharded)
            self.assertEqual(by_cat.get("optimizer_state"), 2 * sharded + 4 * tensors)
        # At the units' forward hooks of the tracked step the profile's memory is FSDPMemTracker's,
        # category by category (the communication buffers aside: gloo's threads may hold them).
        rows = memory_vs_tracker.compare_at_points(self.profile, self.tracker, memory_vs_tracker.FORWARD_POINTS)
        self.assertEqual(len(rows), WORLD * 3 * len(memory_vs_tracker.FORWARD_POINTS))
        for r in rows:
            self.assertEqual(memory_vs_tracker.program_fixed(r["profile"]), memory_vs_tracker.program_fixed(r["tracker"]), r)

    def test_simulate_and_plan_calibrate_to_the_unobserved_step(self):
        sim = json.loads(run.shardscope("simulate", self.profile, "--format", "json"))
        u = sim["unobserved"]
        self.assertEqual(u["steps"], 4)  # rank 0's steps 1, 2, 6, 7 (two after the window: too few alone)
        self.assertFalse(u["after_window_only"])
        self.assertTrue(u["calibrated"])
        self.assertEqual(sim["measured_step_time_ms"], u["step_time_ms"])  # predictions are judged against it
        self.assertAlmostEqual(u["recording_slowdown_pct"],
                               100.0 * (u["profiled_step_time_ms"] - u["step_time_ms"]) / u["step_time_ms"], places=6)
        self.assertAlmostEqual(u["replay_calibrated_ms"], sim["step_time_ms"], places=3)
        as_profiled = json.loads(run.shardscope("simulate", self.profile, "--as-profiled", "--format", "json"))
        self.assertFalse(as_profiled["unobserved"]["calibrated"])
        self.assertEqual(as_profiled["measured_step_time_ms"], u["profiled_step_time_ms"])
        self.assertAlmostEqual(as_profiled["step_time_ms"], u["replay_as_profiled_ms"], places=3)
        planned = json.loads(run.shardscope("plan", self.profile, "--modules", "layers.1", "--format", "json"))
        self.assertTrue(planned["unobserved"]["calibrated"])
        self.assertEqual(planned["unobserved"]["host_time_scale"], u["host_time_scale"])
        text = run.shardscope("simulate", self.profile)
        self.assertIn("Unobserved   ", text)
        self.assertIn("(median of 4 step(s) outside the capture window)", text)

    def test_a_bad_window_is_refused(self):
        p = subprocess.run([run.SHARDSCOPE, "record", "-o", os.path.join(self.dir, "bad.ssdb"), "--steps", "5:2", "--",
                            "true"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        self.assertEqual(p.returncode, 1, p.stderr)  # a usage error
        self.assertIn("--steps: expected A:B with 0 <= A < B", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "bad.ssdb")))
        self.assertFalse(os.path.exists(os.path.join(self.dir, "bad.ssdb.parts")))


class RecordCpuDefaultBound(unittest.TestCase):
    """Without --steps a CPU rank profiles steps 0-9 only: torch.profiler keeps its trace in the
    job's memory, growing every step. The steps after are timed, and record says so once."""

    def test_a_long_cpu_job_is_profiled_for_its_first_steps_then_timed(self):
        from shardscope import _window

        steps = _window.DEFAULT_STEPS + 3
        with tempfile.TemporaryDirectory(prefix="ss_default_bound_") as d:
            profile = os.path.join(d, "run.ssdb")
            output = run.record(profile, "--tiny", "--steps", str(steps))
            for rank in range(WORLD):
                numbers = [n for (n,) in run.query(profile, "SELECT number FROM steps WHERE rank = ? ORDER BY number", rank)]
                self.assertEqual(numbers, list(range(_window.DEFAULT_STEPS)))
                unobserved = [n for (n,) in run.query(profile, "SELECT number FROM unobserved_steps WHERE rank = ? "
                                                      "ORDER BY number", rank)]
                self.assertEqual(unobserved, list(range(_window.DEFAULT_STEPS, steps)))
            self.assertEqual(output.count("profiled steps 0-%d, the default (torch.profiler holds its trace" % (_window.DEFAULT_STEPS - 1)), 1)
            # `--steps 0:` keeps every step.
            every = os.path.join(d, "every.ssdb")
            run.record(every, "--tiny", "--steps", str(steps), record_args=["--steps", "0:"])
            self.assertEqual(run.query(every, "SELECT count(*) FROM steps WHERE rank = 0")[0][0], steps)


if __name__ == "__main__":
    unittest.main()
