"""PyTorch Lightning's FSDP2 path (ModelParallelStrategy, fully_shard in configure_model) under
`shardscope record` on CPU/gloo, 2 ranks (lightning_fsdp2.py): record -> info -> simulate --fit
with the units and every all-gather / reduce-scatter per step exactly as the job counted them.
The job logs its loss with sync_dist and validates after every second batch: the validation runs
in the next step, which the replay leaves out, and the logging all-reduces are replayed as the
loop's, not FSDP's."""
import _trainers_or_skip  # noqa: F401

import json
import os
import shutil
import tempfile
import unittest

import trainer_run as tr
from test_torchtitan_cpu import fsdp_collectives_per_step, query

STEPS = 4


class Lightning(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="ss_lightning_")
        cls.profile = os.path.join(cls.dir, "run.ssdb")
        summary = os.path.join(cls.dir, "job.json")
        cls.rc, cls.out = tr.run(tr.torchrun("lightning_fsdp2.py", "--steps", str(STEPS), "--summary", summary), cls.profile)
        cls.job = tr.summary(summary) if cls.rc == 0 else None

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_record_info_simulate(self):
        self.assertEqual(self.rc, 0, self.out[-4000:])
        # Units and parameters as Lightning's configure_model sharded them.
        units = dict(query(self.profile, "SELECT fqn, param_count FROM modules WHERE is_fsdp_unit = 1"))
        self.assertEqual(sorted(units), sorted(self.job["units"]))
        for name in self.job["units"]:
            if name:
                self.assertEqual(units[name], self.job["units"][name], name)
        info = json.loads(tr.run([tr.SHARDSCOPE, "info", self.profile, "--format", "json"])[1])
        self.assertEqual(info["steps"], STEPS)
        self.assertEqual(info["fsdp_units"], len(self.job["units"]))
        # Every all-gather and reduce-scatter of every step, as the job issued them.
        # A validation after batches 1 and 3 (the second's after the last step): the first in step 2.
        per_step = fsdp_collectives_per_step(self.profile)
        self.assertEqual(len(self.job["validations"]), 2)
        job = [sorted(map(tuple, c + (self.job["validations"][0] if n == 2 else []))) for n, c in enumerate(self.job["collectives"])]
        self.assertEqual([[tuple(c) for c in s] for s in per_step], job)
        report = json.loads(tr.run([tr.SHARDSCOPE, "simulate", self.profile, "--fit", "--format", "json"])[1])
        self.assertEqual(report["all_gathers"], sum(1 for t, _ in per_step[1] if t == "all_gather"))
        self.assertEqual(report["reduce_scatters"], sum(1 for t, _ in per_step[1] if t == "reduce_scatter"))
        self.assertEqual(report["all_reduces"], 0)
        # `simulate`'s own check agrees: the steps it averages (the validation's left out) as replayed.
        self.assertTrue(report["replay_collectives"]["match"], report["replay_collectives"])
        measured = report["measured_breakdown"]
        self.assertEqual((measured["steps_used"], measured["forward_only_steps_left_out"]), (2, 1))
        # The loss's all-reduce in every training step (Lightning adds its own broadcasts, barriers).
        self.assertGreaterEqual(measured["other_collectives"], measured["steps_used"])


if __name__ == "__main__":
    unittest.main()
