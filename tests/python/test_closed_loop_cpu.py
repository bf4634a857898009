"""The closed loop on real FSDP2 training (CPU, gloo, 2 ranks): record A with a capture window
(`record --steps`: the other steps are timed, and the replay is calibrated to them), replay it,
plan B from A alone (manual --modules, and automatic under a budget), run B with
shardscope.apply_plan twice, recorded and unrecorded, and check what the program fixes: the
predicted all-gathers and reduce-scatters (count and bytes per step) are exactly what the recorded
B ran, and the unrecorded B, the job as a user runs it, holds the kept units' parameters after
forward (FSDPMemTracker, at the end of its forward). Timings are not asserted (docs/accuracy.md has
them, both columns, from scripts/closed_loop.py)."""
import _torch_or_skip  # noqa: F401

import json
import os
import shutil
import tempfile
import unittest

import fsdp2_run as run

STEPS = 6
WINDOW = "2:4"   # profiled steps 2 and 3; steps 1, 4 and 5 timed only
TRACKED = 4      # the unrecorded B's FSDPMemTracker step


class ClosedLoopCpu(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="ss_loop_")
        cls.A = os.path.join(cls.dir, "A.ssdb")
        run.record(cls.A, "--tiny", "--steps", str(STEPS), record_args=["--steps", WINDOW])
        cls.units = run.tiny_unit_params()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def predict_and_run(self, name, plan_args):
        plan = os.path.join(self.dir, name + ".json")
        planned = json.loads(run.shardscope("plan", self.A, "-o", plan, "--format", "json", *plan_args))
        predicted = os.path.join(self.dir, name + "_predicted.ssdb")
        prediction = json.loads(run.shardscope("simulate", self.A, "--plan", plan, "-o", predicted, "--format", "json"))
        B = os.path.join(self.dir, name + "_B.ssdb")
        run.record(B, "--tiny", "--steps", str(STEPS), "--plan", plan, record_args=["--steps", WINDOW])
        tracker = os.path.join(self.dir, name + "_free_{rank}.json")
        run.train("--tiny", "--steps", str(STEPS), "--plan", plan, "--mem-tracker-step", str(TRACKED), "--mem-tracker-out", tracker)
        return planned, prediction, predicted, B, tracker

    def unsharded_after_forward(self, tracker):
        """The unrecorded B's unsharded parameters at the end of its forward, per rank (FSDPMemTracker)."""
        out = []
        for rank in range(2):
            with open(tracker.replace("{rank}", str(rank))) as f:
                out.append(json.load(f)["modules"][""]["Before Post-Forward"][0]["cpu"]["Unsharded Param"])
        return out

    def check_exact(self, predicted, B):
        want = list(run.fsdp_collectives_per_step(predicted, 0).values())
        self.assertEqual(len(want), 1)  # one simulated step
        for rank in range(2):
            for step, got in run.fsdp_collectives_per_step(B, rank).items():
                self.assertEqual(got, want[0], "rank %d step %d" % (rank, step))
        return want[0]

    def test_replay_of_a_is_fitted_calibrated_and_counts_match(self):
        replay = json.loads(run.shardscope("simulate", self.A, "--format", "json"))
        self.assertTrue(replay["cluster_fitted"])
        self.assertTrue(replay["unobserved"]["calibrated"])
        self.assertEqual(replay["unobserved"]["steps"], 3)
        self.assertIn("cpu (gloo)", replay["cluster_used"])
        self.assertEqual((replay["all_gathers"], replay["reduce_scatters"]), (5, 3))
        self.assertGreater(replay["measured_breakdown"]["peak_memory_bytes"], 0)

    def test_manual_plan_keeps_layer_unsharded_and_removes_its_backward_all_gather(self):
        planned, prediction, predicted, B, tracker = self.predict_and_run("manual", ["--modules", "layers.1"])
        self.assertEqual(planned["unsharded"], ["layers.1"])
        # apply_plan set the policy on the real model: the recording says so.
        policy = dict(run.query(B, "SELECT fqn, reshard_policy FROM modules WHERE is_fsdp_unit = 1"))
        self.assertEqual(policy["layers.1"], "false")
        self.assertEqual(policy["layers.0"], "true")
        got = self.check_exact(predicted, B)
        ags = [b for t, b in got if t == "all_gather"]
        self.assertEqual(len(ags), 4)  # 3 forward + layers.0's backward re-gather
        self.assertEqual(sorted(ags), sorted([4 * self.units[""], 4 * self.units["layers.0"], 4 * self.units["layers.1"],
                                              4 * self.units["layers.0"]]))
        self.assertEqual((prediction["all_gathers"], prediction["reduce_scatters"]), (4, 3))
        # The job as a user runs it (no record): layers.1 stays gathered after forward, next to the
        # root (FSDP2 keeps the root unsharded), while layers.0 is resharded.
        self.assertEqual(self.unsharded_after_forward(tracker), [4 * (self.units[""] + self.units["layers.1"])] * 2)

    def test_automatic_plan_under_a_budget(self):
        replay = json.loads(run.shardscope("simulate", self.A, "--format", "json"))
        # Room for both layers' parameters on top of A's measured peak.
        budget = replay["measured_breakdown"]["peak_memory_bytes"] + 3 * 4 * self.units["layers.0"]
        planned, prediction, predicted, B, tracker = self.predict_and_run("auto", ["--budget", str(budget), "--strategy", "cost"])
        self.assertTrue(planned["fits_budget"])
        self.assertTrue(planned["unsharded"], planned)
        self.assertLessEqual(prediction["peak_memory_bytes"], budget)
        self.check_exact(predicted, B)
        kept = sum(self.units[u] for u in set(planned["unsharded"]) | {""})
        self.assertEqual(self.unsharded_after_forward(tracker), [4 * kept] * 2)

    def test_alternating_job_switches_between_a_and_the_plan(self):
        """scripts/closed_loop.py --alternate times A and B in one unrecorded process
        (fsdp_train_sample.py --alternate-plan: after the warm-up, blocks A B B A). The switch is
        real: recorded, every B step runs the predicted B's collectives and every A step A's."""
        plan = os.path.join(self.dir, "alternate.json")
        run.shardscope("plan", self.A, "-o", plan, "--modules", "layers.1")
        self.check_alternation("alternate", plan)

    def check_alternation(self, name, plan):
        """Records the job alternating between A and `plan` (one block each after a warm-up step) and
        checks that every step ran its configuration's collectives: A's as profiled, B's as predicted."""
        predicted = os.path.join(self.dir, name + "_predicted.ssdb")
        run.shardscope("simulate", self.A, "--plan", plan, "-o", predicted)
        want = {"A": run.fsdp_collectives_per_step(self.A, 0)[2],  # a profiled step of A
                "B": list(run.fsdp_collectives_per_step(predicted, 0).values())[0]}
        self.assertNotEqual(want["A"], want["B"])
        summary = os.path.join(self.dir, name + "_summary.json")
        AB = os.path.join(self.dir, name + "_AB.ssdb")
        run.record(AB, "--tiny", "--steps", "5", "--warmup", "1", "--alternate-plan", plan, "--alternate-every", "1",
                   "--summary", summary, record_args=["--steps", "0:"])
        with open(summary) as f:
            configs = json.load(f)["step_config"]
        self.assertEqual(configs, ["A", "A", "B", "B", "A"])  # the warm-up, then one block each: A B B A
        for rank in range(2):
            got = run.fsdp_collectives_per_step(AB, rank)
            self.assertEqual(sorted(got), list(range(5)))
            for step, config in enumerate(configs):
                self.assertEqual(got[step], want[config], "rank %d step %d (%s)" % (rank, step, config))

    def test_buckets_the_job_runs_as_predicted_and_a_plan_of_it_keeps_them(self):
        """A plan's buckets (fully_shard([layers.0, layers.1]) through apply_plan): the recorded B
        runs the predicted collectives, one all-gather and one reduce-scatter for the two layers;
        its profile holds the group as one unit, and a plan made from it names both modules for
        Python (fsdp2_buckets), so the job it runs again is the one predicted from it."""
        plan = os.path.join(self.dir, "buckets.json")
        with open(plan, "w") as f:
            json.dump({"buckets": [["layers.0", "layers.1"]]}, f)
        predicted = os.path.join(self.dir, "buckets_predicted.ssdb")
        run.shardscope("simulate", self.A, "--plan", plan, "-o", predicted)
        B = os.path.join(self.dir, "buckets_B.ssdb")
        # FSDPMemTracker follows a profiled step (shardscope.mem_tracker: PyTorch's own re-gathers a
        # bucket per module and fails the next step): that step too runs the predicted collectives.
        tracker = os.path.join(self.dir, "buckets_tracker_{rank}.json")
        run.record(B, "--tiny", "--steps", str(STEPS), "--plan", plan, "--mem-tracker-step", "3", "--mem-tracker-out", tracker,
                   record_args=["--steps", WINDOW])
        got = self.check_exact(predicted, B)
        self.assertIn(3, run.fsdp_collectives_per_step(B, 0))
        pair = 4 * (self.units["layers.0"] + self.units["layers.1"])
        for rank in range(2):  # the pair gathered at once, before layers.0's forward, for both layers
            with open(tracker.replace("{rank}", str(rank))) as f:
                modules = json.load(f)["modules"]
            self.assertEqual(modules["layers.1"]["Before Pre-Forward"][0]["cpu"]["Unsharded Param"], 4 * self.units[""] + pair)
        self.assertEqual(sorted(got), sorted([("all_gather", 4 * self.units[""]), ("all_gather", pair), ("all_gather", pair),
                                              ("reduce_scatter", 4 * self.units[""]), ("reduce_scatter", pair)]))
        # Each member makes its own gradients in its backward (layers.1's, then layers.0's): when
        # layers.0's backward starts, the job has made layers.1's and the prediction holds them,
        # not the pair's.
        sim_l1, sim_l0 = run.module_backward_starts(predicted, "layers.0")[:2]
        self.assertEqual(run.gradient_bytes_made(predicted, sim_l1, sim_l0), 4 * self.units["layers.1"])
        for rank in range(2):
            l1 = run.module_backward_starts(B, "layers.1", rank)[0]
            l0 = next(t for t in run.module_backward_starts(B, "layers.0", rank) if t > l1)
            self.assertEqual(run.gradient_bytes_made(B, l1, l0, rank), 4 * self.units["layers.1"], "rank %d" % rank)
        # The group as the recording stores it: its first module the unit, the other pointing at it.
        rows = dict((fqn, (unit, points)) for fqn, unit, points in run.query(
            B, "SELECT m.fqn, m.is_fsdp_unit, u.fqn FROM modules m LEFT JOIN modules u ON u.id = m.fsdp_unit_id"))
        self.assertEqual(rows["layers.0"][0], 1)
        self.assertEqual(rows["layers.1"], (0, "layers.0"))
        # Planned from B: keeping the group unsharded is one call for both modules.
        plan_c = os.path.join(self.dir, "buckets_keep.json")
        run.shardscope("plan", B, "--modules", "layers.0", "-o", plan_c)
        with open(plan_c) as f:
            written = json.load(f)
        self.assertEqual(written["fsdp2_buckets"], [["layers.0", "layers.1"]])
        # The generated Python runs: one call for the pair (fully_shard stubbed; the model unsharded).
        import fsdp_train_sample as t

        code = written["fsdp2_python"].replace("from torch.distributed.fsdp import fully_shard", "")
        calls = []
        scope = {"fully_shard": lambda m, **kw: calls.append((m, kw["reshard_after_forward"]))}
        exec(compile(code, "fsdp2_python", "exec"), scope)
        model = t.Llama(256, 64, 2, 4, 128)  # the --tiny sizes, as fsdp2_run.tiny_unit_params
        scope["apply_shardscope_plan"](model)
        self.assertEqual(calls, [([model.layers[0], model.layers[1]], False)])
        predicted_c = os.path.join(self.dir, "buckets_keep_predicted.ssdb")
        run.shardscope("simulate", B, "--plan", plan_c, "-o", predicted_c)
        C = os.path.join(self.dir, "buckets_keep_C.ssdb")
        run.record(C, "--tiny", "--steps", str(STEPS), "--plan", plan_c, record_args=["--steps", WINDOW])
        got = self.check_exact(predicted_c, C)
        self.assertEqual(sorted(got), sorted([("all_gather", 4 * self.units[""]), ("all_gather", pair),
                                              ("reduce_scatter", 4 * self.units[""]), ("reduce_scatter", pair)]))

    def test_alternating_with_buckets_switches_between_two_models(self):
        """--alternate-plan with buckets (fixed when FSDP2 shards): B is a second model sharded with
        the plan; recorded, every B step runs B's collectives and every A step A's."""
        plan = os.path.join(self.dir, "alternate_buckets.json")
        with open(plan, "w") as f:
            json.dump({"buckets": [["layers.0", "layers.1"]]}, f)
        self.check_alternation("alternate_buckets", plan)


if __name__ == "__main__":
    unittest.main()
