"""What the tests of the user loop (tests/python/user_loop.py) share: recording it under
`shardscope record` on CPU with 2 ranks, and the checks every plain run of it passes (the optimizer
state alive at each step's end, the collectives of every step, the replay's passes, reductions,
collectives and peak). test_record_user_loop_cpu.py and test_record_loop_patterns_cpu.py use it, two
files so that each stays well inside ctest's time limit beside a busy machine."""
import json
import os
import shutil
import tempfile

import fsdp2_run as run

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "user_loop.py")
STEPS = 4
WORLD = 2
PEAK_TOLERANCE_PCT = 3.0


class UserLoopRuns:
    """A mixin for unittest.TestCase: a folder for the class's recordings, record, check."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="ss_user_loop_")
        cls.outputs = {}  # the job's output under record, by run name

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def recorded(self, name, *args, steps=STEPS, record_args=(), launcher=True):
        profile, summary = os.path.join(self.dir, name + ".ssdb"), os.path.join(self.dir, name + ".json")
        self.outputs[name] = run.record(profile, "--steps", str(steps), "--summary", summary, *args, script=SCRIPT,
                                        record_args=record_args, launcher=launcher)
        with open(summary) as f:
            return profile, json.load(f)

    def check(self, name, passes, reducing_passes, *args, held=False, launcher=True, record_args=()):
        profile, job = self.recorded(name, *args, launcher=launcher, record_args=record_args)
        # AdamW's exp_avg and exp_avg_sq of the rank's half of every parameter (fp32), and one fp32
        # step count per parameter tensor, alive from the first optimizer step on.
        optimizer_state = 2 * 4 * job["params"] // WORLD + 4 * job["param_tensors"]
        for rank in range(WORLD):
            live = dict(run.query(profile, "SELECT s.number, sum(m.bytes) FROM steps s JOIN memory_events m ON m.rank = "
                                  "s.rank AND m.time_ns < s.start_ns + s.duration_ns JOIN enums e ON e.type = "
                                  "'memory_category' AND e.value = m.category WHERE s.rank = ? AND e.label = "
                                  "'optimizer_state' GROUP BY 1", rank))
            self.assertEqual(live, {n: optimizer_state for n in range(STEPS)}, "rank %d" % rank)
        # Each pass gathers every block in forward and backward and the root once (it stays
        # unsharded from its forward to its backward); the reducing passes reduce-scatter each unit.
        # With the parameters held between passes the later ones gather the blocks in backward only.
        units = job["units"]
        gathers = [("all_gather", 4 * n) for u, n in units.items() for _ in range(1 if u == "" else 2)]
        later = [("all_gather", 4 * n) for u, n in units.items() if u != ""] if held else gathers
        reductions = [("reduce_scatter", 4 * n) for n in units.values()]
        want = sorted(gathers + later * (passes - 1) + reductions * reducing_passes)
        for rank in range(WORLD):
            for step, got in run.fsdp_collectives_per_step(profile, rank).items():
                self.assertEqual(got, want, "rank %d step %d" % (rank, step))
        report = json.loads(run.shardscope("simulate", profile, "--format", "json"))
        self.assertEqual(report["plan"]["gradient_accumulation"], passes)
        self.assertEqual(report["plan"]["sync_every_microbatch"], reducing_passes == passes)
        self.assertEqual(report["plan"].get("reshard_after_backward", True), not held)
        self.assertEqual((report["all_gathers"], report["reduce_scatters"]),
                         (len(gathers) + len(later) * (passes - 1), len(reductions) * reducing_passes))
        measured = report["measured_breakdown"]["peak_memory_bytes"]
        self.assertGreater(measured, optimizer_state)
        self.assertLessEqual(abs(report["peak_memory_bytes"] - measured) / measured * 100, PEAK_TOLERANCE_PCT, report)
        return profile, job
