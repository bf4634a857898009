"""scripts/time_collectives.py times a real 2-rank FSDP2 job's all-gathers and reduce-scatters from
issue to wait, without a profiler (what docs/accuracy.md compares `simulate`'s fit with). The times
are the machine's; asserted are the counts and the shape, which the program fixes."""
import _torch_or_skip  # noqa: F401  (exits 77 without torch)

import json
import os
import subprocess
import sys
import tempfile
import unittest

import fsdp2_run as run

SCRIPT = os.path.join(run.SOURCE_DIR, "scripts", "time_collectives.py")
TRAINER = os.path.join(run.SOURCE_DIR, "scripts", "fsdp_train_sample.py")


class TimeCollectives(unittest.TestCase):
    def test_every_collective_of_the_job_is_timed_once(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "times_{rank}.json")
            env = dict(os.environ, OMP_NUM_THREADS="1")
            # --tiny: 2 layers and the root, each its own unit; 3 steps. A step gathers each unit
            # in forward and each layer again in backward (5) and reduces each unit once (3).
            p = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--standalone",
                                SCRIPT, "--out", out, "--skip-all-gathers", "5", "--skip-reduce-scatters", "3", "--",
                                TRAINER, "--device", "cpu", "--tiny", "--steps", "3"],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
            self.assertEqual(p.returncode, 0, p.stdout[-3000:])
            for rank in (0, 1):
                with open(out.replace("{rank}", str(rank))) as f:
                    t = json.load(f)
                self.assertEqual(t["all_gather"]["count"], 2 * 5)  # the first step's 5 left out
                self.assertEqual(t["reduce_scatter"]["count"], 2 * 3)
                for kind in ("all_gather", "reduce_scatter"):
                    times = t[kind]["times_ms"]
                    self.assertEqual(len(times), t[kind]["count"])
                    self.assertTrue(all(x > 0 for x in times))
                    self.assertLessEqual(t[kind]["min_ms"], t[kind]["median_ms"])


if __name__ == "__main__":
    unittest.main()
