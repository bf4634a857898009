"""`shardscope record` on FSDP1 (`FullyShardedDataParallel`; tests/python/fsdp1_job.py, CPU, gloo, 2
ranks), record -> simulate -> plan -> apply without editing the loop. Before: the module tree came
out with FSDP1's wrapper names ("layers.0._fsdp_wrapped_module.w1"), each unit's parameters counted
at shard size (or 0 on a rank holding none of a parameter), no unit at all, so `simulate` refused
the profile ("no module is marked as an FSDP unit"); the unsharded FlatParameters were temporaries,
and a prefetched all-gather belonged to the unit that prefetched it."""
import _torch_or_skip  # noqa: F401

import json
import os
import shutil
import tempfile
import unittest

import fsdp2_run as run

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fsdp1_job.py")
STEPS = 3
WORLD = 2
LAYERS = ["layers.0", "layers.1"]  # trainer_patterns.py's model


def record(profile, *args, nproc=WORLD):
    return run.record(profile, "--steps", str(STEPS), *args, script=SCRIPT, nproc=nproc)


class Fsdp1(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="ss_fsdp1_")
        summary = os.path.join(cls.dir, "summary.json")
        cls.full = os.path.join(cls.dir, "full.ssdb")
        record(cls.full, "--summary", summary)
        with open(summary) as f:
            cls.params = json.load(f)["params"]  # the unwrapped model's, by module name

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def modules(self, profile):
        return {fqn: (cls, count, unit, policy) for fqn, cls, count, unit, policy in run.query(
            profile, "SELECT fqn, class_name, param_count, is_fsdp_unit, reshard_policy FROM modules")}

    def unit_bytes(self, name):
        """A unit's all-gather: its parameters in fp32 (the root's own: the model less the blocks)."""
        if name == "":
            return 4 * (self.params[""] - sum(self.params[n] for n in LAYERS))
        return 4 * self.params[name]

    def expected_collectives(self, kept=(), halved=False):
        """Per rank and step: a forward all-gather per unit, a backward one per unit resharded after
        forward (FSDP1 never reshards the root), a reduce-scatter per unit; `halved`: all in bf16."""
        units = [""] + LAYERS
        ag = [("all_gather", self.unit_bytes(u)) for u in units]
        ag += [("all_gather", self.unit_bytes(u)) for u in LAYERS if u not in kept]
        rs = [("reduce_scatter", self.unit_bytes(u)) for u in units]
        return sorted((op, b // 2 if halved else b) for op, b in ag + rs)

    def assert_collectives(self, profile, kept=(), halved=False):
        want = self.expected_collectives(kept, halved)
        for rank in range(WORLD):
            per_step = run.fsdp_collectives_per_step(profile, rank)
            self.assertEqual(sorted(per_step), list(range(STEPS)))
            for step, got in per_step.items():
                self.assertEqual(got, want, "rank %d step %d" % (rank, step))

    def assert_model_tree(self, profile, policies):
        mods = self.modules(profile)
        self.assertFalse([f for f in mods if "_fsdp_wrapped_module" in f])
        # Every module of the model once, by its own name, with its parameters at full size.
        self.assertEqual(sorted(mods), sorted(self.params))
        for name, count in self.params.items():
            self.assertEqual(mods[name][1], count, name)
        units = {f: policy for f, (_, _, unit, policy) in mods.items() if unit}
        self.assertEqual(units, policies)
        self.assertEqual(mods["layers.1"][0], "Block")  # the wrapped module's class, not the wrapper's
        self.assertEqual(mods[""][0], "Model")

    def test_units_names_and_sizes(self):
        self.assert_model_tree(self.full, {"": "false", "layers.0": "true", "layers.1": "true"})
        self.assert_collectives(self.full)

    def test_one_range_per_unit_call(self):
        # The wrapper's range stands for the module it wraps: one forward and one backward range per
        # block, rank and step (the wrapped module gets none of its own).
        for phase in ("forward", "backward"):
            rows = run.query(self.full, "SELECT module, rank, count(*) FROM range_view WHERE kind = 'module' AND "
                             "phase = ? AND module LIKE 'layers._' GROUP BY 1, 2", phase)
            self.assertEqual(sorted(rows), sorted((l, r, STEPS) for l in LAYERS for r in range(WORLD)), phase)

    def test_replay_models_the_measured_collectives(self):
        report = json.loads(run.shardscope("simulate", self.full, "--format", "json"))
        measured = run.fsdp_collectives_per_step(self.full, 0)[1]
        self.assertEqual(report["all_gathers"], len([c for c in measured if c[0] == "all_gather"]))
        self.assertEqual(report["reduce_scatters"], len([c for c in measured if c[0] == "reduce_scatter"]))
        self.assertEqual({u["name"]: u["params"] for u in report["units"]},
                         {"": self.params[""] - sum(self.params[n] for n in LAYERS), **{n: self.params[n] for n in LAYERS}})

    def test_collectives_belong_to_the_unit_they_gather(self):
        # FSDP1's backward prefetch issues layers.0's all-gather inside layers.1's backward: the
        # hooks' "FSDP::unshard (<fqn>)" ranges give each collective the unit it gathers or reduces.
        report = json.loads(run.shardscope("analyze", "overlap", self.full, "--format", "json"))
        table = next(t for t in report["tables"] if t["name"] == "per_unit")
        counts = {row[0]: row[1] for row in table["rows"]}
        per_block = (2 + 1) * STEPS * WORLD  # forward and backward all-gather, one reduce-scatter
        self.assertEqual(counts, {"(root)": (1 + 1) * STEPS * WORLD, **{name: per_block for name in LAYERS}})
        unshards = run.query(self.full, "SELECT count(*) FROM range_view WHERE rank = 0 AND name LIKE 'FSDP::unshard (%'")[0][0]
        self.assertEqual(unshards, (1 + 2 * len(LAYERS)) * STEPS)

    def test_memory_categories_of_the_flat_parameters(self):
        # Each unit's unsharded FlatParameter (allocated where FSDP1 unshards it) is an unsharded
        # parameter: one per all-gather of a block; the sharded ones are named by the hooks' facts.
        for rank in range(WORLD):
            n = run.query(self.full, "SELECT count(*) FROM memory_view WHERE rank = ? AND bytes = ? AND category = "
                          "'unsharded_parameter'", rank, self.unit_bytes("layers.0"))[0][0]
            self.assertEqual(n, 2 * len(LAYERS) * STEPS, rank)
            sharded = run.query(self.full, "SELECT count(*) FROM memory_view WHERE rank = ? AND bytes > 0 AND "
                                "category = 'sharded_parameter'", rank)[0][0]
            self.assertGreater(sharded, 0, rank)

    def test_use_orig_params_counts_whole_parameters(self):
        # use_orig_params=True: the modules hold views of the local shard, some of them empty.
        profile = os.path.join(self.dir, "orig.ssdb")
        record(profile, "--orig-params")
        self.assert_model_tree(profile, {"": "false", "layers.0": "true", "layers.1": "true"})
        self.assert_collectives(profile)

    def test_shard_grad_op_keeps_every_unit(self):
        profile = os.path.join(self.dir, "zero2.ssdb")
        record(profile, "--strategy", "SHARD_GRAD_OP")
        self.assert_model_tree(profile, {"": "false", "layers.0": "false", "layers.1": "false"})
        self.assert_collectives(profile, kept=LAYERS)

    def test_hybrid_shard_replays_as_recorded(self):
        # HYBRID_SHARD on 4 ranks, shard groups of 2: each unit's gradient is reduce-scattered in
        # its shard group, then its shard all-reduced with the other replica. The replay takes that
        # configuration from the profile (before: one shard group of 4 and no all-reduce).
        profile = os.path.join(self.dir, "hsdp.ssdb")
        record(profile, "--hsdp", nproc=4)
        self.assert_model_tree(profile, {"": "false", "layers.0": "true", "layers.1": "true"})
        ops = {(op, size, b): n for op, size, b, n in run.query(
            profile, "SELECT e.label, c.group_size, c.bytes, count(*) FROM collectives c JOIN enums e ON e.type = "
            "'collective_type' AND e.value = c.type JOIN steps s ON s.rank = c.rank AND s.number = 1 WHERE c.rank = 0 "
            "AND c.start_ns >= s.start_ns AND c.start_ns < s.start_ns + s.duration_ns GROUP BY 1, 2, 3")}
        root, block = self.unit_bytes(""), self.unit_bytes("layers.0")
        self.assertEqual(ops, {("all_gather", 2, root): 1, ("all_gather", 2, block): 2 * len(LAYERS),
                               ("reduce_scatter", 2, root): 1, ("reduce_scatter", 2, block): len(LAYERS),
                               ("all_reduce", 2, root // 2): 1, ("all_reduce", 2, block // 2): len(LAYERS)})
        report = json.loads(run.shardscope("simulate", profile, "--format", "json"))
        self.assertEqual((report["shard_group"], report["replicate"]), (2, 2))
        self.assertEqual((report["all_gathers"], report["reduce_scatters"], report["all_reduces"]),
                         (1 + 2 * len(LAYERS), 1 + len(LAYERS), 1 + len(LAYERS)))

    def test_mixed_precision_replays_in_the_dtypes_it_ran_in(self):
        # MixedPrecision(param_dtype=bf16, reduce_dtype=bf16): the FlatParameters gathered and their
        # gradients reduced in bf16, recorded so and replayed so (before: the replay reduced in fp32,
        # twice the bytes the run moved).
        profile = os.path.join(self.dir, "bf16.ssdb")
        record(profile, "--mixed-precision", "bf16-reduce")
        self.assert_collectives(profile, halved=True)
        replayed = os.path.join(self.dir, "bf16_replay.ssdb")
        run.shardscope("simulate", profile, "-o", replayed)
        self.assertEqual(run.fsdp_collectives_per_step(replayed, 0)[0], self.expected_collectives(halved=True))

    def test_a_plan_applied_with_fsdp1_wrap_policy(self):
        # simulate --plan predicts the all-gathers; the plan applied at wrap time makes them.
        plan = os.path.join(self.dir, "plan.json")
        with open(plan, "w") as f:
            json.dump({"unsharded": ["layers.1"]}, f)
        predicted = json.loads(run.shardscope("simulate", self.full, "--plan", plan, "--format", "json"))
        profile = os.path.join(self.dir, "planned.ssdb")
        record(profile, "--plan", plan)
        self.assert_model_tree(profile, {"": "false", "layers.0": "true", "layers.1": "false"})
        self.assert_collectives(profile, kept=["layers.1"])
        measured = run.fsdp_collectives_per_step(profile, 0)[1]
        self.assertEqual(predicted["all_gathers"], len([c for c in measured if c[0] == "all_gather"]))


class Fsdp1WrapPolicy(unittest.TestCase):
    """fsdp1_wrap_policy's refusals, before anything is wrapped (no process group needed)."""

    def model(self):
        import trainer_patterns

        return trainer_patterns.Model(), trainer_patterns.Block

    def test_unknown_module_and_partial_reshard_are_refused(self):
        from shardscope.plan import fsdp1_wrap_policy

        model, block = self.model()
        with self.assertRaisesRegex(ValueError, "'layers.7', which the model does not have"):
            fsdp1_wrap_policy(model, {"unsharded": ["layers.7"]}, {block})
        with self.assertRaisesRegex(ValueError, "FSDP1 has no partial reshard"):
            fsdp1_wrap_policy(model, {"reshard_after_forward": {"layers.0": 2}}, {block})

    def test_a_plan_of_two_models_takes_one_with_root(self):
        # A profile of a teacher ("", called first) beside its student ("Model", named by its
        # class): the student's units wrapped with SHARD_GRAD_OP with root="Model", the teacher's
        # with root=""; without root the student's names are refused with the hint. Before, root
        # was apply_plan's only and a two-model plan could not be applied to FSDP1 at all.
        from torch.distributed.fsdp import ShardingStrategy
        from shardscope.plan import fsdp1_wrap_policy

        model, block = self.model()
        plan = {"unsharded": ["Model.layers.1", "layers.0"]}
        with self.assertRaisesRegex(ValueError, r"'Model\.layers\.1'.*second model.*root='Model'"):
            fsdp1_wrap_policy(model, plan, {block})

        def decisions(policy):  # CustomPolicy keeps its function as _lambda_fn
            return {name: policy._lambda_fn(m) for name, m in model.named_modules() if name.startswith("layers.")
                    and name.count(".") == 1}

        keep = {"sharding_strategy": ShardingStrategy.SHARD_GRAD_OP}
        student = decisions(fsdp1_wrap_policy(model, plan, {block}, root="Model"))
        self.assertEqual(student["layers.1"], keep)
        self.assertIs(student["layers.0"], True)  # a block: its own unit, resharded
        teacher = decisions(fsdp1_wrap_policy(model, plan, {block}, root=""))
        self.assertEqual(teacher["layers.0"], keep)
        self.assertIs(teacher["layers.1"], True)

    def test_apply_plan_on_a_wrapped_model_says_what_to_do(self):
        # A model an FSDP1 trainer already wrapped (Lightning's FSDPStrategy): its strategies are
        # fixed; apply_plan says to use the wrap policy instead of calling fully_shard on it.
        import torch
        import torch.distributed as dist
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from shardscope.plan import apply_plan

        store = dist.HashStore()
        dist.init_process_group("gloo", store=store, rank=0, world_size=1)
        try:
            model, _ = self.model()
            wrapped = FSDP(model, device_id=torch.device("cpu"))
            with self.assertRaisesRegex(ValueError, "fsdp1_wrap_policy"):
                apply_plan(wrapped, {"unsharded": ["layers.0"]})
        finally:
            dist.destroy_process_group()

    def test_hooks_patch_fsdp1_runtime_only_while_installed(self):
        # The unit ranges wrap FSDP1's _unshard / _reduce_grad once a wrapped model is named, and
        # removing the hooks puts FSDP1's own functions back.
        import torch
        import torch.distributed as dist
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, _runtime_utils
        from shardscope.hooks import annotate, RecordingBackend

        originals = (_runtime_utils._unshard, _runtime_utils._reduce_grad)
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
        try:
            model, _ = self.model()
            hooks = annotate(FSDP(model, device_id=torch.device("cpu")), RecordingBackend())
            self.assertTrue(getattr(_runtime_utils._unshard, "_shardscope", False))
            self.assertTrue(getattr(_runtime_utils._reduce_grad, "_shardscope", False))
            hooks.remove()
            self.assertEqual((_runtime_utils._unshard, _runtime_utils._reduce_grad), originals)
        finally:
            dist.destroy_process_group()

    def test_policy_per_module(self):
        from torch.distributed.fsdp import ShardingStrategy
        from shardscope.plan import fsdp1_wrap_policy

        model, block = self.model()
        policy = fsdp1_wrap_policy(model, {"unsharded": ["layers.1", ""]}, {block})
        decide = policy._lambda_fn
        self.assertEqual(decide(model.layers[1]), {"sharding_strategy": ShardingStrategy.SHARD_GRAD_OP})
        self.assertIs(decide(model.layers[0]), True)
        self.assertIs(decide(model.layers[0].w1), False)
        self.assertIs(decide(model), False)  # the root is FSDP's own call


if __name__ == "__main__":
    unittest.main()
