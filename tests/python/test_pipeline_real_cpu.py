"""A real 2-stage pipeline, 4 gloo ranks on the CPU (issue 15), recorded with `shardscope record`:
scripts/fsdp_tp_train.py --tiny --pp 2 (torch.distributed.pipelining, Schedule1F1B, 2
micro-batches; mesh pp 2 x dp 2, each stage fully_shard'ed over its dp pair), compared with
`shardscope simulate --model resources/models/fsdp-sample-tiny.json --plan` (pp 2, 1f1b).

Checked: the recorded collectives and sends / receives of a steady step equal what the shapes give
(parallel_expect.pipeline) and what a TorchDispatchMode counted in the same run; the recording keeps
the training thread's compute lane although gloo runs send / recv on it; the simulator splits the
layers as the run does and predicts its sends exactly. Its FSDP collectives differ from torch's
under a pipeline schedule, as asserted and explained below (docs/accuracy.md, "Real 2D FSDP + TP
and pipeline runs on CPU/gloo"). gloo runs send / recv inline on the training thread; the recorder
names their group with an "ss:pg:" range around the issuing op, so they are compared per group too.
FSDPMemTracker follows step 2 on every rank (shardscope.mem_tracker; PyTorch's own refuses a stage
run once per micro-batch: "FSDPMemTracker does not support memory tracking for multiple iterative
calls"): that step issues the collectives above, and the tracker holds the stage's parameters, half
on each rank of its pair, to the byte."""
import _torch_or_skip  # noqa: F401

import json
import os
import shutil
import tempfile
import unittest

import fsdp2_run as run
import parallel_expect as expect
from test_parallel_real_cpu import counted, on_group

STEPS = 3
COUNTED = 1  # step 0 also exchanges the stages' shapes and warms FSDP2 up
TRACKED = 2  # FSDPMemTracker's step; test_stage_collectives_and_p2p_match_the_shapes checks it too
M = expect.TINY
TINY_MODEL = ["--dim", "64", "--layers", "2", "--heads", "4", "--hidden", "128", "--vocab", "256", "--seq", "32"]  # --tiny, batch aside


class PipelineRun(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="ss_pp_")
        cls.profile = os.path.join(cls.dir, "pp.ssdb")
        cls.tracker = os.path.join(cls.dir, "tracker_{rank}.json")
        run.record(cls.profile, "--tiny", "--pp", "2", "--pp-schedule", "1f1b", "--microbatches", "2", "--steps",
                   str(STEPS), "--counts-out", os.path.join(cls.dir, "counts_{rank}.json"), "--mem-tracker-step",
                   str(TRACKED), "--mem-tracker-out", cls.tracker, nproc=4, script=run.TRAIN_TP)
        cls.sim, cls.sim_ops = run.simulate_model(
            cls.dir, "pp", {"gradient_accumulation": 2, "parallelism": {"pp": 2, "pp_schedule": "1f1b"}}, world=4)
        # The same model recorded without the pipeline (data parallel on 2 ranks, each rank's batch
        # the pipeline's micro-batch, 1), and `simulate` of that profile pipelined like the run, cut
        # where the run cuts (layers.1 starts stage 1). Left to itself the simulator balances the
        # stages by the profile's measured compute, which the machine's load decides: a loaded CI
        # run cut at layers.0.
        unpipelined = os.path.join(cls.dir, "dp.ssdb")
        run.record(unpipelined, *TINY_MODEL, "--batch", "1", "--steps", str(STEPS), nproc=2, script=run.TRAIN_TP)
        cls.from_profile, cls.from_profile_ops = run.simulate_profile(
            unpipelined, cls.dir, "dp_to_pp",
            {"world_size": 4, "gradient_accumulation": 2,
             "parallelism": {"pp": 2, "pp_schedule": "1f1b", "pp_split": ["layers.1"]}})

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_stage_collectives_and_p2p_match_the_shapes(self):
        for rank in range(4):
            for step in (COUNTED, TRACKED):
                got = run.collectives_by_group(self.profile, rank, step)
                self.assertEqual(got, expect.pipeline(M, rank), "rank %d step %d" % (rank, step))

    def test_the_runs_own_count_agrees(self):
        for rank in range(4):
            got = counted(os.path.join(self.dir, "counts_%d.json" % rank), COUNTED)
            self.assertEqual(got, run.collectives_by_group(self.profile, rank, COUNTED), "rank %d" % rank)

    def test_memory_tracker_follows_the_schedule(self):
        """The stage runs once per micro-batch from the schedule, outside any module of it: the
        tracker takes each run as one more call. Its sharded parameters are the stage's, split
        over the dp pair (fp32): the embedding and a layer on stage 0, a layer, the norm and the
        head on stage 1."""
        lp = expect.layer_params(M)
        for rank in range(4):
            with open(self.tracker.replace("{rank}", str(rank))) as f:
                tracked = json.load(f)
            self.assertEqual(tracked["step"], TRACKED)
            stage = rank // 2
            root = expect.root_params(M, embedding=stage == 0, head=stage == 1)
            cpu = tracked["devices"]["cpu"]
            self.assertEqual(cpu["Sharded Param"], expect.F32 * (root + lp) // 2, "rank %d" % rank)
            self.assertGreater(cpu["Activation"], 0)

    def test_simulated_last_stage_holds_what_the_tracker_holds_in_its_last_backward(self):
        """The last stage's FSDP root is the stage module (its parameters: the norm and the head),
        so it is gathered at the stage's pre-forward and reduced after the layer's backward, on the
        stage's input gradient. After layers.1's pre-backward in the last micro-batch the tracker
        (a hook point, not a moment gloo's threads decide) finds root and layer gathered and both
        units' gradients of the first micro-batch held. The simulated stage peaks in that backward
        holding the same, and no reduce-scatter buffer yet (it had reduced the root first, holding
        the layer's 164,352 B gathered, not 230,144)."""
        held = expect.F32 * (expect.root_params(M, embedding=False, head=True) + expect.layer_params(M))
        for rank in (2, 3):
            with open(self.tracker.replace("{rank}", str(rank))) as f:
                snap = json.load(f)["modules"]["layers.1"]["After Pre-Backward"][-1]["cpu"]
            self.assertEqual([snap["Unsharded Param"], snap["Unsharded Grad"]], [held, held], "rank %d" % rank)
        self.assertEqual(self.sim["shown_stage"], 1)
        peak = self.sim["peak_memory"]
        self.assertEqual([peak["module"], peak["phase"]], ["layers.1", "backward"])
        sim = peak["by_category"]
        self.assertEqual([sim["unsharded_param"], sim["unsharded_grad"], sim["reduce_scatter_buffer"]], [held, held, 0])

    def test_a_data_parallel_profile_pipelined_gathers_reduces_and_sends_as_the_pipeline(self):
        """`simulate dp.ssdb --plan` (pp 2, 1F1B, 2 micro-batches, 4 ranks) of the model recorded
        without the pipeline. The stages split the root as its modules run: the embedding's forward
        comes before the layers (stage 0), the norm's and the head's after them (stage 1); the
        first stage sends each micro-batch's block input, which the hooks record per unit
        (meta unit_input). Before, a profile's root was split by forward time (stage 0 holding
        22,712 of its 32,832 parameters, not the embedding's 16,384) and the sends were 0 B."""
        sim = self.from_profile
        self.assertEqual([s["units"] for s in sim["stages"]], ["(root) .. layers.0", "layers.1 .. (root)"])
        stage = sim["shown_stage"]
        real = run.collectives_by_group(self.profile, 2 * stage, COUNTED)
        self.assertEqual([sim["p2p_sends"], sim["p2p_bytes"]], on_group(real, "[0,2]")["send"])
        self.assertEqual(on_group(self.from_profile_ops, "shard"),
                         on_group(real, "[%d,%d]" % (2 * stage, 2 * stage + 1)))
        for rank in (2 * stage, 2 * stage + 1):
            with open(self.tracker.replace("{rank}", str(rank))) as f:
                sharded = json.load(f)["devices"]["cpu"]["Sharded Param"]
            self.assertEqual(sim["peak_memory"]["by_category"]["sharded_param"], sharded, "rank %d" % rank)

    def test_compute_lane_kept_beside_inline_p2p(self):
        for rank in range(4):
            kinds = dict(run.query(self.profile, "SELECT e.label, count(*) FROM streams s JOIN enums e ON "
                                   "e.type = 'stream_kind' AND e.value = s.kind WHERE s.rank = ? GROUP BY 1", rank))
            self.assertEqual(kinds.get("compute"), 1, kinds)
            compute = run.query(self.profile, "SELECT count(*) FROM kernels k JOIN streams s ON s.id = k.stream_id "
                                "WHERE k.rank = ? AND s.kind = 1", rank)[0][0]
            self.assertGreater(compute, 100)
            p2p = run.query(self.profile, "SELECT count(*) FROM streams WHERE rank = ? AND name LIKE 'gloo p2p on thread %'",
                            rank)[0][0]
            self.assertEqual(p2p, 1)

    def test_simulated_split_and_sends_equal_the_real_ones(self):
        self.assertEqual([s["units"] for s in self.sim["stages"]], ["(root) .. layers.0", "layers.1 .. (root)"])
        # The simulated profile shows the stage with the highest peak; stage s runs on ranks 2s, 2s + 1.
        stage = self.sim["shown_stage"]
        self.assertEqual(stage, max(range(2), key=lambda s: self.sim["stages"][s]["peak_memory_bytes"]))
        real = on_group(run.collectives_by_group(self.profile, 2 * stage, COUNTED), "[0,2]")  # its pp pair
        self.assertEqual(on_group(self.sim_ops, "pp"), {"send_recv": real["send"]})
        self.assertEqual([self.sim["p2p_sends"], self.sim["p2p_bytes"]], real["send"])
        self.assertEqual(real["recv"], real["send"])  # activations one way, their gradients back
        self.assertEqual(sorted(real), ["recv", "send"])

    def test_simulated_fsdp_collectives_equal_the_real_ones_under_the_schedule(self):
        f32, lp, mb = expect.F32, expect.layer_params(M), 2
        stage = self.sim["shown_stage"]  # stage 0 holds the embedding, stage 1 the norm and the head
        root = expect.root_params(M, embedding=stage == 0, head=stage == 1)
        sim = on_group(self.sim_ops, "shard")
        real = on_group(run.collectives_by_group(self.profile, 2 * stage, COUNTED), "[%d,%d]" % (2 * stage, 2 * stage + 1))
        # torch's pipelining keeps the units unsharded from the first backward to the last and syncs
        # gradients only on the last micro-batch (set_reshard_after_backward / set_requires_gradient_sync),
        # and FSDP2 keeps the root unsharded after forward: one root gather, a layer gather per forward
        # and one for the first backward, one reduce-scatter per unit per step. The simulator replays
        # the stage's passes in the schedule's order with the same rules (pp_fsdp_every_microbatch false).
        want = {"all_gather": [1 + mb + 1, f32 * (root + (mb + 1) * lp)], "reduce_scatter": [2, f32 * (root + lp)]}
        self.assertEqual(real, want)
        self.assertEqual(sim, want)


if __name__ == "__main__":
    unittest.main()
