"""`shardscope record` on a user's own FSDP2 loop (tests/python/user_loop.py; CPU, gloo, 2 ranks):
the root holds parameters, the blocks have biases and a LayerNorm, AdamW has its defaults, and the
loop accumulates gradients over micro-batches, or clips, logs and evaluates (--extras). What the
program fixes is asserted: the optimizer state alive at every step's end (AdamW's two fp32
moments of the rank's shard and a step count per parameter), the collectives of every step, and
the replay's micro-batches, reductions and collectives; and the replay's peak is the measured one,
calibrated (the importer had freed the whole optimizer state at the first step's end, and the
model could not explain the measured peak)."""
import _torch_or_skip  # noqa: F401

import json
import os
import shutil
import tempfile
import unittest

import fsdp2_run as run

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "user_loop.py")
STEPS = 4
WORLD = 2
PEAK_TOLERANCE_PCT = 3.0


class UserLoop(unittest.TestCase):
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

    def check_loader_workers_are_no_ranks(self, profile, job):
        # The ranks are the job's two training processes; the loader workers (two a rank, each of
        # which made batches the rank trained on) are none: before, each spawned worker imported
        # torch with its rank's RANK and was merged as one more rank ("rank 0 appears twice").
        self.assertEqual([len(p["loader"]) for p in job["pids"]], [2] * WORLD, job["pids"])
        self.assertEqual(run.query(profile, "SELECT rank, pid FROM ranks ORDER BY rank"),
                         [(rank, p["rank"]) for rank, p in enumerate(job["pids"])])

    def test_plain_loop(self):
        profile, _ = self.check("plain", 1, 1, record_args=["--keep-parts"])
        # Files of the two ranks only: torchrun's agent (`python -m torch.distributed.run`, which
        # imports torch while sys.argv[0] is "-m") had run the hooks and a torch.profiler trace of
        # its own for the whole job.
        parts = sorted(os.listdir(profile + ".parts"))
        self.assertTrue(parts and all(p.startswith(("shardscope_rank0_", "shardscope_rank1_")) for p in parts), parts)

    def test_gradient_accumulation(self):
        self.check("accumulate", 2, 2, "--micro-batches", "2")

    def test_gradient_accumulation_without_sync(self):
        self.check("no_sync", 2, 1, "--micro-batches", "2", "--no-sync")

    def test_gradient_accumulation_with_parameters_held_between_passes(self):
        self.check("held", 2, 1, "--micro-batches", "2", "--no-sync", "--no-reshard-after-backward", held=True)

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
        self.assertEqual((report["all_gathers"], report["reduce_scatters"]),
                         (2 * len(units) - 1 + len(units) - 1, len(units)))
        measured = report["measured_breakdown"]["peak_memory_bytes"]
        self.assertLessEqual(abs(report["peak_memory_bytes"] - measured) / measured * 100, PEAK_TOLERANCE_PCT, report)

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

    def test_a_model_compiled_whole(self):
        # torch.compile(model): the wrapper stands for the model (no "_orig_mod." names), and the
        # units' ranges are recorded although Dynamo traces through them.
        self.check("compiled", 1, 1, "--compile")
        profile = os.path.join(self.dir, "compiled.ssdb")
        names = [n for (n,) in run.query(profile, "SELECT fqn FROM modules")]
        self.assertFalse([n for n in names if "_orig_mod" in n], names)
        # Dynamo's warning about global module hooks (record's) says nothing of the job: not shown.
        self.assertNotIn("when there are global hooks", self.outputs["compiled"])
        for rank in range(WORLD):
            ranges = run.query(profile, "SELECT m.fqn, e.label, count(*) FROM ranges r JOIN modules m ON m.id = r.module_id "
                               "JOIN enums e ON e.type = 'range_phase' AND e.value = r.phase JOIN enums k ON k.type = 'range_kind' "
                               "AND k.value = r.kind WHERE r.rank = ? AND k.label = 'module' AND m.is_fsdp_unit = 1 "
                               "GROUP BY 1, 2", rank)
            units = sorted(json.load(open(os.path.join(self.dir, "compiled.json")))["units"])
            self.assertEqual(sorted(ranges), sorted((u, phase, STEPS) for u in units for phase in ("forward", "backward")))

    def test_a_model_compiled_whole_with_a_capture_window(self):
        # Before, the hooks' name lookup ran inside Dynamo's trace before the window and failed the
        # job's compile ("FSDPManagedNNModuleVariable ... already tracked for mutation").
        profile, job = self.recorded("compiled_window", "--compile", steps=6, record_args=["--steps", "2:4"])
        report = json.loads(run.shardscope("simulate", profile, "--format", "json"))
        units = job["units"]
        self.assertEqual((report["all_gathers"], report["reduce_scatters"]), (2 * len(units) - 1, len(units)))
        self.assertEqual(report["unobserved"]["steps"], 3)  # steps 1, 4, 5 (step 0 has no start to time from)

    def test_clipping_a_logged_loss_and_an_evaluation(self):
        # --extras: clip_grad_norm_ and the logged loss all-reduce once each a step (the loss's
        # 4 B); the evaluation after steps 1 and 3 runs in step 2 (after step 3 no step follows).
        profile, job = self.recorded("extras", "--extras")
        units = job["units"]
        blocks = [("all_gather", 4 * n) for u, n in units.items() if u != ""]
        train = sorted([("all_gather", 4 * n) for u, n in units.items() for _ in range(1 if u == "" else 2)]
                       + [("reduce_scatter", 4 * n) for n in units.values()])
        for rank in range(WORLD):
            got = run.fsdp_collectives_per_step(profile, rank)
            self.assertEqual(got, {n: sorted(train + blocks) if n == 2 else train for n in range(STEPS)}, "rank %d" % rank)
            own = run.query(profile, "SELECT s.number, c.bytes FROM collectives c JOIN steps s ON s.rank = c.rank AND "
                            "c.start_ns >= s.start_ns AND c.start_ns < s.start_ns + s.duration_ns JOIN enums e ON "
                            "e.type = 'collective_type' AND e.value = c.type WHERE c.rank = ? AND e.label = 'all_reduce'", rank)
            for n in range(STEPS):
                self.assertEqual(len([b for m, b in own if m == n]), 2, "rank %d step %d: %s" % (rank, n, own))
                self.assertIn((n, 4), own)
        # The replay: the training step (steps 1 and 3; step 0 is the warm-up), its FSDP collectives,
        # and the loop's all-reduces as measured, not taken for HSDP's.
        report = json.loads(run.shardscope("simulate", profile, "--format", "json"))
        measured = report["measured_breakdown"]
        self.assertEqual((measured["steps_used"], measured["forward_only_steps_left_out"]), (2, 1))
        self.assertEqual(measured["other_collectives"], 2 * 2)
        self.assertGreater(measured["other_comm_ms"], 0)
        self.assertEqual((report["all_gathers"], report["reduce_scatters"], report["all_reduces"]),
                         (len(train) - len(units), len(units), 0))
        self.assertEqual(report["replicate"], 1)


if __name__ == "__main__":
    unittest.main()
