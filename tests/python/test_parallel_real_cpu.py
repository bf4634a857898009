"""Real 2D FSDP + tensor parallelism, 4 gloo ranks on the CPU (issue 15), recorded with
`shardscope record` (scripts/fsdp_tp_train.py --tiny, mesh dp 2 x tp 2, DTensor parallelize_module
with torchtitan's plan inside FSDP2 over the dp pairs), without and with sequence parallelism,
and compared with `shardscope simulate --model resources/models/fsdp-sample-tiny.json --plan`.

Checked:
- the recorded collectives of a step, per rank and per process group (the recorder notes each
  group's gloo threads), equal what the model's shapes give (parallel_expect.py) and, without SP,
  what a TorchDispatchMode counted in the same run;
- the simulator's FSDP all-gathers and reduce-scatters equal the real ones per dp group, and its
  TP collectives equal the real ones on every TP group, count and bytes, without SP (the head
  gathers the logits: loss_parallel false) and with SP and loss parallel (docs/accuracy.md, "Real
  2D FSDP + TP and pipeline runs on CPU/gloo");
- `simulate` of the recorded profile itself replays FSDP's collectives over the dp pair, told
  from sequence parallelism's by FSDP's process group (which the hooks name), its units what FSDP
  gathers on a rank (the TP shards) and its sharded parameters the shapes' bytes; and with tp 2 on
  2 ranks (FSDP over one rank, no FSDP collective) FSDP over one rank, its parameters in the dtype
  the hooks recorded, sharded and unsharded equal to FSDPMemTracker's;
- FSDPMemTracker's sharded and unsharded parameters equal the simulator's exactly and its optimizer
  state is within 3 % (AdamW's 4-byte step counts), taken where the program fixes them: the
  tracker's snapshot after the last layer's pre-forward (the root and that layer unsharded, its
  all-gather output held by FSDP), not at the tracker's peak, whose moment moves with gloo's
  threads (a tensor they release decides between two nearly equal levels: the peak fell there in
  most runs, and in backward with only the root unsharded in others). Activations are not asserted:
  the description counts bf16 activations of a FlashAttention block, the CPU run keeps fp32 tensors
  of the eager attention and the logits (docs/accuracy.md has both numbers)."""
import _torch_or_skip  # noqa: F401

import json
import os
import shutil
import tempfile
import unittest

import fsdp2_run as run
import parallel_expect as expect

STEPS = 3
COUNTED = 1  # step 0 warms up (FSDP2's lazy init); step 2 runs under FSDPMemTracker
M = expect.TINY


def counted(path, step=COUNTED):
    """The run's own count (CollectiveCounter in the trainer) of one step, keyed like the profile's."""
    with open(path) as f:
        steps = json.load(f)["steps"]
    out = {}
    for ranks, ops in steps[str(step)].items():
        for op, nb in ops.items():
            out[(op, "[" + ranks + "]")] = nb
    return out


def on_group(ops, group):
    """{type label: [count, bytes]} of one group's collectives."""
    return {label: nb for (label, g), nb in ops.items() if g == group}


def assert_profile_replay_models_fsdp_beside_tp(test, profile):
    """`simulate` of the recorded profile itself: the hooks named FSDP's process group, so the
    replay takes FSDP's collectives from it (the sequence-parallel all-gathers and reduce-scatters
    are replayed as measured), shards over the dp pair, and its units hold what FSDP gathers on a
    rank: each TP shard. Counts, sizes and bytes the program fixes."""
    for rank in range(4):
        meta = dict(run.query(profile, "SELECT key, value FROM meta WHERE key IN (?, ?)", "rank%d.model_parallel" % rank,
                              "rank%d.fsdp_group" % rank))
        test.assertEqual(meta.get("rank%d.model_parallel" % rank), "tp=2")
        dp_group = "[%d,%d]" % (rank % 2, rank % 2 + 2)
        test.assertEqual(run.query(profile, "SELECT ranks FROM process_groups WHERE name = ?", meta.get("rank%d.fsdp_group" % rank)),
                         [(dp_group,)], "rank %d" % rank)
    # CPU, no mixed precision: FSDP gathers and reduces fp32.
    test.assertEqual(run.query(profile, "SELECT value FROM meta WHERE key = 'rank0.fsdp_dtype_bytes'"), [("4 4",)])
    report = json.loads(run.shardscope("simulate", profile, "--format", "json"))
    test.assertEqual(report["measured_breakdown"]["model_parallel"], "tp=2")
    test.assertTrue(report["measured_breakdown"]["model_parallel_modelled"])
    test.assertEqual((report["world_size"], report["shard_group"]), (4, 2))
    real = on_group(run.collectives_by_group(profile, 0, COUNTED), "[0,2]")
    check = report["replay_collectives"]
    test.assertTrue(check["match"], check)
    test.assertEqual(check["replay_per_step"], {"all_gathers": real["all_gather"][0], "reduce_scatters": real["reduce_scatter"][0]})
    units = {u["name"]: u["params"] for u in report["units"]}
    want = {"": expect.root_params(M, 2)}
    want.update({"layers.%d" % i: expect.layer_params(M, 2) for i in range(M["layers"])})
    test.assertEqual(units, want)
    test.assertEqual(report["peak_memory"]["by_category"]["sharded_param"], expect.tp_sharded_param_bytes(M, tp=2, dp=2))


class TensorParallelRun(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="ss_tp_")
        cls.profile = os.path.join(cls.dir, "tp.ssdb")
        run.record(cls.profile, "--tiny", "--tp", "2", "--steps", str(STEPS), "--mem-tracker-step", "2",
                   "--mem-tracker-out", os.path.join(cls.dir, "mem_{rank}.json"),
                   "--counts-out", os.path.join(cls.dir, "counts_{rank}.json"), nproc=4, script=run.TRAIN_TP)
        # This run gathers the logits (Replicate output head): loss_parallel false.
        cls.sim, cls.sim_ops = run.simulate_model(cls.dir, "tp", {"parallelism": {"tp": 2, "loss_parallel": False}}, world=4)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_process_groups_recorded(self):
        groups = sorted(run.query(self.profile, "SELECT description, ranks, size FROM process_groups"))
        self.assertEqual(groups, [("mesh_dp", "[0,2]", 2), ("mesh_dp", "[1,3]", 2), ("mesh_tp", "[0,1]", 2),
                                  ("mesh_tp", "[2,3]", 2)])

    def test_the_profile_replay_models_fsdp_beside_tp(self):
        assert_profile_replay_models_fsdp_beside_tp(self, self.profile)

    def test_collectives_per_group_match_the_shapes(self):
        for rank in range(4):
            want = expect.tensor_parallel(M, rank, tp=2, sequence_parallel=False)
            self.assertEqual(run.collectives_by_group(self.profile, rank, COUNTED), want, "rank %d" % rank)
            self.assertEqual(run.collectives_by_group(self.profile, rank, 0), want, "rank %d step 0" % rank)

    def test_the_runs_own_count_agrees(self):
        for rank in range(4):
            got = counted(os.path.join(self.dir, "counts_%d.json" % rank))
            self.assertEqual(got, run.collectives_by_group(self.profile, rank, COUNTED), "rank %d" % rank)

    def test_simulated_fsdp_collectives_equal_the_real_ones(self):
        self.assertEqual(self.sim["parallelism"]["dp"], 2)
        self.assertEqual(self.sim["shard_group"], 2)
        sim = on_group(self.sim_ops, "shard")
        for rank in range(4):
            dp_group = "[%d,%d]" % (rank % 2, rank % 2 + 2)
            self.assertEqual(on_group(run.collectives_by_group(self.profile, rank, COUNTED), dp_group), sim, "rank %d" % rank)
        self.assertEqual((self.sim["all_gathers"], self.sim["reduce_scatters"]), (sim["all_gather"][0], sim["reduce_scatter"][0]))

    def test_simulated_tp_collectives_equal_the_real_ones(self):
        sim = on_group(self.sim_ops, "tp")
        self.assertEqual(sum(n for n, _ in sim.values()), self.sim["tp_collectives"])
        self.assertEqual(sum(b for _, b in sim.values()), self.sim["tp_bytes"])
        # 4L + 2 all-reduces of batch x seq x dim, and the head's all-gather of the logits.
        self.assertEqual(sim["all_gather"], [1, expect.F32 * M["batch"] * M["seq"] * M["vocab"]])
        for rank in range(4):
            tp_group = "[%d,%d]" % (rank - rank % 2, rank - rank % 2 + 1)
            real = on_group(run.collectives_by_group(self.profile, rank, COUNTED), tp_group)
            self.assertEqual(real, sim, "rank %d" % rank)

    def test_memory_tracker_matches_the_shapes_and_the_simulator(self):
        sharded = expect.tp_sharded_param_bytes(M, tp=2, dp=2)
        unit = expect.F32 * expect.layer_params(M, 2)
        root = expect.F32 * expect.root_params(M, 2)
        # The simulated step at the same point: its profile's memory when the last layer's forward
        # starts. (Not its peak's breakdown, which was this point's only while the model held two
        # all-gather buffers at the backward's first turn; it now peaks later in backward.)
        last = "layers.%d" % (M["layers"] - 1)
        sim = run.live_memory_at_forward(os.path.join(self.dir, "tp_sim.ssdb"), last)
        for rank in range(4):
            with open(os.path.join(self.dir, "mem_%d.json" % rank)) as f:
                mem = json.load(f)["modules"][last]["After Pre-Forward"][0]["cpu"]
            self.assertEqual(mem["Sharded Param"], sharded)
            # AdamW: exp_avg and exp_avg_sq of each shard, and a 4-byte step count per parameter tensor.
            self.assertEqual(mem["OptState"], 2 * sharded + 4 * expect.param_tensors(M))
            # The root and one layer unsharded, one layer's all-gather output.
            self.assertEqual(mem["Unsharded Param"], root + unit)
            self.assertEqual(mem["All Gather"], unit)
            self.assertEqual(sim["sharded_parameter"], mem["Sharded Param"])
            self.assertEqual(sim["unsharded_parameter"], mem["Unsharded Param"])
            self.assertEqual(sim["all_gather_buffer"], mem["All Gather"])
            self.assertLessEqual(abs(sim["optimizer_state"] - mem["OptState"]), 0.03 * mem["OptState"])


class TensorParallelOnlyRun(unittest.TestCase):
    """tp 2 on 2 ranks, FSDP over a mesh of one rank (torchtitan's TP-only layout): FSDP issues no
    collective, every one of the run's is tensor parallelism's."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="ss_tp1_")
        cls.profile = os.path.join(cls.dir, "tp.ssdb")
        run.record(cls.profile, "--tiny", "--tp", "2", "--steps", str(STEPS), "--mem-tracker-step", "2",
                   "--mem-tracker-out", os.path.join(cls.dir, "mem_{rank}.json"), nproc=2, script=run.TRAIN_TP)
        cls.replay = os.path.join(cls.dir, "replay.ssdb")
        cls.report = json.loads(run.shardscope("simulate", cls.profile, "--format", "json", "-o", cls.replay))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_the_replay_has_fsdp_over_one_rank(self):
        # Before, the TP collectives were FSDP's and FSDP spanned both ranks (torchtitan: 38 + 8
        # replayed for the job's 38 + 38, FSDP's being none).
        self.assertEqual((self.report["world_size"], self.report["shard_group"]), (2, 1))
        check = self.report["replay_collectives"]
        self.assertTrue(check["match"], check)
        self.assertEqual(check["replay_per_step"], {"all_gathers": 0, "reduce_scatters": 0})
        self.assertEqual(run.query(self.profile, "SELECT value FROM meta WHERE key = 'rank0.fsdp_dtype_bytes'"), [("4 4",)])

    def test_memory_tracker_matches_the_replay(self):
        # At a point the program fixes (the last layer's pre-forward): sharded and unsharded
        # parameters exact. No FSDP collective shows the dtype FSDP gathers in; the hooks' fp32 does
        # (assumed bf16, the replay's unsharded units had been half the tracker's).
        last = "layers.%d" % (M["layers"] - 1)
        sim = run.live_memory_at_forward(self.replay, last)
        with open(os.path.join(self.dir, "mem_0.json")) as f:
            mem = json.load(f)["modules"][last]["After Pre-Forward"][0]["cpu"]
        self.assertEqual(mem["Sharded Param"], expect.tp_sharded_param_bytes(M, tp=2, dp=1))
        self.assertEqual(sim["sharded_parameter"], mem["Sharded Param"])
        self.assertEqual(sim["unsharded_parameter"], mem["Unsharded Param"])


class SequenceParallelRun(unittest.TestCase):
    """dp 2 x tp 2, sequence parallelism and loss parallel, as torchtitan trains."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="ss_sp_")
        cls.profile = os.path.join(cls.dir, "sp.ssdb")
        run.record(cls.profile, "--tiny", "--tp", "2", "--sequence-parallel", "--loss-parallel", "--steps", "2",
                   nproc=4, script=run.TRAIN_TP)
        cls.sim, cls.sim_ops = run.simulate_model(cls.dir, "sp", {"parallelism": {"tp": 2, "sequence_parallel": True}},
                                                  world=4)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_collectives_per_group_match_the_shapes(self):
        for rank in range(4):
            want = expect.tensor_parallel(M, rank, tp=2, sequence_parallel=True, loss_parallel=True)
            self.assertEqual(run.collectives_by_group(self.profile, rank, COUNTED), want, "rank %d" % rank)

    def test_simulated_fsdp_collectives_equal_the_real_ones(self):
        sim = on_group(self.sim_ops, "shard")
        for rank in range(4):
            dp_group = "[%d,%d]" % (rank % 2, rank % 2 + 2)
            self.assertEqual(on_group(run.collectives_by_group(self.profile, rank, COUNTED), dp_group), sim, "rank %d" % rank)

    def test_the_profile_replay_models_fsdp_beside_sp(self):
        # Sequence parallelism's 10 all-gathers and 10 reduce-scatters a step had been taken for
        # FSDP's (15 + 13 against the replay's 5 + 3) and the replay sharded over all 4 ranks.
        assert_profile_replay_models_fsdp_beside_tp(self, self.profile)

    def test_simulated_tp_collectives_equal_the_real_ones(self):
        act = expect.F32 * M["batch"] * M["seq"] * M["dim"]
        sim = on_group(self.sim_ops, "tp")
        self.assertEqual(sum(n for n, _ in sim.values()), self.sim["tp_collectives"])
        self.assertEqual(sum(b for _, b in sim.values()), self.sim["tp_bytes"])
        L = M["layers"]
        # Per block an all-gather + reduce-scatter per column->row pair and pass; the embedding
        # reduce-scatters into sequence shards (forward) and all-gathers the gradient (backward), the
        # head all-gathers its input and reduce-scatters its gradient; the norms' weight gradients
        # (2 per block + the final norm, dim each) and loss_parallel's three per-token fp32
        # reductions are all-reduces.
        self.assertEqual(sim, {"all_gather": [4 * L + 2, (4 * L + 2) * act], "reduce_scatter": [4 * L + 2, (4 * L + 2) * act],
                               "all_reduce": [2 * L + 1 + 3, expect.F32 * ((2 * L + 1) * M["dim"] + 3 * M["batch"] * M["seq"])]})
        for rank in range(4):
            tp_group = "[%d,%d]" % (rank - rank % 2, rank - rank % 2 + 1)
            real = on_group(run.collectives_by_group(self.profile, rank, COUNTED), tp_group)
            self.assertEqual(real, sim, "rank %d" % rank)


class TrainerArguments(unittest.TestCase):
    """scripts/fsdp_tp_train.py refuses what it cannot run with a clear message, and splits layers evenly."""

    def refused(self, argv, message):
        import contextlib
        import io

        import fsdp_tp_train

        err = io.StringIO()
        with contextlib.redirect_stderr(err), self.assertRaises(SystemExit):
            fsdp_tp_train.parse_args(argv)
        self.assertIn(message, err.getvalue())

    def test_refusals(self):
        self.refused(["--tiny", "--tp", "2", "--sequence-parallel", "--tp-root", "replicate"], "--sequence-parallel needs")
        self.refused(["--tiny", "--tp", "3"], "--heads 4 is not divisible by --tp 3")
        self.refused(["--tiny", "--tp", "2", "--pp", "2"], "--tp with --pp")
        self.refused(["--tiny", "--pp", "3"], "--pp 3 needs at least as many layers (2)")
        self.refused(["--tiny", "--pp", "2", "--microbatches", "3"], "--batch 2 is not divisible by --microbatches 3")
        self.refused(["--tiny", "--loss-parallel"], "--loss-parallel needs --tp > 1")
        self.refused(["--tiny", "--keep-unsharded", "2"], "--keep-unsharded 2: the model has layers 0..1")
        self.refused(["--tiny", "--keep-unsharded", "a"], "--keep-unsharded takes layer indices")

    def test_stage_layers_and_kept_names(self):
        import fsdp_tp_train
        import fsdp_train_sample

        self.assertEqual([list(fsdp_tp_train.stage_layers(5, 2, s)) for s in (0, 1)], [[0, 1, 2], [3, 4]])
        self.assertEqual([list(fsdp_tp_train.stage_layers(4, 4, s)) for s in range(4)], [[0], [1], [2], [3]])
        model = fsdp_tp_train.keep_stage(fsdp_train_sample.Llama(256, 64, 4, 4, 128), 2, 1)
        names = {n.split(".")[0] + ("." + n.split(".")[1] if n.startswith("layers.") else "") for n, _ in model.named_parameters()}
        self.assertEqual(names, {"layers.2", "layers.3", "norm", "output"})


if __name__ == "__main__":
    unittest.main()
