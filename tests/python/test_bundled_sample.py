"""The bundled sample that scripts/run.sh opens is a real FSDP2 recording, labelled as such, under
5 MB, with steps, FSDP units, sized collectives and memory by category (issue 12)."""
import json
import os
import unittest

import fsdp2_run as run

SAMPLE = os.path.join(run.SOURCE_DIR, "resources", "samples", "cpu-fsdp2-llama-2rank.ssdb")


class BundledSample(unittest.TestCase):
    def test_run_sh_opens_it(self):
        with open(os.path.join(run.SOURCE_DIR, "scripts", "run.sh")) as f:
            self.assertIn("resources/samples/cpu-fsdp2-llama-2rank.ssdb", f.read())
        self.assertLess(os.path.getsize(SAMPLE), 5 * 1024 * 1024)

    def test_real_labelled_and_complete(self):
        info = json.loads(run.shardscope("info", SAMPLE, "--format", "json"))
        self.assertEqual(info["origin"]["kind"], "measured")
        self.assertEqual(info["origin"]["source_format"], "torch-profiler-cpu")
        self.assertIn("Real recording", info["origin"]["notes"])
        self.assertIn("gloo", info["origin"]["notes"])
        self.assertEqual(info["ranks"], 2)
        self.assertEqual(info["steps"], 5)
        self.assertEqual(info["fsdp_units"], 5)
        # Every all-gather moves a whole unit: its own parameters x 4 bytes (fp32), per step and rank.
        units = dict(run.query(SAMPLE, "SELECT fqn, param_count FROM modules WHERE is_fsdp_unit = 1"))
        own = dict(units)
        own[""] = units[""] - sum(v for k, v in units.items() if k)
        sizes = {4 * n for n in own.values()}
        for c in info["collective_totals"]:
            self.assertIn(c["type"], ("all_gather", "reduce_scatter"))
            self.assertIn(c["bytes"], sizes)
        per_step = sum(c["count"] for c in info["collective_totals"] if c["type"] == "all_gather") / 2 / 5
        self.assertEqual(per_step, 5 + 4)  # forward: root + 4 layers; backward: the 4 layers again
        cats = {k for p in info["memory_peaks"] for k, v in p["by_category"].items() if v}
        self.assertLessEqual({"sharded_parameter", "optimizer_state", "activation"}, cats)


if __name__ == "__main__":
    unittest.main()
