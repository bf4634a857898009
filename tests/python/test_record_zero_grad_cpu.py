"""`shardscope record` on the user loop (tests/python/user_loop.py; CPU, gloo, 2 ranks) calling
zero_grad() where loops do: at the next iteration's start, or after the forward right before
loss.backward() (`out = model(x); opt.zero_grad(); loss.backward()`), where the previous step's
sharded gradients live through the whole forward. Taken for set_to_none=False, the replay held them
the whole step: beside the new ones in backward, its peak there, and a plan's calibrated forward
peak 4.6 % under the job's. And zero_grad(set_to_none=False) (torchtitan's default), which keeps the
first step's gradients for the whole run: a CPU trace records no free of them, as of blocks lost on
gloo's worker thread, and the importer had freed them in their step. Asserted: the gradient memory the
job holds at each step's forward, backward and optimizer step (fixed by the program), what the replay
finds, and where its peak is."""
import _torch_or_skip  # noqa: F401

import json
import unittest

import fsdp2_run as run
from user_loop_runs import STEPS, WORLD, UserLoopRuns


class ZeroGradPlacement(UserLoopRuns, unittest.TestCase):
    def gradient_live(self, profile, rank, phase):
        """[gradient bytes live at each step's first module range of `phase`] on `rank`."""
        out = []
        for n, t0, t1 in run.query(profile, "SELECT number, start_ns, start_ns + duration_ns FROM steps WHERE rank = ? "
                                   "ORDER BY number", rank):
            (start,), = run.query(profile, "SELECT min(start_ns) FROM range_view WHERE rank = ? AND kind = 'module' AND "
                                  "phase = ? AND start_ns >= ? AND start_ns < ?", rank, phase, t0, t1)
            (live,), = run.query(profile, "SELECT coalesce(sum(m.bytes), 0) FROM memory_events m JOIN enums e ON "
                                 "e.type = 'memory_category' AND e.value = m.category WHERE m.rank = ? AND "
                                 "e.label = 'gradient' AND m.time_ns <= ?", rank, start)
            out.append(live)
        return out

    def test_zero_grad_right_before_the_backward(self):
        profile, job = self.recorded("before_backward", "--zero-grad", "before-backward")
        sharded = 4 * job["params"] // WORLD  # fp32, half the model a rank
        for rank in range(WORLD):  # the previous step's through the forward (none before step 0), none at the backward
            self.assertEqual(self.gradient_live(profile, rank, "forward"), [0] + [sharded] * (STEPS - 1), rank)
            self.assertEqual(self.gradient_live(profile, rank, "backward"), [0] * STEPS, rank)
        report = json.loads(run.shardscope("simulate", profile, "--format", "json"))
        measured = report["measured_breakdown"]
        self.assertTrue(measured["sharded_grads_kept"])
        self.assertTrue(measured["sharded_grads_freed_before_backward"])
        # The replay's peak is in the forward, where the job's is (1 MB of gradients live there).
        self.assertEqual(report["peak_memory"]["phase"], "forward", report["peak_memory"])
        self.assertEqual(report["peak_memory"]["by_category"]["sharded_grad"], sharded)

    def test_zero_grad_at_the_iterations_start(self):
        profile, job = self.recorded("before_forward", "--zero-grad", "before-forward")
        for rank in range(WORLD):
            self.assertEqual(self.gradient_live(profile, rank, "forward"), [0] * STEPS, rank)
        measured = json.loads(run.shardscope("simulate", profile, "--format", "json"))["measured_breakdown"]
        self.assertFalse(measured["sharded_grads_kept"])
        self.assertFalse(measured["sharded_grads_freed_before_backward"])

    def test_zero_grad_in_place(self):
        """FSDP2 makes the first step's sharded gradients (each unit's reduce output) and adds the later
        steps' into them, freeing those at once. The first step's are never freed, and the CPU trace has
        no free for them: the importer had taken them for frees lost on gloo's worker thread and put each
        where a block of its size made at the same place in a later step is freed (a later reduce
        output, freed right after its sum), so no gradient was live at any optimizer step (torchtitan
        on 2 ranks: its step's peak 12 MB short, 59 of 71 MB). The hooks now name the gradients."""
        profile, job = self.recorded("in_place", "--zero-grad", "keep")
        sharded = 4 * job["params"] // WORLD
        for rank in range(WORLD):
            kept = [0] + [sharded] * (STEPS - 1)  # none before the first backward
            self.assertEqual(self.gradient_live(profile, rank, "forward"), kept, rank)
            self.assertEqual(self.gradient_live(profile, rank, "backward"), kept, rank)
            self.assertEqual(run.parameter_gradients_at_optimizer(profile, rank), [sharded] * STEPS, rank)
        report = json.loads(run.shardscope("simulate", profile, "--format", "json"))
        measured = report["measured_breakdown"]
        self.assertTrue(measured["sharded_grads_kept"])
        self.assertFalse(measured["sharded_grads_freed_before_backward"])
        self.assertEqual(report["peak_memory"]["by_category"]["sharded_grad"], sharded)


if __name__ == "__main__":
    unittest.main()
