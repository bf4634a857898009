"""`torchrun -m shardscope.measure_fsdp_units` times FSDP2's per-unit cost on real 2-rank gloo runs
and writes it into a cluster file; `simulate --cluster` takes each bucket's merged units' cost out
of the step. What the tool measures is the machine's timing: asserted here are its output's shape
and what the simulator makes of a given figure, which the program fixes."""
import _torch_or_skip  # noqa: F401  (exits 77 without torch)

import json
import os
import subprocess
import sys
import tempfile
import unittest

import fsdp2_run as run

SAMPLE = os.path.join(run.SOURCE_DIR, "resources", "samples", "cpu-fsdp2-llama-2rank.ssdb")


def measure(*args, launcher=True):
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    prefix = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--standalone"] if launcher else [sys.executable]
    return subprocess.run(prefix + ["-m", "shardscope.measure_fsdp_units"] + list(args), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)


class MeasureFsdpUnits(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def write(self, name, obj):
        with open(self.path(name), "w") as f:
            json.dump(obj, f)
        return self.path(name)

    def simulate(self, *args):
        return json.loads(run.shardscope("simulate", SAMPLE, *args, "--format", "json"))

    def test_the_tool_writes_both_figures_over_the_base(self):
        base = self.write("base.json", {"name": "mine", "host_optimizer_params_per_s": 3e8})
        out = self.path("units.json")
        p = measure("--units", "4", "--bucket", "2", "--repeats", "3", "--warmup", "1", "--base", base, "-o", out)
        self.assertEqual(p.returncode, 0, p.stdout[-3000:])
        self.assertNotIn("terminate called", p.stdout)
        with open(out) as f:
            c = json.load(f)
        self.assertEqual(c["name"], "mine+fsdp-units")
        self.assertEqual(c["host_optimizer_params_per_s"], 3e8)  # the base's fields stay
        self.assertGreaterEqual(c["fsdp_unit_forward_us"], 0)
        self.assertGreaterEqual(c["fsdp_unit_backward_us"], 0)
        m = c["fsdp_units_measured"]
        self.assertEqual((m["world_size"], m["backend"], m["device"]), (2, "gloo", "cpu"))
        self.assertEqual((m["units"], m["bucket"], m["repeats"], m["tensors_per_unit"]), (4, 2, 3, 8))
        self.assertEqual(len(m["per_rank"]), 2)
        for r in m["per_rank"]:
            self.assertEqual(len(r["units_ms"]), 2)  # forward, backward
            self.assertEqual(len(r["buckets_ms"]), 2)
        self.assertFalse(os.path.exists(out + ".partial"))
        # The file is a cluster the simulator reads; the profile's CPU run stays one.
        replay = self.simulate("--fit", "--cluster", out)
        self.assertEqual(replay["world_size"], 2)
        self.assertEqual(replay["step_time_ms"], self.simulate()["step_time_ms"])

    def test_a_bucket_takes_its_merged_units_cost_out_of_the_step(self):
        cluster = self.write("c.json", {"fsdp_unit_forward_us": 500, "fsdp_unit_backward_us": 1000})
        pair = self.write("pair.json", {"buckets": [["layers.0", "layers.1"]]})
        pairs = self.write("pairs.json", {"buckets": [["layers.0", "layers.1"], ["layers.2", "layers.3"]]})
        default, measured = self.simulate(), self.simulate("--fit", "--cluster", cluster)
        self.assertEqual(measured["step_time_ms"], default["step_time_ms"])  # no bucket: the replay as it was
        self.assertNotIn("merged_units_host_saved_ms_per_pass", measured)
        one = self.simulate("--fit", "--cluster", cluster, "--plan", pair)
        self.assertEqual(one["merged_units_host_saved_ms_per_pass"], 1.5)  # one unit call fewer
        two = self.simulate("--fit", "--cluster", cluster, "--plan", pairs)
        self.assertEqual(two["merged_units_host_saved_ms_per_pass"], 3.0)
        without = self.simulate("--plan", pairs)
        self.assertNotIn("merged_units_host_saved_ms_per_pass", without)
        self.assertLess(two["step_time_ms"], one["step_time_ms"])
        self.assertLess(one["step_time_ms"], measured["step_time_ms"])
        # The CPU run holds one lane: the step is shorter by what was taken out, within the
        # collectives' change (a bucket's one all-gather for two, by the fitted model).
        self.assertAlmostEqual(without["step_time_ms"] - two["step_time_ms"], 3.0, delta=0.05)
        # plan --buckets says when the cost is not measured, and not when it is.
        plain = json.loads(run.shardscope("plan", SAMPLE, "--buckets", "--format", "json"))
        with_cost = json.loads(run.shardscope("plan", SAMPLE, "--buckets", "--fit", "--cluster", cluster, "--format", "json"))
        self.assertIn("measure_fsdp_units", plain["buckets_unit_cost"])
        self.assertTrue(with_cost["buckets"])  # 1.5 ms per merge on a 461 ms step: over the 0.1 % bar
        self.assertNotIn("buckets_unit_cost", with_cost)
        self.assertGreater(with_cost["buckets_saved_ms"], 1.5)

    def test_bad_use_is_refused_with_a_message_and_writes_nothing(self):
        out = self.path("units.json")
        p = measure("-o", out, launcher=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("run it under torchrun", p.stdout)
        p = measure("--bucket", "1", "-o", out, launcher=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--bucket must be in [2, --units]", p.stdout)
        p = measure("--base", self.path("missing.json"), "-o", out)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("cannot read the base cluster", p.stdout)
        self.assertFalse(os.path.exists(out))
        bad = self.write("bad.json", {"fsdp_unit_forward_us": -3})
        p = subprocess.run([run.SHARDSCOPE, "simulate", SAMPLE, "--cluster", bad], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("fsdp_unit_forward_us: expected a time in microseconds", p.stdout)


if __name__ == "__main__":
    unittest.main()
