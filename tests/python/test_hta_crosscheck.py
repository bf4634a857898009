"""ShardScope's temporal breakdown, communication overlap and per-kernel totals against Meta's
Holistic Trace Analysis (HTA, PyPI HolisticTraceAnalysis, pandas < 3) on the real Kineto traces in
../shared/data/traces (issue 14), within 0.1 %.

HTA runs in the configuration where it measures what we measure: include_last_profiler_step=True
(its default drops the last step) and HTA_DISABLE_NS_ROUNDING=1 (its default rounds every event
to whole us). Definitional differences, each handled below and in docs/analyses.md:
  * HTA's non_compute_time is communication + memory kernels outside compute; ShardScope splits it
    into communication_ns and copy_ns, so non_compute = communication + copy.
  * HTA calls a kernel communication only when "nccl" is in its name; ShardScope also recognises
    other communication kernels (profiler/common/comm_kernels.h). On the B200 trace, 73
    multimem_all_reduce kernels are compute to HTA and communication to us; the comparison moves
    them back (their time outside other compute is what HTA counts as compute).
  * HTA's kernel_time is the window (first kernel start to last kernel end), as our window_ns.
  * HTA takes a CPU operator that has a GPU kernel's name for a kernel: Triton's launcher op
    `triton_poi_fused_..._0` (74 us on the CPU) lands in that kernel's total (1.98 us on the GPU)
    and in the B200 trace's compute time. We give HTA the trace without such CPU ops (they carry
    no GPU time); every other event is unchanged.
Without the traces the test is skipped (exit 77), saying so; without HTA it fails under
SHARDSCOPE_REQUIRE_TORCH=1 (CI installs it with the venv), else it is skipped.
"""
import glob
import gzip
import json
import os
import subprocess
import sys
import tempfile
import unittest

import fsdp2_run as run

TRACES = os.path.join(run.SOURCE_DIR, "..", "shared", "data", "traces")
JOBS = {
    "kineto-a100-ddp": ["kineto-a100-ddp/nccl_data.json.gz"],
    "kineto-b200-modules": ["kineto-b200-modules/eager_trace.json.gz"],
    "kineto-v100-dlrm-8ranks": sorted(
        os.path.relpath(p, TRACES) for p in glob.glob(os.path.join(TRACES, "kineto-v100-dlrm-8ranks", "*.json.gz"))),
}
REL = 1e-3  # 0.1 %

if not os.path.isdir(TRACES):
    sys.stderr.write("SKIP: no real traces at %s (../shared/data/traces)\n" % TRACES)
    sys.exit(77)
try:
    os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"  # read when HTA parses
    from hta.trace_analysis import TraceAnalysis
except Exception as e:  # not installed
    required = os.environ.get("SHARDSCOPE_REQUIRE_TORCH") == "1"
    sys.stderr.write("%s: HolisticTraceAnalysis is not importable (%r)\n" % ("FAIL" if required else "SKIP", e))
    sys.exit(1 if required else 77)


def analyze(name, profile):
    doc = json.loads(run.shardscope("analyze", name, profile, "--format", "json"))
    return {t["name"]: [dict(zip(t["columns"], r)) for r in t["rows"]] for t in doc["tables"]}


def without_cpu_ops_named_like_kernels(src, dst):
    with gzip.open(src, "rt") as f:
        doc = json.load(f)
    events = doc["traceEvents"]
    kernels = {e.get("name") for e in events if e.get("cat") == "kernel"}
    doc["traceEvents"] = [e for e in events if not (e.get("cat") == "cpu_op" and e.get("name") in kernels)]
    with gzip.open(dst, "wt") as f:
        json.dump(doc, f)
    return len(events) - len(doc["traceEvents"])


def hta_results(files):
    with tempfile.TemporaryDirectory() as d:
        for f in files:
            without_cpu_ops_named_like_kernels(os.path.join(TRACES, f), os.path.join(d, os.path.basename(f)))
        a = TraceAnalysis(trace_dir=d, include_last_profiler_step=True)
        temporal = a.get_temporal_breakdown(visualize=False)
        overlap = a.get_comm_comp_overlap(visualize=False)
        _, kernels = a.get_gpu_kernel_breakdown(visualize=False, num_kernels=10 ** 6, duration_ratio=1.0)
    return temporal, overlap, kernels


class HtaCrossCheck(unittest.TestCase):
    def check_job(self, job):
        files = JOBS[job]
        self.assertTrue(files, job)
        with tempfile.TemporaryDirectory() as d:
            prof = os.path.join(d, "p.ssdb")
            run.shardscope("import", "-q", *[os.path.join(TRACES, f) for f in files], "-o", prof)
            temporal = {r["rank"]: r for r in analyze("temporal", prof)["breakdown"]}
            overlap = {r["rank"]: r for r in analyze("overlap", prof)["per_rank"]}
            ours_kernels = {}
            for rank, name, total in run.query(
                    prof, "SELECT rank, name, sum(duration_ns) FROM kernel_view GROUP BY rank, name"):
                ours_kernels[(rank, name)] = total
            # Communication kernels that HTA (name contains "nccl") counts as compute: their time
            # outside the other compute kernels, per rank.
            moved = {}
            for (rank,) in run.query(prof, "SELECT DISTINCT rank FROM kernels"):
                moved[rank] = self.non_nccl_comm_outside_compute(prof, rank)
        hta_t, hta_o, hta_k = hta_results(files)
        self.assertEqual(sorted(hta_t["rank"]), sorted(temporal))
        for _, h in hta_t.iterrows():
            rank = int(h["rank"])
            o = temporal[rank]
            with self.subTest(job=job, rank=rank):
                self.assertAlmostEqual(o["window_ns"], h["kernel_time(us)"] * 1e3, delta=REL * o["window_ns"])
                self.assertAlmostEqual(o["idle_ns"], h["idle_time(us)"] * 1e3, delta=max(1.0, REL * o["idle_ns"]))
                compute = o["compute_ns"] + moved[rank]
                self.assertAlmostEqual(compute, h["compute_time(us)"] * 1e3, delta=max(1.0, REL * compute))
                non_compute = o["communication_ns"] + o["copy_ns"] - moved[rank]
                self.assertAlmostEqual(non_compute, h["non_compute_time(us)"] * 1e3, delta=max(1.0, REL * non_compute))
        for _, h in hta_o.iterrows():
            rank = int(h["rank"])
            if moved[rank]:
                continue  # HTA's communication set differs (see the docstring); checked on the other jobs
            with self.subTest(job=job, rank=rank, what="overlap"):
                self.assertAlmostEqual(overlap[rank]["overlap_pct"], h["comp_comm_overlap_pctg"], delta=0.01 + 1e-3 * 100)
        # Per-kernel totals: every kernel name HTA lists, with its sum, per rank.
        checked = 0
        for _, h in hta_k.iterrows():
            key = (int(h["rank"]), h["name"])
            with self.subTest(job=job, kernel=key):
                self.assertIn(key, ours_kernels)
                self.assertAlmostEqual(ours_kernels[key], h["sum (us)"] * 1e3, delta=max(1.0, REL * ours_kernels[key]))
            checked += 1
        self.assertGreater(checked, 10)

    @staticmethod
    def non_nccl_comm_outside_compute(prof, rank):
        comm = run.query(prof, "SELECT start_ns, end_ns FROM kernel_view WHERE rank = ? AND category = 'collective'"
                               " AND name NOT LIKE '%nccl%'", rank)
        if not comm:
            return 0
        compute = run.query(prof, "SELECT start_ns, end_ns FROM kernel_view WHERE rank = ? AND category = 'compute'", rank)
        return length(union(comm)) - length(intersect(union(comm), union(compute)))

    def test_a100_ddp(self):
        self.check_job("kineto-a100-ddp")

    def test_b200_inference(self):
        self.check_job("kineto-b200-modules")

    def test_v100_dlrm_8_ranks(self):
        self.check_job("kineto-v100-dlrm-8ranks")


def union(iv):
    out = []
    for a, b in sorted(iv):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def intersect(a, b):
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo < hi:
            out.append([lo, hi])
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def length(iv):
    return sum(b - a for a, b in iv)


if __name__ == "__main__":
    unittest.main()
