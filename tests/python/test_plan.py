"""Tests for shardscope.plan.apply_plan: with a fake module tree (always) and with torch (when
importable; FSDP itself needs a process group, so torch's fully_shard is replaced by a recorder)."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "profiler", "python", "shardscope"))
import plan as ssplan  # noqa: E402  (the module alone; the package's __init__ belongs to another part)


class FakeModule:
    def __init__(self, children=None):
        self.children = children or {}

    def named_children(self):
        return iter(self.children.items())

    def get_submodule(self, name):
        m = self
        for part in name.split("."):
            if part not in m.children:
                raise AttributeError(part)
            m = m.children[part]
        return m


def fake_model():
    layers = FakeModule({str(i): FakeModule({"attention": FakeModule(), "feed_forward": FakeModule()}) for i in range(4)})
    return FakeModule({"layers": layers, "norm": FakeModule(), "output": FakeModule()})


class Recorder:
    def __init__(self):
        self.calls = []

    def __call__(self, module, **kwargs):
        self.calls.append((module, kwargs))


class ApplyPlanTest(unittest.TestCase):
    def test_applies_false_and_k_innermost_first(self):
        model = fake_model()
        rec = Recorder()
        plan = {"unsharded": ["layers.3", "layers.2.attention"], "reshard_after_forward": {"layers.0": 8, "layers.1": True}}
        applied = ssplan.apply_plan(model, plan, fully_shard_fn=rec, mesh="M")
        self.assertEqual([n for n, _ in applied], ["layers.2.attention", "layers.0", "layers.3"])
        self.assertIs(rec.calls[0][0], model.get_submodule("layers.2.attention"))
        self.assertEqual(rec.calls[0][1], {"reshard_after_forward": False, "mesh": "M"})
        self.assertEqual(rec.calls[1][1]["reshard_after_forward"], 8)

    def test_a_bucket_is_one_call_with_its_members_policy(self):
        # fully_shard([m1, m2]): one all-gather for the list; kept unsharded if a member is (the
        # simulator's rule), else the largest k; other planned modules one call each, innermost first.
        model = fake_model()
        rec = Recorder()
        plan = {"unsharded": ["layers.1", "norm"], "reshard_after_forward": {"layers.2": 2},
                "buckets": [["layers.0", "layers.1"], ["layers.2", "layers.3"], ["output"]]}
        applied = ssplan.apply_plan(model, plan, fully_shard_fn=rec, mesh="M")
        self.assertEqual([n for n, _ in applied], ["layers.0", "layers.1", "layers.2", "layers.3", "norm"])
        self.assertEqual(len(rec.calls), 3)
        self.assertEqual(rec.calls[0][0], [model.get_submodule("layers.0"), model.get_submodule("layers.1")])
        self.assertEqual(rec.calls[0][1], {"reshard_after_forward": False, "mesh": "M"})
        self.assertEqual(rec.calls[1][0], [model.get_submodule("layers.2"), model.get_submodule("layers.3")])
        self.assertEqual(rec.calls[1][1]["reshard_after_forward"], 2)
        self.assertIs(rec.calls[2][0], model.get_submodule("norm"))

    def test_the_buckets_caps_formed_are_applied_and_caps_alone_are_said_not_to_be(self):
        model = fake_model()
        rec = Recorder()
        # plan -o writes what the caps formed on the profiled model as fsdp2_buckets (explicit lists included).
        ssplan.apply_plan(model, {"bucket_cap_mb": {"default": 25}, "buckets": [["norm", "output"]],
                                  "fsdp2_buckets": [["layers.0", "layers.1", "layers.2"], ["norm", "output"]]},
                          fully_shard_fn=rec)
        self.assertEqual([len(m) for m, _ in rec.calls], [3, 2])
        self.assertEqual([kw["reshard_after_forward"] for _, kw in rec.calls], [True, True])
        rec = Recorder()
        with self.assertWarnsRegex(UserWarning, "bucket_cap_mb is not applied"):
            ssplan.apply_plan(model, {"bucket_cap_mb": {"default": 25}, "unsharded": ["norm"]}, fully_shard_fn=rec)
        self.assertEqual(len(rec.calls), 1)

    def test_bad_buckets_apply_nothing(self):
        for plan, message in (({"buckets": [["layers.0", "layers.9"]]}, "layers.9"),
                              ({"buckets": [["layers.0", "layers.1"], ["layers.1", "norm"]]}, "in buckets 0 and 1"),
                              ({"buckets": [["layers.0", "layers.0.attention"]]}, "is inside 'layers.0'"),
                              ({"buckets": ["layers.0"]}, "a list of lists")):
            rec = Recorder()
            with self.assertRaisesRegex(ValueError, message):
                ssplan.apply_plan(fake_model(), plan, fully_shard_fn=rec)
            self.assertEqual(rec.calls, [])

    def test_reads_a_plan_file_written_by_the_cli(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "plan.json")
            with open(path, "w") as f:
                json.dump({"unsharded": ["layers.3"], "predicted": {"step_time_ms": 1.0}, "fsdp2_python": "..."}, f)
            rec = Recorder()
            ssplan.apply_plan(fake_model(), path, fully_shard_fn=rec)
            self.assertEqual(len(rec.calls), 1)

    def test_parallelism_is_reported_not_silently_dropped(self):
        rec = Recorder()
        plan = {"unsharded": [], "parallelism": {"tp": 2, "pp": 1}}
        with self.assertWarnsRegex(UserWarning, "tp=2"):
            ssplan.apply_plan(fake_model(), plan, fully_shard_fn=rec)
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            ssplan.apply_plan(fake_model(), {"unsharded": [], "parallelism": {"tp": 1}}, fully_shard_fn=rec)

    def test_unknown_module_applies_nothing(self):
        rec = Recorder()
        with self.assertRaisesRegex(ValueError, "layers.9"):
            ssplan.apply_plan(fake_model(), {"unsharded": ["layers.0", "layers.9"]}, fully_shard_fn=rec)
        self.assertEqual(rec.calls, [])

    def test_a_plan_of_two_models_is_applied_to_one_with_root(self):
        # A profile of a student beside its teacher: the teacher, called first, is "" and the
        # student "FSDPNet" (record names a second model by its class).
        plan = {"unsharded": ["FSDPNet.layers.3", "FSDPNet.layers.2", "layers.0", "FSDPNet"],
                "reshard_after_forward": {"FSDPNet.norm": 2, "norm": False},
                "activation_checkpointing": {"FSDPNet.layers.1": "full", "*": "attention"}}
        student = fake_model()
        rec = Recorder()
        with self.assertRaisesRegex(ValueError, r"'FSDPNet\.layers\.2'.*second model.*root='FSDPNet'"):
            ssplan.apply_plan(student, plan, fully_shard_fn=rec)
        self.assertEqual(rec.calls, [])
        mine = ssplan.plan_for_root(plan, "FSDPNet", student)
        self.assertEqual(mine["unsharded"], ["layers.3", "layers.2", ""])
        self.assertEqual(mine["reshard_after_forward"], {"norm": 2})
        self.assertEqual(mine["activation_checkpointing"], {"layers.1": "full"})
        theirs = ssplan.plan_for_root(plan, "", student)
        self.assertEqual(theirs["unsharded"], ["layers.0"])
        self.assertEqual(theirs["reshard_after_forward"], {"norm": False})
        self.assertEqual(theirs["activation_checkpointing"], {"*": "attention"})
        # Prefetch lists: each model's own, a list naming units of both dropped whole.
        lists = {"forward_prefetch": {"FSDPNet.layers.0": ["FSDPNet.layers.1", "FSDPNet.layers.2"],
                                      "layers.0": ["layers.1"], "FSDPNet.layers.3": ["layers.0"]}}
        self.assertEqual(ssplan.plan_for_root(lists, "FSDPNet", student)["forward_prefetch"],
                         {"layers.0": ["layers.1", "layers.2"]})
        self.assertEqual(ssplan.plan_for_root(lists, "", student)["forward_prefetch"], {"layers.0": ["layers.1"]})
        buckets = {"buckets": [["FSDPNet.layers.0", "FSDPNet.layers.1"], ["layers.2", "FSDPNet.layers.3"], ["norm", "output"]]}
        self.assertEqual(ssplan.plan_for_root(buckets, "FSDPNet", student)["buckets"], [["layers.0", "layers.1"]])
        self.assertEqual(ssplan.plan_for_root(buckets, "", student)["buckets"], [["norm", "output"]])
        applied = ssplan.apply_plan(student, {k: v for k, v in plan.items() if k != "activation_checkpointing"},
                                    fully_shard_fn=rec, root="FSDPNet")
        self.assertEqual([n for n, _ in applied], ["layers.2", "layers.3", "norm", ""])  # innermost first, the root last
        self.assertEqual([kw["reshard_after_forward"] for _, kw in rec.calls], [False, False, 2, False])
        self.assertIs(applied[3][1], student)

    def test_prefetch_lists_on_a_model_it_shards_are_left_to_apply_prefetch(self):
        # Lists name units that exist only once the rest of the model is sharded (by the job, after
        # apply_plan): said, not dropped silently; the unshard part is applied.
        rec = Recorder()
        with self.assertWarnsRegex(UserWarning, "apply_prefetch"):
            ssplan.apply_plan(fake_model(), {"unsharded": ["norm"], "forward_prefetch": {"layers.0": ["layers.1"]}},
                              fully_shard_fn=rec)
        self.assertEqual(len(rec.calls), 1)
        with self.assertRaisesRegex(ValueError, "backward_prefetch: expected an object"):
            ssplan.apply_plan(fake_model(), {"unsharded": ["norm"], "backward_prefetch": ["layers.1"]}, fully_shard_fn=rec)

    def test_bad_json_is_a_clear_error(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "bad.json")
            with open(path, "w") as f:
                f.write('{"unsharded": [')
            with self.assertRaisesRegex(ValueError, "bad.json: invalid JSON at line 1"):
                ssplan.apply_plan(fake_model(), path, fully_shard_fn=Recorder())


class PackageTest(unittest.TestCase):
    def test_one_call_from_the_package(self):
        try:
            import shardscope
            from shardscope.plan import apply_plan
        except ImportError as e:  # the package's other modules are not importable here
            self.skipTest("shardscope package not importable: %s" % e)
        self.assertIs(shardscope.apply_plan, apply_plan)
        rec = Recorder()
        shardscope.apply_plan(fake_model(), {"unsharded": ["norm"]}, fully_shard_fn=rec)
        self.assertEqual(len(rec.calls), 1)


try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


@unittest.skipUnless(HAVE_TORCH, "torch is not importable")
class TorchModelTest(unittest.TestCase):
    def test_real_module_tree(self):
        import torch.nn as nn
        model = nn.Sequential(nn.Linear(4, 4), nn.Sequential(nn.Linear(4, 4), nn.ReLU()))
        rec = Recorder()
        ssplan.apply_plan(model, {"unsharded": ["1.0", "0"]}, fully_shard_fn=rec)
        self.assertIs(rec.calls[0][0], model[1][0])
        self.assertIs(rec.calls[1][0], model[0])

    def test_an_unknown_unit_wraps_nothing_for_checkpointing_either(self):
        # The checkpoint wrappers went in before the unsharded names were looked up: a stale plan
        # left the model checkpointed and unsharded.
        import torch.nn as nn
        model = nn.Sequential(nn.Linear(4, 4), nn.Sequential(nn.Linear(4, 4), nn.ReLU()))
        with self.assertRaisesRegex(ValueError, "'9'"):
            ssplan.apply_plan(model, {"unsharded": ["9"], "activation_checkpointing": {"1": "full"}}, fully_shard_fn=Recorder())
        self.assertIs(type(model[1]), nn.Sequential)


if __name__ == "__main__":
    unittest.main()
