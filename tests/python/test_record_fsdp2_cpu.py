"""`shardscope record` on real FSDP2 training on CPU (gloo, 2 ranks): steps, FSDP units with their
parameter counts, every all-gather and reduce-scatter with its exact size, and memory by category
checked against PyTorch's own FSDPMemTracker on the same run."""
import _torch_or_skip  # noqa: F401

import json
import os
import shutil
import tempfile
import unittest

import fsdp2_run as run
import memory_vs_tracker

WORLD = 2
STEPS = 4
TRACKED_STEP = 2


class RecordFsdp2Cpu(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="ss_fsdp2_")
        cls.profile = os.path.join(cls.dir, "run.ssdb")
        cls.tracker = os.path.join(cls.dir, "tracker_{rank}.json")
        run.record(cls.profile, "--tiny", "--steps", str(STEPS), "--mem-tracker-step", str(TRACKED_STEP),
                   "--mem-tracker-out", cls.tracker)
        cls.units = run.tiny_unit_params()
        cls.info = json.loads(run.shardscope("info", cls.profile, "--format", "json"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_steps_units_and_device(self):
        self.assertEqual(self.info["origin"]["source_format"], "torch-profiler-cpu")
        self.assertEqual(self.info["gpus"], ["CPU"] * WORLD)
        self.assertEqual(self.info["steps"], STEPS)
        for rank in range(WORLD):
            self.assertEqual(run.query(self.profile, "SELECT count(*) FROM steps WHERE rank = ?", rank), [(STEPS,)])
        units = dict(run.query(self.profile, "SELECT fqn, reshard_policy FROM modules WHERE is_fsdp_unit = 1"))
        self.assertEqual(units, {"": "false", "layers.0": "true", "layers.1": "true"})  # FSDP2 keeps the root unsharded
        self.assertEqual(self.info["fsdp_units"], 3)
        self.assertEqual(self.info["fsdp_unit_params"], sum(self.units.values()))
        # The CPU is the device: the training thread's operators are its compute lane.
        compute = run.query(self.profile, "SELECT count(*) FROM kernels k JOIN streams s ON s.id = k.stream_id "
                            "WHERE s.kind = 1 AND k.category = 0")[0][0]
        self.assertGreater(compute, 1000)

    def test_every_collective_per_step_exactly(self):
        # Per step and rank: forward all-gathers of the root and both layers; backward re-gathers of
        # the two layers (the root is not resharded after forward); one reduce-scatter per unit.
        # Bytes: the unit's parameters x 4 (fp32: no mixed precision on CPU); the tiny model's
        # dimensions are even, so FSDP2 pads nothing over 2 ranks.
        ag = lambda u: ("all_gather", 4 * self.units[u])
        rs = lambda u: ("reduce_scatter", 4 * self.units[u])
        want = sorted([ag(""), ag("layers.0"), ag("layers.1"), ag("layers.0"), ag("layers.1"),
                       rs(""), rs("layers.0"), rs("layers.1")])
        for rank in range(WORLD):
            per_step = run.fsdp_collectives_per_step(self.profile, rank)
            self.assertEqual(sorted(per_step), list(range(STEPS)))
            for step, got in per_step.items():
                self.assertEqual(got, want, "rank %d step %d" % (rank, step))
        # Sequence numbers pair the ranks' collectives: the same (sequence, type, bytes) everywhere.
        rows = run.query(self.profile, "SELECT rank, sequence, type, bytes FROM collectives ORDER BY rank, sequence")
        by_rank = [[r[1:] for r in rows if r[0] == k] for k in range(WORLD)]
        self.assertEqual(by_rank[0], by_rank[1])

    def test_gloo_reduce_scatter_is_reported_as_run(self):
        text = run.shardscope("info", self.profile)
        self.assertIn("Collectives by type and size", text)
        self.assertIn("(ran as gloo:all_reduce)", text)
        self.assertIn("gloo runs FSDP2's reduce-scatter as an all-reduce", text)
        self.assertIn("Memory peak per rank", text)

    def test_memory_categories_and_peak_match_fsdp_mem_tracker(self):
        rows = memory_vs_tracker.compare(self.profile, self.tracker)
        self.assertEqual(len(rows), WORLD)
        sharded = 4 * sum(self.units.values()) // WORLD
        for r in rows:
            self.assertEqual(r["step"], TRACKED_STEP)
            self.assertLessEqual(abs(r["error_pct"]), 3.0, r)
            mine, theirs = r["visible_by_category_at_peak"], r["tracker_by_category_at_peak"]
            # Categories that both count the same tensors agree to the byte.
            self.assertEqual(mine["sharded_parameter"], sharded)
            self.assertEqual(theirs["sharded_parameter"], sharded)
            self.assertEqual(mine["optimizer_state"], theirs["optimizer_state"])  # AdamW: 2 x sharded + step counters
            self.assertEqual(mine["unsharded_parameter"], theirs["unsharded_parameter"])
            for cat in ("activation", "all_gather_buffer"):
                self.assertGreater(mine.get(cat, 0), 0, cat)
        # Parameters and optimizer state belong to their modules (made outside every module range,
        # they are named by the hooks' tensor facts): layers.0's shard is its half of the layer.
        # AdamW: exp_avg and exp_avg_sq of the shard, and a 4-byte step counter per parameter tensor.
        tensors = 9  # layers.0: two norms' weights, wq wk wv wo, w1 w2 w3
        for cat, want in (("sharded_parameter", 4 * self.units["layers.0"] // WORLD),
                          ("optimizer_state", 8 * self.units["layers.0"] // WORLD + 4 * tensors)):
            owned = run.query(self.profile, "SELECT sum(m.bytes) FROM memory_events m JOIN modules mo ON mo.id = m.module_id "
                              "JOIN enums e ON e.type = 'memory_category' AND e.value = m.category WHERE m.rank = 0 "
                              "AND m.bytes > 0 AND e.label = ? AND (mo.fqn = 'layers.0' OR mo.fqn LIKE 'layers.0.%') "
                              "AND m.time_ns < (SELECT start_ns + duration_ns FROM steps WHERE rank = 0 AND number = 0)", cat)[0][0]
            self.assertEqual(owned, want, cat)
        # Every category the issue names is present in the recording.
        cats = {c for (c,) in run.query(self.profile, "SELECT DISTINCT e.label FROM memory_events m JOIN enums e ON "
                                        "e.type = 'memory_category' AND e.value = m.category")}
        self.assertLessEqual({"sharded_parameter", "unsharded_parameter", "gradient", "optimizer_state", "activation",
                              "all_gather_buffer", "reduce_scatter_buffer", "temporary"}, cats)


if __name__ == "__main__":
    unittest.main()
