"""`shardscope record` on the user loop (tests/python/user_loop.py; CPU, gloo, 2 ranks) written the
ways real loops are, each of which record or the replay got wrong: DataLoader workers under the
spawn start method and ranks started by torch.multiprocessing.spawn (recorded as more ranks),
blocks called with their input as a keyword (backward ranges to the end of the pass), a frozen
teacher under no_grad and LoRA adapters (replayed as wholly trained), two optimizers (two steps an
iteration), a checkpoint save (averaged into the measured step), a GAN (not modelled, and said so). What the program fixes is
asserted: ranks and their pids, collectives per step, the replay's collectives, trainable
parameters and peak."""
import _torch_or_skip  # noqa: F401

import json
import os
import unittest

import fsdp2_run as run
from user_loop import DIM, IN
from user_loop_runs import PEAK_TOLERANCE_PCT, STEPS, WORLD, UserLoopRuns


class LoopPatterns(UserLoopRuns, unittest.TestCase):
    def check_loader_workers_are_no_ranks(self, profile, job):
        # The ranks are the job's two training processes; the loader workers (two a rank, each of
        # which made batches the rank trained on) are none: before, each spawned worker imported
        # torch with its rank's RANK and was merged as one more rank ("rank 0 appears twice").
        self.assertEqual([len(p["loader"]) for p in job["pids"]], [2] * WORLD, job["pids"])
        self.assertEqual(run.query(profile, "SELECT rank, pid FROM ranks ORDER BY rank"),
                         [(rank, p["rank"]) for rank, p in enumerate(job["pids"])])

    def test_a_dataloader_with_spawned_workers(self):
        self.check_loader_workers_are_no_ranks(*self.check("loader", 1, 1, "--loader-workers", "2"))

    def test_ranks_started_by_multiprocessing_spawn_each_with_spawned_loader_workers(self):
        # No torchrun: the ranks have no RANK in their environment until init_process_group.
        self.check_loader_workers_are_no_ranks(
            *self.check("spawned", 1, 1, "--spawn-ranks", "2", "--loader-workers", "2", launcher=False))

    def test_blocks_called_with_their_input_as_a_keyword(self):
        # block(x=h): each block's backward range ends with its input's gradient, before the block
        # below it begins, as with block(h) (it had run to the end of the backward pass, and the
        # replay gave the first block's segment the whole backward).
        profile, job = self.check("keyword_calls", 1, 1, "--keyword-calls")
        for rank in range(WORLD):
            for n, t0, t1 in run.query(profile, "SELECT number, start_ns, start_ns + duration_ns FROM steps WHERE rank = ?", rank):
                ranges = run.query(profile, "SELECT m.fqn, r.start_ns, r.start_ns + r.duration_ns FROM ranges r JOIN modules m "
                                   "ON m.id = r.module_id JOIN enums e ON e.type = 'range_phase' AND e.value = r.phase JOIN "
                                   "enums k ON k.type = 'range_kind' AND k.value = r.kind WHERE r.rank = ? AND e.label = "
                                   "'backward' AND k.label = 'module' AND m.is_fsdp_unit = 1 AND m.fqn != '' AND "
                                   "r.start_ns >= ? AND r.start_ns < ? ORDER BY r.start_ns", rank, t0, t1)
                self.assertEqual([u for u, _, _ in ranges], ["layers.%d" % i for i in reversed(range(4))], (rank, n))
                for (_, _, end), (_, start, _) in zip(ranges, ranges[1:]):
                    self.assertLessEqual(end, start, (rank, n, ranges))

    def test_a_frozen_teacher(self):
        # The teacher (sharded the same way, under no_grad, called first, so it is the profile's
        # root "" and the trained model "FSDPNet") gathers its blocks in forward and nothing else
        # (its root, never resharded, not even that); the replay does the same, and reduces the
        # trained model's units only. Replayed as trained: 21 all-gathers and 9 reduce-scatters
        # for the job's 13 and 5, and a peak it could not calibrate.
        profile, job = self.recorded("teacher", "--teacher")
        units = job["units"]
        trained = sorted([("all_gather", 4 * n) for u, n in units.items() for _ in range(1 if u == "" else 2)]
                         + [("reduce_scatter", 4 * n) for n in units.values()])
        teacher = [("all_gather", 4 * n) for u, n in units.items() if u != ""]
        for rank in range(WORLD):
            got = run.fsdp_collectives_per_step(profile, rank)
            for n in range(1, STEPS):  # step 0 also gathers the teacher's root, once
                self.assertEqual(got[n], sorted(trained + teacher), "rank %d step %d" % (rank, n))
        report = json.loads(run.shardscope("simulate", profile, "--format", "json"))
        self.assertEqual(report["measured_breakdown"]["frozen_units"], len(units))
        # Each model's units with their own parameters: the teacher's root had come out with none
        # (the student's root, named "FSDPNet" under it, taken for a unit nested in it).
        self.assertEqual({u["name"]: u["params"] for u in report["units"]},
                         dict(units, **{("FSDPNet." + u if u else "FSDPNet"): n for u, n in units.items()}))
        self.assertEqual((report["all_gathers"], report["reduce_scatters"]),
                         (2 * len(units) - 1 + len(units) - 1, len(units)))
        measured = report["measured_breakdown"]["peak_memory_bytes"]
        self.assertLessEqual(abs(report["peak_memory_bytes"] - measured) / measured * 100, PEAK_TOLERANCE_PCT, report)
        # A plan of both models names the student's units under "FSDPNet": apply_plan takes them
        # for the student with root="FSDPNet" and refuses them without, saying so (its generic
        # "does not have" had left the user to guess; a plan of the teacher's units alone would
        # have gone to the student's namesakes).
        from shardscope.plan import apply_plan
        from user_loop import Net

        plan_path = os.path.join(self.dir, "teacher_plan.json")
        out = run.shardscope("plan", profile, "--budget", "1GiB", "-o", plan_path)
        self.assertIn('the profile holds 2 models: "" (frozen) "FSDPNet"', out)
        with open(plan_path) as f:
            planned = json.load(f)["unsharded"]
        students = sorted("" if n == "FSDPNet" else n[len("FSDPNet."):] for n in planned
                          if n == "FSDPNet" or n.startswith("FSDPNet."))
        self.assertTrue(students, planned)
        student, calls = Net(), []
        with self.assertRaisesRegex(ValueError, "root='FSDPNet'"):
            apply_plan(student, plan_path, fully_shard_fn=lambda m, **kw: calls.append(m))
        self.assertEqual(calls, [])
        applied = apply_plan(student, plan_path, fully_shard_fn=lambda m, **kw: calls.append(m), root="FSDPNet")
        self.assertEqual(sorted(n for n, _ in applied), students)
        self.assertEqual(calls, [student.get_submodule(n) for n, _ in applied])
        # The plan file's Python does the same: it takes root= and names each model's modules
        # relative to it (it had called model.get_submodule("FSDPNet.layers.N"), which fails on
        # either model). fully_shard stubbed; the models unsharded.
        with open(plan_path) as f:
            code = json.load(f)["fsdp2_python"].replace("from torch.distributed.fsdp import fully_shard", "")
        made = []
        scope = {"fully_shard": lambda m, **kw: made.append((m, kw["reshard_after_forward"]))}
        exec(compile(code, "fsdp2_python", "exec"), scope)
        for model, root, want in ((Net(), "FSDPNet", students),
                                  (Net(), "", sorted(n for n in planned if n != "FSDPNet" and not n.startswith("FSDPNet.")))):
            names = {id(m): n for n, m in model.named_modules()}
            made.clear()
            scope["apply_shardscope_plan"](model, root=root)
            self.assertEqual(sorted(names[id(m)] for m, _ in made), want, root)
            self.assertTrue(all(policy is False for _, policy in made), made)

    def test_lora(self):
        # Frozen weights and a trained adapter: every weight is gathered, only the adapters are
        # reduced (the root trains nothing and reduces nothing), and the replay does the same, with
        # gradients and AdamW state of the adapters alone, its peak the measured one. Replayed as
        # wholly trained: 5 reduce-scatters of whole units a step, and a peak 70 % over the job's.
        profile, job = self.recorded("lora", "--lora")
        units, trainable = job["units"], job["trainable"]
        want = sorted([("all_gather", 4 * n) for u, n in units.items() for _ in range(1 if u == "" else 2)]
                      + [("reduce_scatter", 4 * trainable[u]) for u in units if trainable[u]])
        for rank in range(WORLD):
            self.assertEqual(run.fsdp_collectives_per_step(profile, rank), {n: want for n in range(STEPS)}, "rank %d" % rank)
        report = json.loads(run.shardscope("simulate", profile, "--format", "json"))
        self.assertEqual((report["all_gathers"], report["reduce_scatters"]),
                         (2 * len(units) - 1, len([u for u in units if trainable[u]])))
        self.assertEqual({u["name"]: u["trainable_params"] for u in report["units"]}, trainable)
        measured = report["measured_breakdown"]["peak_memory_bytes"]
        self.assertLessEqual(abs(report["peak_memory_bytes"] - measured) / measured * 100, PEAK_TOLERANCE_PCT, report)

    def test_a_frozen_bottom(self):
        # A fine-tune freezing the model's bottom: the root's input layer and layers.0. The
        # backward stops above them; FSDP2's backward prefetch still gathers layers.0 (from
        # layers.1's pre-backward, for nothing), and the root's post-backward callback reduces the
        # root's trained head (while layers.1.norm's range is still open) and reshards layers.0.
        # The replay makes the job's collectives: it had made 8 all-gathers and 3 reduce-scatters
        # for the job's 9 and 4 (no prefetch, the head's reduction counted for layers.1).
        profile, job = self.recorded("frozen_bottom", "--freeze", "inp,layers.0")
        units, trainable = job["units"], job["trainable"]
        self.assertEqual(trainable["layers.0"], 0)
        self.assertEqual(trainable[""], units[""] - (IN + 1) * DIM)  # the head alone
        want = sorted([("all_gather", 4 * n) for u, n in units.items() for _ in range(1 if u == "" else 2)]
                      + [("reduce_scatter", 4 * trainable[u]) for u in units if trainable[u]])
        for rank in range(WORLD):
            self.assertEqual(run.fsdp_collectives_per_step(profile, rank), {n: want for n in range(STEPS)}, "rank %d" % rank)
        report = json.loads(run.shardscope("simulate", profile, "--format", "json"))
        self.assertEqual((report["all_gathers"], report["reduce_scatters"]), (9, 4))
        self.assertTrue(report["replay_collectives"]["match"], report["replay_collectives"])
        self.assertEqual({u["name"]: u["trainable_params"] for u in report["units"]}, trainable)
        measured = report["measured_breakdown"]["peak_memory_bytes"]
        self.assertLessEqual(abs(report["peak_memory_bytes"] - measured) / measured * 100, PEAK_TOLERANCE_PCT, report)

    def test_lora_beside_a_frozen_teacher(self):
        # LoRA adapters trained against a frozen teacher's outputs: FSDP names the student's
        # blocks as the teacher's ("layers.0"), so its reduce-scatters are found under the
        # teacher's modules; they are the student's namesakes'. Only the adapters are reduced, the
        # student's root nothing; the replay had reduced every unit whole, the root too (5
        # reduce-scatters a step for the job's 4, +5.9 %).
        profile, job = self.recorded("lora_teacher", "--lora", "--teacher")
        units, trainable = job["units"], job["trainable"]
        report = json.loads(run.shardscope("simulate", profile, "--format", "json"))
        self.assertEqual(report["reduce_scatters"], len([u for u in units if trainable[u]]))
        self.assertTrue(report["replay_collectives"]["match"], report["replay_collectives"])
        student = {u["name"]: u["trainable_params"] for u in report["units"] if u["name"] == "FSDPNet" or u["name"].startswith("FSDPNet.")}
        self.assertEqual(student, {("FSDPNet." + u if u else "FSDPNet"): n for u, n in trainable.items()})

    def test_two_optimizers(self, window=()):
        # One step an iteration, each with every unit's collectives; each optimizer step had counted
        # as a step (8 steps for 4 iterations, every second one an optimizer call alone), and
        # `simulate` refused the profile: "no forward module range of an FSDP unit lies inside a step".
        steps = 6 if window else STEPS
        name = "two_optimizers" + ("_window" if window else "")
        profile, job = self.recorded(name, "--two-optimizers", steps=steps, record_args=window)
        units = job["units"]
        want = sorted([("all_gather", 4 * n) for u, n in units.items() for _ in range(1 if u == "" else 2)]
                      + [("reduce_scatter", 4 * n) for n in units.values()])
        profiled = range(2, 4) if window else range(steps)
        for rank in range(WORLD):
            self.assertEqual(run.fsdp_collectives_per_step(profile, rank), {n: want for n in profiled}, "rank %d" % rank)
        report = json.loads(run.shardscope("simulate", profile, "--format", "json"))
        self.assertEqual((report["all_gathers"], report["reduce_scatters"]), (2 * len(units) - 1, len(units)))
        self.assertEqual(report["measured_breakdown"]["steps_used"] + report["measured_breakdown"]["long_steps_left_out"],
                         len(profiled) - 1)
        if window:  # the window and the unobserved steps are iterations too: steps 1, 4 and 5
            self.assertEqual(report["unobserved"]["steps"], 3)
            self.assertEqual(sorted(n for (n,) in run.query(profile, "SELECT number FROM unobserved_steps WHERE rank = 0")),
                             [1, 4, 5])

    def test_a_gan_is_said_to_be_unmodelled(self):
        # DCGAN's loop: the discriminator stepped on real samples and the generator's output
        # detached, then the generator through it. Each step: the generator's forward (its root and
        # blocks), the discriminator's two forwards (its root kept unsharded between them) and its
        # backward through both calls, its reduction, its optimizer step; its forward and backward
        # again for the generator's loss, which reduces it a second time, then the generator's
        # backward. Two backward passes with an optimizer step between them are no pass structure
        # the replay has: its collectives differ from the job's (38 all-gathers and 14
        # reduce-scatters for 35 and 15), and `simulate` says so, naming the cause, instead of a
        # step time alone.
        profile, job = self.recorded("gan", "--gan")
        g, d = job["units"], job["disc_units"]
        blocks = lambda units: [n for u, n in units.items() if u != ""]
        want = sorted([("all_gather", 4 * n) for n in g.values()] + [("all_gather", 4 * n) for n in blocks(g)]
                      + [("all_gather", 4 * n) for n in d.values()] * 2 + [("all_gather", 4 * n) for n in blocks(d)] * 4
                      + [("reduce_scatter", 4 * n) for n in g.values()] + [("reduce_scatter", 4 * n) for n in d.values()] * 2)
        self.assertEqual((sum(t == "all_gather" for t, _ in want), sum(t == "reduce_scatter" for t, _ in want)), (35, 15))
        for rank in range(WORLD):
            self.assertEqual(run.fsdp_collectives_per_step(profile, rank), {n: want for n in range(STEPS)}, "rank %d" % rank)
        report = json.loads(run.shardscope("simulate", profile, "--format", "json"))
        check = report["replay_collectives"]
        self.assertFalse(check["match"])
        self.assertEqual(check["measured_fewest_per_step"], {"all_gathers": 35, "reduce_scatters": 15})
        self.assertEqual(check["measured_most_per_step"], check["measured_fewest_per_step"])
        self.assertEqual(check["replay_per_step"], {"all_gathers": report["all_gathers"], "reduce_scatters": report["reduce_scatters"]})
        self.assertIn("a GAN", check["warning"])
        self.assertIn("a GAN", run.shardscope("simulate", profile))
        self.assertIn("a GAN", json.loads(run.shardscope("plan", profile, "--budget", "1GiB", "--format", "json"))
                      ["replay_collectives"]["warning"])
        # The loops it does model say nothing: the plain loop's replay issues the job's collectives.
        plain, _ = self.recorded("gan_plain")
        self.assertTrue(json.loads(run.shardscope("simulate", plain, "--format", "json"))["replay_collectives"]["match"])

    def test_two_optimizers_with_a_capture_window(self):
        self.test_two_optimizers(window=["--steps", "2:4"])

    def test_a_checkpoint_save_between_steps(self):
        # DCP's save after step 2 (sharded state dicts, its planners' gather / scatter / broadcast,
        # the files) makes one step four to six times the others, on an idle machine or beside a
        # CPU burner; averaged in, the replay of a 60 ms step came out at 120 ms.
        folder = os.path.join(self.dir, "checkpoint")
        profile, job = self.recorded("checkpoint", "--checkpoint-after", "2", "--checkpoint-dir", folder, steps=6)
        self.assertTrue(os.path.isfile(os.path.join(folder, ".metadata")))
        report = json.loads(run.shardscope("simulate", profile, "--format", "json"))
        measured = report["measured_breakdown"]
        self.assertGreaterEqual(measured["long_steps_left_out"], 1)
        self.assertEqual(measured["steps_used"] + measured["long_steps_left_out"], 6 - 1)  # step 0: the warm-up
        self.assertEqual(measured["other_collectives"], 0)  # the save's collectives are not the training step's
        units = job["units"]
        self.assertEqual((report["all_gathers"], report["reduce_scatters"]), (2 * len(units) - 1, len(units)))


if __name__ == "__main__":
    unittest.main()
