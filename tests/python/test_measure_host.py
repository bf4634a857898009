"""`python -m shardscope.measure_host` measures this host's CPU AdamW throughput and writes it into
a cluster file that `simulate --cluster` uses for the offload plan's CPU optimizer step, at the
profile's own world size (a file without world_size)."""
import _torch_or_skip  # noqa: F401  (exits 77 without torch)

import json
import os
import subprocess
import sys
import tempfile
import unittest

import fsdp2_run as run

SAMPLE = os.path.join(run.SOURCE_DIR, "resources", "samples", "cpu-fsdp2-llama-2rank.ssdb")


def measure(*args):
    return subprocess.run([sys.executable, "-m", "shardscope.measure_host"] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=240)


class MeasureHost(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def simulate_offload(self, *cluster):
        plan = self.path("offload.json")
        with open(plan, "w") as f:
            json.dump({"offload": "cpu"}, f)
        return json.loads(run.shardscope("simulate", SAMPLE, "--fit", *cluster, "--plan", plan, "--format", "json"))

    def test_the_measured_rate_sets_the_cpu_optimizer_step(self):
        out = self.path("host.json")
        p = measure("--params", "2e6", "--tensor-elems", "300000", "--repeats", "2", "-o", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out) as f:
            host = json.load(f)
        rate = host["host_optimizer_params_per_s"]
        self.assertGreater(rate, 0)
        m = host["host_measured"]
        self.assertEqual(m["params_timed"], 2_000_000)
        self.assertEqual(len(m["step_s"]), 2)
        self.assertEqual(m["threads"], 1)  # OMP_NUM_THREADS=1 in the test's environment, as the job's
        self.assertNotIn("world_size", host)  # the profile's own world size applies
        default = self.simulate_offload()
        measured = self.simulate_offload("--cluster", out)
        self.assertEqual(measured["world_size"], default["world_size"])
        self.assertEqual(measured["world_size"], 2)
        # The CPU step is the rank's parameters over the rate: it scales with 5e8 (the default) / rate.
        self.assertAlmostEqual(measured["cpu_optimizer_ms"] / default["cpu_optimizer_ms"], 5e8 / rate, delta=1e-3 * 5e8 / rate)

    def test_a_sample_of_a_large_model_is_timed_and_scaled(self):
        p = measure("--params", "3e6", "--max-timed", "1e6", "--repeats", "1")
        self.assertEqual(p.returncode, 0, p.stderr)
        m = json.loads(p.stdout)["host_measured"]
        self.assertEqual((m["params_timed"], m["params_per_rank"]), (1_000_000, 3_000_000))

    def test_the_tensors_come_from_the_profile_at_their_sizes(self):
        # The sample decoder's modules own 39 tensors (a 4.2 M-parameter model): each module's own
        # parameters, scaled to the rank's share; over --max-timed whole tensors are sampled.
        p = measure("--params", "2106496", "--tensors-from", SAMPLE, "--repeats", "1")
        self.assertEqual(p.returncode, 0, p.stderr)
        m = json.loads(p.stdout)["host_measured"]
        self.assertEqual(m["tensors_timed"], 39)
        self.assertEqual(m["params_timed"], 2106496)  # half of 4,212,992: every size halves exactly
        self.assertEqual(m["largest_tensor"], 262144)  # the embedding's (and the output's) half
        p = measure("--params", "2106496", "--tensors-from", SAMPLE, "--max-timed", "300000", "--repeats", "1")
        self.assertEqual(p.returncode, 0, p.stderr)
        m = json.loads(p.stdout)["host_measured"]
        self.assertLessEqual(m["params_timed"], 300000)
        self.assertLess(m["tensors_timed"], 39)
        self.assertGreater(m["tensors_timed"], 0)

    def test_bad_input_is_refused_and_writes_nothing(self):
        out = self.path("host.json")
        p = measure("--params", "1e6", "--base", self.path("missing.json"), "-o", out)
        self.assertEqual(p.returncode, 2)
        self.assertIn("cannot read the base cluster", p.stderr)
        self.assertFalse(os.path.exists(out))
        p = measure("--params", "0")
        self.assertEqual(p.returncode, 2)
        self.assertIn("expected a number of parameters", p.stderr)
        for bad in (self.path("missing.ssdb"), os.path.abspath(__file__)):  # absent; not a profile
            p = measure("--params", "1e6", "--tensors-from", bad, "-o", out)
            self.assertEqual(p.returncode, 2)
            self.assertIn("cannot take the tensors from", p.stderr)
            self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()
