"""Real 2D FSDP + tensor parallelism and a 2-stage pipeline, 4 gloo ranks on the CPU (issue 15),
recorded with `shardscope record` (scripts/fsdp_tp_train.py --tiny):

- dp 2 x tp 2: DTensor parallelize_module (torchtitan's plan) inside FSDP2 over the dp pairs, without
  and with sequence parallelism;
- pp 2 x dp 2: torch.distributed.pipelining, Schedule1F1B, 2 micro-batches, each stage fully_shard'ed.

Checked: the recorded collectives of a steady step, per rank and per process group (the recorder
notes each group's gloo threads), equal what the model's shapes give (parallel_expect.py) and what
a TorchDispatchMode counted in the same run, count and bytes; FSDPMemTracker's sharded parameters
and optimizer state are exactly the TP-local parameters split over dp. Activation memory is not
asserted here (docs/accuracy.md has the numbers). Point-to-point ops run inline on the training
thread, where gloo names no group: they are checked per rank, without a group.
FSDPMemTracker cannot run under the pipeline schedule: it refuses a module called once per
micro-batch ("does not support memory tracking for multiple iterative calls")."""
import _torch_or_skip  # noqa: F401

import json
import os
import shutil
import tempfile
import unittest

import fsdp2_run as run
import parallel_expect as expect

STEPS = 3
COUNTED = 1  # step 0 warms up (pipelining's shape exchange, FSDP2's lazy init); step 2 runs under FSDPMemTracker


def counted(path):
    """The run's own count (CollectiveCounter) of step COUNTED, keyed like the profile's."""
    with open(path) as f:
        steps = json.load(f)["steps"]
    out = {}
    for ranks, ops in steps[str(COUNTED)].items():
        for op, nb in ops.items():
            out[(op, "[" + ranks + "]")] = nb
    return out


class TensorParallelRun(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="ss_tp_")
        cls.profile = os.path.join(cls.dir, "tp.ssdb")
        run.record(cls.profile, "--tiny", "--tp", "2", "--steps", str(STEPS), "--mem-tracker-step", "2",
                   "--mem-tracker-out", os.path.join(cls.dir, "mem_{rank}.json"),
                   "--counts-out", os.path.join(cls.dir, "counts_{rank}.json"), nproc=4, script=run.TRAIN_TP)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_process_groups_recorded(self):
        groups = sorted(run.query(self.profile, "SELECT description, ranks, size FROM process_groups"))
        self.assertEqual(groups, [("mesh_dp", "[0,2]", 2), ("mesh_dp", "[1,3]", 2), ("mesh_tp", "[0,1]", 2),
                                  ("mesh_tp", "[2,3]", 2)])

    def test_collectives_per_group_match_the_shapes(self):
        for rank in range(4):
            want = expect.tensor_parallel(expect.TINY, rank, tp=2, sequence_parallel=False)
            got = run.collectives_by_group(self.profile, rank, COUNTED)
            self.assertEqual(got, {k: v for k, v in want.items()}, "rank %d" % rank)

    def test_the_runs_own_count_agrees(self):
        for rank in range(4):
            got = counted(os.path.join(self.dir, "counts_%d.json" % rank))
            self.assertEqual(got, run.collectives_by_group(self.profile, rank, COUNTED), "rank %d" % rank)

    def test_every_step_the_same(self):
        for rank in (0, 3):
            self.assertEqual(run.collectives_by_group(self.profile, rank, 0),
                             run.collectives_by_group(self.profile, rank, COUNTED))

    def test_memory_tracker_params_and_optimizer_state_exact(self):
        sharded = expect.tp_sharded_param_bytes(expect.TINY, tp=2, dp=2)
        unit = expect.F32 * expect.layer_params(expect.TINY, 2)
        root = expect.F32 * expect.root_params(expect.TINY, 2)
        for rank in range(4):
            with open(os.path.join(self.dir, "mem_%d.json" % rank)) as f:
                mem = json.load(f)["devices"]["cpu"]
            self.assertEqual(mem["Sharded Param"], sharded)
            # AdamW: exp_avg and exp_avg_sq of each shard, and a 4-byte step count per parameter tensor.
            self.assertEqual(mem["OptState"], 2 * sharded + 4 * expect.param_tensors(expect.TINY))
            # At the peak (backward): the root and one layer unsharded, that layer's all-gather buffer.
            self.assertEqual(mem["Unsharded Param"], root + unit)
            self.assertEqual(mem["All Gather"], unit)


class SequenceParallelRun(unittest.TestCase):
    """dp 2 x tp 2 with sequence parallelism: reduce-scatter / all-gather pairs instead of all-reduces,
    and the norms' weight gradients all-reduced over the TP pair (the extra DTensor collectives)."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="ss_sp_")
        cls.profile = os.path.join(cls.dir, "sp.ssdb")
        run.record(cls.profile, "--tiny", "--tp", "2", "--sequence-parallel", "--steps", "2", nproc=4, script=run.TRAIN_TP)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_collectives_per_group_match_the_shapes(self):
        for rank in range(4):
            want = expect.tensor_parallel(expect.TINY, rank, tp=2, sequence_parallel=True)
            self.assertEqual(run.collectives_by_group(self.profile, rank, COUNTED), want, "rank %d" % rank)


class PipelineRun(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="ss_pp_")
        cls.profile = os.path.join(cls.dir, "pp.ssdb")
        run.record(cls.profile, "--tiny", "--pp", "2", "--pp-schedule", "1f1b", "--microbatches", "2", "--steps",
                   str(STEPS), "--counts-out", os.path.join(cls.dir, "counts_{rank}.json"), nproc=4,
                   script=run.TRAIN_TP)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_stage_collectives_and_p2p_match_the_shapes(self):
        for rank in range(4):
            for step in (COUNTED, 2):
                got = run.collectives_by_group(self.profile, rank, step)
                self.assertEqual(got, expect.pipeline(expect.TINY, rank), "rank %d step %d" % (rank, step))

    def test_the_runs_own_count_agrees(self):
        for rank in range(4):
            got = counted(os.path.join(self.dir, "counts_%d.json" % rank))
            stage = "[%d,%d]" % (rank % 2, rank % 2 + 2)  # the pp group: {0,2} or {1,3}
            p2p = {(op, None): nb for (op, g), nb in got.items() if g == stage}
            self.assertEqual(sorted(p2p), [("recv", None), ("send", None)])
            fsdp = {k: v for k, v in got.items() if k[1] != stage}
            fsdp.update(p2p)
            self.assertEqual(fsdp, run.collectives_by_group(self.profile, rank, COUNTED), "rank %d" % rank)

    def test_compute_lane_kept_beside_inline_p2p(self):
        # gloo's send / recv run on the training thread: it stays the compute lane, the p2p get their own.
        for rank in range(4):
            kinds = dict(run.query(self.profile, "SELECT e.label, count(*) FROM streams s JOIN enums e ON "
                                   "e.type = 'stream_kind' AND e.value = s.kind WHERE s.rank = ? GROUP BY 1", rank))
            self.assertEqual(kinds.get("compute"), 1, kinds)
            p2p = run.query(self.profile, "SELECT count(*) FROM streams WHERE rank = ? AND name LIKE 'gloo p2p on thread %'",
                            rank)[0][0]
            self.assertEqual(p2p, 1)


if __name__ == "__main__":
    unittest.main()
