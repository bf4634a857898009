"""`shardscope record` on what real trainers do (tests/python/trainer_patterns.py; CPU, gloo, 2
ranks): meta-device initialisation, a unit of two modules, blocks compiled in place with
fullgraph=True, the job's own torch.profiler, and `record --no-modules`. Each of these broke
`record` or its answers before (issue: "ShardScope on the trainers people use", items 1-5)."""
import _torch_or_skip  # noqa: F401

import glob
import json
import os
import shutil
import tempfile
import unittest

import fsdp2_run as run

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trainer_patterns.py")
STEPS = 3
WORLD = 2


def record(profile, *args, record_args=(), nproc=WORLD):
    """(exit code, output) of `shardscope record` over trainer_patterns.py on 2 CPU ranks."""
    import subprocess

    env = dict(os.environ, OMP_NUM_THREADS="1")
    cmd = [run.SHARDSCOPE, "record", "-o", profile] + list(record_args) + ["--"] + run.torchrun(
        nproc, SCRIPT, "--steps", str(STEPS), *args)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    return p.returncode, p.stdout


class TrainerPatterns(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="ss_patterns_")
        cls.summary = os.path.join(cls.dir, "summary.json")
        cls.plain = os.path.join(cls.dir, "plain.ssdb")
        cls.plain_rc, cls.plain_out = record(cls.plain, "--summary", cls.summary)
        cls.units = {}
        if os.path.exists(cls.summary):
            with open(cls.summary) as f:
                cls.units = json.load(f)["units"]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def expected_collectives(self, gathered=4, reduced=4, passes=1, reducing_passes=1):
        """One step: the forward gathers every unit (the root holds no parameter of its own), the
        backward gathers them again (FSDP2 reshards every non-root unit by default), one
        reduce-scatter per unit; fp32 on CPU unless mixed precision (bytes per parameter gathered
        and reduced), every dimension even: no padding over 2 ranks. Under gradient accumulation
        that for each of `passes` forward-backward passes, reduce-scatters in `reducing_passes`."""
        ag = [("all_gather", gathered * n) for n in self.units.values()]
        rs = [("reduce_scatter", reduced * n) for n in self.units.values()]
        return sorted((ag + ag) * passes + rs * reducing_passes)

    def assert_collectives_exact(self, profile, steps=None, **dtype_bytes):
        want = self.expected_collectives(**dtype_bytes)
        for rank in range(WORLD):
            per_step = run.fsdp_collectives_per_step(profile, rank)
            for step in (steps if steps is not None else range(STEPS)):
                self.assertEqual(per_step[step], want, "rank %d step %d" % (rank, step))

    def test_meta_device_init_is_recorded_with_exact_collectives(self):
        # Before: torch.profiler's record_shapes held the parameters and `to_empty()` failed
        # ("Couldn't swap FSDPEmbedding.weight").
        self.assertEqual(self.plain_rc, 0, self.plain_out[-3000:])
        self.assertEqual(len(self.units), 4)
        self.assert_collectives_exact(self.plain)

    def test_a_unit_of_two_modules_is_one_unit(self):
        self.assertEqual(self.plain_rc, 0, self.plain_out[-3000:])
        mods = {fqn: (unit, owner, count) for fqn, unit, owner, count in run.query(
            self.plain, "SELECT m.fqn, m.is_fsdp_unit, o.fqn, m.param_count FROM modules m "
            "LEFT JOIN modules o ON o.id = m.fsdp_unit_id")}
        self.assertNotIn("norm, head", mods)  # no module invented from FSDP's group name
        self.assertEqual(mods["norm"][0], 1)
        self.assertEqual(mods["head"][:2], (0, "norm"))
        units = sorted(f for f, (u, _, _) in mods.items() if u)
        self.assertEqual(units, ["", "layers.0", "layers.1", "norm", "tok"])
        # The replay models one all-gather for the group, as the run made: per step as measured.
        report = json.loads(run.shardscope("simulate", self.plain, "--fit", "--format", "json"))
        by_name = {u["name"]: u for u in report["units"]}
        self.assertEqual(by_name["norm"]["params"], self.units["norm+head"])
        measured = len([c for c in run.fsdp_collectives_per_step(self.plain, 0)[1] if c[0] == "all_gather"])
        self.assertEqual(report["all_gathers"], measured)

    def test_info_and_simulate_speak_of_what_ran(self):
        self.assertEqual(self.plain_rc, 0, self.plain_out[-3000:])
        # Per rank-step counts leave out the all-gather made during initialisation (before step 0).
        info = json.loads(run.shardscope("info", self.plain, "--format", "json"))
        ag = [c for c in info["collective_totals"] if c["type"] == "all_gather"]
        self.assertEqual(sum(c["count"] for c in ag), WORLD * (STEPS * 8 + 1))
        self.assertEqual(sum(c["in_steps"] for c in ag), WORLD * STEPS * 8)
        self.assertIn("%d collective(s) outside every step" % WORLD, run.shardscope("info", self.plain))
        # A CPU profile's replay is told in its own terms: CPU ranks and gloo, not GPUs and NCCL.
        text = run.shardscope("simulate", self.plain, "--fit")
        self.assertIn("2 CPU ranks, gloo", text)
        self.assertIn("gloo busy", text)
        self.assertNotIn("NCCL", text)
        self.assertNotIn("GPU idle", text)

    def test_blocks_compiled_with_fullgraph(self):
        # Before: the module hooks ran inside Dynamo's tracing and broke fullgraph=True
        # ("torch.* op returned non-Tensor ... _current_graph_task_id").
        profile = os.path.join(self.dir, "compiled.ssdb")
        rc, out = record(profile, "--compile")
        self.assertEqual(rc, 0, out[-3000:])
        self.assert_collectives_exact(profile)
        # Each compiled block still has its forward and backward range (opened around the compiled call).
        for fqn in ("layers.0", "layers.1"):
            phases = {p for (p,) in run.query(profile, "SELECT DISTINCT e.label FROM ranges r JOIN modules m ON "
                                              "m.id = r.module_id JOIN enums e ON e.type = 'range_phase' AND "
                                              "e.value = r.phase WHERE m.fqn = ? AND r.rank = 0", fqn)}
            self.assertLessEqual({"forward", "backward"}, phases, fqn)

    def test_the_jobs_own_profiler_runs_and_record_stands_aside(self):
        # Before: the job's profiler cancelled ours and both ranks died at exit (SIGSEGV).
        profile = os.path.join(self.dir, "own.ssdb")
        job_dir = os.path.join(self.dir, "job_traces")
        os.makedirs(job_dir)
        rc, out = record(profile, "--own-profiler", job_dir)
        self.assertEqual(rc, 0, out[-3000:])
        self.assertIn("the job started its own torch.profiler at step 1", out)
        traces = sorted(glob.glob(os.path.join(job_dir, "job_rank*.json")))
        self.assertEqual(len(traces), WORLD)
        for t in traces:  # the job's trace is its own: operators, and nothing of ShardScope's
            with open(t) as f:
                events = json.load(f)["traceEvents"]
            names = {e.get("name", "") for e in events}
            self.assertTrue(any(n.startswith("aten::") for n in names))
            self.assertFalse([n for n in names if n.startswith("ss:")])
        # What was recorded before the job's profiler started is kept, exactly; steps go on.
        self.assert_collectives_exact(profile, steps=[0])
        self.assertEqual(run.query(profile, "SELECT count(*) FROM steps WHERE rank = 0"), [(STEPS,)])

    def test_no_modules_records_the_device(self):
        # Before: "merge failed: no rank recorded any data", exit 2.
        profile = os.path.join(self.dir, "nomod.ssdb")
        rc, out = record(profile, record_args=["--no-modules"])
        self.assertEqual(rc, 0, out[-3000:])
        # No module hooks: the only module ranges are FSDP's own (its units' pre/post hooks).
        ranged = {m for (m,) in run.query(profile, "SELECT DISTINCT m.fqn FROM ranges r JOIN modules m ON m.id = r.module_id "
                                          "WHERE r.kind = (SELECT value FROM enums WHERE type = 'range_kind' AND label = 'module')")}
        self.assertLessEqual(ranged, {"", "tok", "layers.0", "layers.1", "norm"})
        self.assertEqual(run.query(profile, "SELECT count(*) FROM steps WHERE rank = 0"), [(STEPS,)])
        self.assert_collectives_exact(profile)

    def test_mixed_precision_is_recorded_and_replayed_in_its_dtypes(self):
        # MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32 or bf16), the production setting:
        # every collective of every step in the dtype it ran in, and the replay's the same. Before,
        # the replay took the gathered dtype from the largest all-gather of the whole run (the fp32
        # weight gathered at initialisation, outside every step) and reduced in fp32 whatever the
        # run did: a bf16 run replayed with twice its bytes and a step +14 % and +28 % too long.
        for mode, reduced in (("bf16", 4), ("bf16-reduce", 2)):
            with self.subTest(mode):
                profile = os.path.join(self.dir, mode + ".ssdb")
                rc, out = record(profile, "--mixed-precision", mode)
                self.assertEqual(rc, 0, out[-3000:])
                self.assert_collectives_exact(profile, gathered=2, reduced=reduced)
                replayed = os.path.join(self.dir, mode + "_replay.ssdb")
                run.shardscope("simulate", profile, "-o", replayed)
                self.assertEqual(run.fsdp_collectives_per_step(replayed, 0)[0],
                                 self.expected_collectives(gathered=2, reduced=reduced))

    def test_gradient_accumulation_is_replayed_pass_by_pass(self):
        # Two micro-batches a step, their gradients reduced in each or (set_requires_gradient_sync
        # (False) on the first) in the last only. The replay takes both from the profile: its
        # micro-batches and its reduce-scatters per step are the job's. Before, a step's two passes
        # were read as one: half the all-gathers and reduce-scatters, and one pass's compute
        # replayed with a single pass's communication.
        for no_sync in (False, True):
            with self.subTest(no_sync=no_sync):
                profile = os.path.join(self.dir, "accumulate%s.ssdb" % ("_no_sync" if no_sync else ""))
                rc, out = record(profile, "--micro-batches", "2", *(["--no-sync"] if no_sync else []))
                self.assertEqual(rc, 0, out[-3000:])
                want = self.expected_collectives(passes=2, reducing_passes=1 if no_sync else 2)
                for rank in range(WORLD):
                    for step, got in run.fsdp_collectives_per_step(profile, rank).items():
                        self.assertEqual(got, want, "rank %d step %d" % (rank, step))
                report = json.loads(run.shardscope("simulate", profile, "--format", "json"))
                self.assertEqual(report["plan"]["gradient_accumulation"], 2)
                self.assertEqual(report["plan"]["sync_every_microbatch"], not no_sync)
                replayed = os.path.join(self.dir, "accumulate_replay.ssdb")
                run.shardscope("simulate", profile, "-o", replayed)
                self.assertEqual(run.fsdp_collectives_per_step(replayed, 0)[0], want)

    def test_hsdp_is_recorded_and_replayed_as_hsdp(self):
        # Every unit over a (replicate 2, shard 2) mesh on 4 ranks: all-gathers and reduce-scatters
        # in the shard groups (as on 2 ranks), then each gradient shard all-reduced with its
        # replica. The replay takes that configuration from the profile (before: one shard group
        # of 4, no all-reduce).
        profile = os.path.join(self.dir, "hsdp.ssdb")
        rc, out = record(profile, "--hsdp", nproc=4)
        self.assertEqual(rc, 0, out[-3000:])
        self.assert_collectives_exact(profile)
        reduced = sorted(b for (b,) in run.query(
            profile, "SELECT c.bytes FROM collectives c JOIN enums e ON e.type = 'collective_type' AND e.value = c.type "
            "JOIN steps s ON s.rank = c.rank AND s.number = 1 WHERE c.rank = 0 AND e.label = 'all_reduce' "
            "AND c.group_size = 2 AND c.start_ns >= s.start_ns AND c.start_ns < s.start_ns + s.duration_ns"))
        self.assertEqual(reduced, sorted(4 * n // 2 for n in self.units.values()))
        report = json.loads(run.shardscope("simulate", profile, "--format", "json"))
        self.assertEqual((report["shard_group"], report["replicate"]), (2, 2))
        self.assertEqual((report["all_gathers"], report["reduce_scatters"], report["all_reduces"]),
                         (2 * len(self.units), len(self.units), len(self.units)))


if __name__ == "__main__":
    unittest.main()
