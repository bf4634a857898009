"""`shardscope record` on the user loop (tests/python/user_loop.py; CPU, gloo, 2 ranks) calling its
model more than once a pass: on two inputs before one backward (--two-forwards: a siamese loss,
DPO's chosen and rejected), under no_grad before the training forward (--rollouts: RLHF's
generation, PPO's old log-probabilities) and through a generation method registered with
register_fsdp_forward_method (--generate). FSDP2 gathers a resharding block at every call and
again for the second backward through it; keeping it unsharded removes the forward re-gathers only.
The replay had made 13 all-gathers a step for the two-forward job's 17 and, for a plan keeping two
blocks, 11 and 15 where the jobs made 13 and 11. Asserted: the job's collectives per step (with and
without the plan), the replay's and the plan's counts against them, the replay's peak."""
import _torch_or_skip  # noqa: F401

import json
import os
import tempfile
import unittest

import fsdp2_run as run
from user_loop_runs import PEAK_TOLERANCE_PCT, STEPS, WORLD, UserLoopRuns

KEPT = ["layers.1", "layers.2"]


class RepeatedCalls(UserLoopRuns, unittest.TestCase):
    def check_calls(self, name, fwd_calls, bwd_calls, *args):
        """Records the loop as is and with KEPT kept unsharded; the job's all-gathers per step: the
        root once (it stays unsharded), a resharding block at each forward and backward call, a
        kept one at its first forward and at each backward after the first; one reduce-scatter a
        unit. The plan's prediction from the first recording is the second job's count."""
        profile, job = self.recorded(name, *args)
        kept_profile, _ = self.recorded(name + "_kept", "--unsharded", ",".join(KEPT), *args)
        units = job["units"]
        blocks = [u for u in units if u]
        reductions = [("reduce_scatter", 4 * n) for n in units.values()]

        def gathers(kept):
            per_block = [bwd_calls if u in kept else fwd_calls + bwd_calls for u in blocks]
            return sorted([("all_gather", 4 * units[""])] + [("all_gather", 4 * units[u]) for u, n in zip(blocks, per_block)
                                                             for _ in range(n)])

        for path, kept in ((profile, []), (kept_profile, KEPT)):
            want = sorted(gathers(kept) + reductions)
            for rank in range(WORLD):
                self.assertEqual(run.fsdp_collectives_per_step(path, rank), {n: want for n in range(STEPS)},
                                 "%s rank %d" % (os.path.basename(path), rank))
        report = json.loads(run.shardscope("simulate", profile, "--format", "json"))
        self.assertEqual((report["all_gathers"], report["reduce_scatters"]), (len(gathers([])), len(units)))
        self.assertEqual(report["measured_breakdown"]["repeat_call_units"], len(units))  # the root is called again too
        measured = report["measured_breakdown"]["peak_memory_bytes"]
        self.assertLessEqual(abs(report["peak_memory_bytes"] - measured) / measured * 100, PEAK_TOLERANCE_PCT, report)
        with tempfile.NamedTemporaryFile("w", suffix=".json", dir=self.dir, delete=False) as f:
            json.dump({"unsharded": KEPT}, f)
        planned = json.loads(run.shardscope("simulate", profile, "--plan", f.name, "--format", "json"))
        self.assertEqual(planned["all_gathers"], len(gathers(KEPT)))
        # Recorded with the blocks kept, the replay is the job, and resharding them again gives the first.
        kept_report = json.loads(run.shardscope("simulate", kept_profile, "--format", "json"))
        self.assertEqual(kept_report["all_gathers"], len(gathers(KEPT)))

    def test_a_model_called_on_two_inputs_before_one_backward(self):
        self.check_calls("two_forwards", 2, 2, "--two-forwards")

    def test_no_grad_rollouts_before_the_training_forward(self):
        self.check_calls("rollouts", 3, 1, "--rollouts", "2")

    def test_generation_through_a_registered_forward_method(self):
        # RLHF's generation as a method that runs the model's parts itself (not model(x)),
        # registered with register_fsdp_forward_method so that FSDP2 gathers the root for it. No
        # module call opens it: the hooks had named its first call, the input layer, as the model
        # ("", the root's parameters under "FSDPNet") and each block as a model of its own
        # ("FSDPBlock"); the replay made 9 all-gathers a step for the job's 17 (-11.5 %).
        self.check_calls("generate", 3, 1, "--generate", "2")
        report = json.loads(run.shardscope("simulate", os.path.join(self.dir, "generate.ssdb"), "--format", "json"))
        job = json.load(open(os.path.join(self.dir, "generate.json")))
        self.assertEqual({u["name"]: u["params"] for u in report["units"]}, job["units"])
        self.assertTrue(report["replay_collectives"]["match"], report["replay_collectives"])

    def test_two_inputs_with_accumulation_reducing_on_the_last_pass(self):
        # Two passes a step, the first without reduction (no_sync): its unsharded gradients are
        # still on the blocks in the second, whose first post-backward through a block reduces
        # them and whose second reduces the pass's own (autograd accumulates a parameter used
        # twice once both backwards are done). The replay does the same: it had reduced each
        # block once (5 reduce-scatters a step for the job's 9, -4.3 %).
        profile, job = self.recorded("two_forwards_no_sync", "--two-forwards", "--micro-batches", "2", "--no-sync")
        units = job["units"]
        blocks = [u for u in units if u]
        want = sorted([("all_gather", 4 * units[""])] * 2 + [("all_gather", 4 * units[u]) for u in blocks for _ in range(8)]
                      + [("reduce_scatter", 4 * units[""])] + [("reduce_scatter", 4 * units[u]) for u in blocks for _ in range(2)])
        for rank in range(WORLD):
            self.assertEqual(run.fsdp_collectives_per_step(profile, rank), {n: want for n in range(STEPS)}, "rank %d" % rank)
        report = json.loads(run.shardscope("simulate", profile, "--format", "json"))
        self.assertEqual((report["all_gathers"], report["reduce_scatters"]), (2 + 8 * len(blocks), 1 + 2 * len(blocks)))
        self.assertTrue(report["replay_collectives"]["match"], report["replay_collectives"])
        measured = report["measured_breakdown"]["peak_memory_bytes"]
        self.assertLessEqual(abs(report["peak_memory_bytes"] - measured) / measured * 100, PEAK_TOLERANCE_PCT, report)


if __name__ == "__main__":
    unittest.main()
