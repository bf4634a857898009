"""shardscope.plan.apply_plan on a model a trainer has already sharded (torchtitan after its
parallelize step): FSDP2 refuses a second fully_shard ("Each distinct composable distributed API
can only be applied to a module once"), so the plan sets each unit's reshard_after_forward in
place, and its prefetch lists (a profile's recorded ones, or a what-if's). Real FSDP2 on one CPU
rank (gloo)."""
import _torch_or_skip  # noqa: F401

import os
import shutil
import tempfile
import unittest

import torch
import torch.distributed as dist
import torch.nn as nn

from shardscope.plan import apply_plan, apply_prefetch


def prefetches(module):
    """(forward, backward) lists of a unit as FSDP2 holds them: the states of the units it prefetches."""
    state = module._get_fsdp_state()
    return state._states_to_forward_prefetch, state._states_to_backward_prefetch


def reshards(module):
    group = module._get_fsdp_state()._fsdp_param_group
    return group.post_forward_mesh_info is not None


class ApplyPlanToShardedModel(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.store_dir = tempfile.mkdtemp(prefix="ss_plan_sharded_")
        store = dist.FileStore(os.path.join(cls.store_dir, "store"), 1)
        dist.init_process_group("gloo", store=store, rank=0, world_size=1)

    @classmethod
    def tearDownClass(cls):
        dist.destroy_process_group()
        shutil.rmtree(cls.store_dir, ignore_errors=True)

    def sharded_model(self):
        from torch.distributed.fsdp import fully_shard

        model = nn.Sequential(nn.Linear(8, 8), nn.Sequential(nn.Linear(8, 8), nn.ReLU()), nn.LayerNorm(8), nn.Linear(8, 4))
        for i in (0, 1):
            fully_shard(model[i])
        fully_shard([model[2], model[3]])  # one unit of two modules, as torchtitan's norm + output
        fully_shard(model)
        return model

    def test_sets_reshard_after_forward_in_place(self):
        model = self.sharded_model()
        self.assertTrue(reshards(model[1]))
        applied = apply_plan(model, {"unsharded": ["1", "2"]})
        self.assertEqual([n for n, _ in applied], ["1", "2"])
        self.assertFalse(reshards(model[1]))
        self.assertTrue(reshards(model[0]))
        self.assertFalse(reshards(model[3]))  # the grouped unit's other member shares its state
        # The model still trains with the plan.
        model(torch.randn(2, 8)).sum().backward()

    def test_refuses_what_it_cannot_apply_and_applies_nothing(self):
        model = self.sharded_model()
        with self.assertRaisesRegex(ValueError, "not an FSDP unit of the sharded model"):
            apply_plan(model, {"unsharded": ["0", "1.0"]})  # 1.0 is inside unit 1
        with self.assertRaisesRegex(ValueError, "which the model does not have"):
            apply_plan(model, {"unsharded": ["0", "9"]})
        with self.assertRaisesRegex(ValueError, "takes only true / false"):
            apply_plan(model, {"reshard_after_forward": {"0": 2}})
        self.assertTrue(reshards(model[0]))

    def test_sets_the_plans_prefetch_lists(self):
        model = self.sharded_model()
        state = lambda m: m._get_fsdp_state()  # noqa: E731
        apply_plan(model, {"unsharded": ["1"], "forward_prefetch": {"0": ["1", "2"]}, "backward_prefetch": {"2": ["1", "0"]}})
        self.assertEqual(prefetches(model[0]), ([state(model[1]), state(model[2])], []))
        self.assertEqual(prefetches(model[2]), ([], [state(model[1]), state(model[0])]))
        self.assertFalse(reshards(model[1]))
        model(torch.randn(2, 8)).sum().backward()
        # A plan's empty list clears the unit's own.
        self.assertEqual(apply_prefetch(model, {"forward_prefetch": {"0": []}}), 1)
        self.assertEqual(prefetches(model[0]), ([], []))

    def test_a_prefetch_list_naming_no_unit_applies_nothing(self):
        model = self.sharded_model()
        with self.assertRaisesRegex(ValueError, "forward_prefetch names '1.0', not an FSDP unit"):
            apply_plan(model, {"unsharded": ["0"], "forward_prefetch": {"0": ["1.0"]}})
        with self.assertRaisesRegex(ValueError, "expected an object"):
            apply_plan(model, {"backward_prefetch": {"2": "1"}})
        self.assertTrue(reshards(model[0]))
        self.assertEqual(prefetches(model[0]), ([], []))

    def test_a_bucket_the_model_already_has_is_accepted_a_new_one_refused(self):
        # plan -o lists the job's own groups as fsdp2_buckets (torchtitan's [norm, output]):
        # applied in place, as a unit; a bucket the model was not sharded with cannot be made now.
        model = self.sharded_model()
        apply_plan(model, {"unsharded": ["2"], "fsdp2_buckets": [["2", "3"]]})
        self.assertFalse(reshards(model[2]))
        with self.assertRaisesRegex(ValueError, r"buckets that the sharded model does not have \(0\+1\)"):
            apply_plan(model, {"unsharded": ["0"], "fsdp2_buckets": [["0", "1"], ["2", "3"]]})
        self.assertTrue(reshards(model[0]))


class ApplyBucketsBeforeSharding(unittest.TestCase):
    """A plan's buckets (plan --buckets) on a model apply_plan shards: one fully_shard call for the
    list, so FSDP2 gathers its members' parameters in one all-gather."""

    @classmethod
    def setUpClass(cls):
        ApplyPlanToShardedModel.setUpClass.__func__(cls)

    @classmethod
    def tearDownClass(cls):
        ApplyPlanToShardedModel.tearDownClass.__func__(cls)

    def test_a_bucket_is_one_fsdp2_unit(self):
        from torch.distributed.fsdp import FSDPModule, fully_shard

        model = nn.Sequential(*[nn.Linear(8, 8) for _ in range(4)])
        applied = apply_plan(model, {"unsharded": ["1"], "buckets": [["0", "1"], ["2", "3"]]})
        self.assertEqual([n for n, _ in applied], ["0", "1", "2", "3"])
        fully_shard(model)
        state = lambda m: m._get_fsdp_state()  # noqa: E731
        self.assertIs(state(model[0]), state(model[1]))
        self.assertIs(state(model[2]), state(model[3]))
        self.assertIsNot(state(model[0]), state(model[2]))
        group = state(model[0])._fsdp_param_group
        self.assertEqual(len(group.fsdp_params), 4)  # both members' weights and biases: one all-gather
        self.assertFalse(reshards(model[0]))  # kept unsharded: a member is
        self.assertTrue(reshards(model[2]))
        self.assertTrue(all(isinstance(m, FSDPModule) for m in model))
        model(torch.randn(2, 8)).sum().backward()


if __name__ == "__main__":
    unittest.main()
