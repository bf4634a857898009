// The per-rank merge: rank files written by RankFileWriter plus Python sidecars -> one profile.
#include <catch2/catch.hpp>

#include <filesystem>

#include "profiler/collector/core/merge.h"
#include "profiler/collector/core/py_sidecar.h"
#include "profiler/collector/core/rank_file_writer.h"
#include "storage/errors.h"
#include "storage/profile_reader.h"
#include "tests/support/test_paths.h"

using namespace ss;
using namespace ss::collector;

namespace {

constexpr TimeNs kT0 = 1'700'000'000'000'000'000;

ResolvedCollective allgather(std::int64_t seq, TimeNs start, TimeNs end) {
  ResolvedCollective c;
  c.type = CollectiveType::AllGather;
  c.bytes = 4000;
  c.has_comm = true;
  c.comm = 0xfeed;
  c.group_size = 2;
  c.sequence = seq;
  c.start = start;
  c.end = end;
  return c;
}

// One rank: its clock reads `skew` ns ahead of true time; collectives end at true 10k, 20k, 30k.
void write_rank(const std::string& path, int rank, const std::string& host, TimeNs origin, TimeNs skew) {
  RankInfo info;
  info.rank = rank;
  info.host = host;
  info.pid = 100 + rank;
  RankFileWriter w(path, info, origin, "train.py");
  if (rank == 1) {  // rank 1 sees two GPUs; its kernels run on device 1
    w.add_device({0, "NVIDIA H100 80GB HBM3", 80ull << 30, 132, 9, 0});
    w.add_device({1, "NVIDIA H200", 141ull << 30, 132, 9, 0});
  }
  for (int k = 0; k < 3; ++k) {
    ResolvedKernel nk;
    nk.category = KernelCategory::Collective;
    nk.start = kT0 + 10'000 * (k + 1) - 2'000 + skew + rank * 300;  // ranks enter at different times
    nk.end = kT0 + 10'000 * (k + 1) + skew;                           // and leave together
    nk.stream = 20;
    nk.device = static_cast<std::uint32_t>(rank);
    nk.name = "ncclDevKernel_AllGather_RING_LL";
    nk.module = "layers.0";
    nk.collectives.push_back(allgather(k, nk.start, nk.end));
    w.on_kernel(nk);
  }
  ResolvedKernel gemm;
  gemm.device = static_cast<std::uint32_t>(rank);
  gemm.start = kT0 + 12'000 + skew;
  gemm.end = kT0 + 13'000 + skew;
  gemm.stream = 7;
  gemm.name = "sm90_gemm";
  gemm.module = "layers.0.attn";
  gemm.launch = ResolvedLaunch{55, kT0 + 11'500 + skew, kT0 + 11'600 + skew, "cudaLaunchKernel"};
  w.on_kernel(gemm);
  auto range = [&](TimeNs s, TimeNs e, const char* fqn, RangePhase ph) {
    ResolvedRange r;
    r.tid = 55;
    r.start = kT0 + s + skew;
    r.end = kT0 + e + skew;
    r.name = fqn;
    r.kind = RangeKind::Module;
    r.phase = ph;
    r.module = std::string(fqn);
    w.on_range(r);
  };
  range(11'000, 14'000, "layers.0.attn", RangePhase::Forward);  // child written before its parent
  range(10'500, 19'000, "layers.0", RangePhase::Forward);
  w.on_step({0, kT0 + 10'000 + skew, kT0 + 31'000 + skew});
  ResolvedMemory m;
  m.time = kT0 + 12'500 + skew;
  m.address = 0x1000;
  m.bytes = 1 << 20;
  m.module = "layers.0.attn";
  w.on_memory(m);
  w.add_skipped("cupti dropped records", rank == 1 ? 5 : 0);
  w.finish();
}

std::int64_t q(sql::Db& db, const std::string& sql) {
  sql::Stmt st(db.get(), sql);
  REQUIRE(st.step());
  return st.col_int(0);
}

}  // namespace

TEST_CASE("two hosts with skewed clocks, modules from sidecars, a CPU-only rank from its sidecar") {
  test::TempDir dir;
  write_rank(dir.file("shardscope_rank0_lrank0_pid100.ssdb"), 0, "node-a", kT0 + 500, 0);
  write_rank(dir.file("shardscope_rank1_lrank0_pid101.ssdb"), 1, "node-b", kT0 + 900, 5'000);
  test::write_file(dir.file("shardscope_rank0_lrank0_pid100.modules.tsv"),
                   "# shardscope-sidecar 1\nmeta\thost\tnode-a\n"
                   "module\t\tLlama\t300\t600\t0\t\n"
                   "module\tlayers\tModuleList\t200\t400\t0\t\n"
                   "module\tlayers.0\tBlock\t200\t400\t1\ttrue\n"
                   "module\tlayers.0.attn\tAttention\t120\t240\t0\t\n");
  // A process that never touched CUDA: its ranges come from the sidecar (on the shared clock).
  test::write_file(dir.file("shardscope_rank2_lrank0_pid102.modules.tsv"),
                   "# shardscope-sidecar 1\nmeta\thost\tnode-a\n"
                   "range\t9\t" + std::to_string(kT0 + 1'000) + "\t" + std::to_string(kT0 + 2'000) + "\tss:fwd:\n" +
                   "range\t9\t" + std::to_string(kT0 + 2'500) + "\t" + std::to_string(kT0 + 2'700) + "\tss:opt:0\n");
  // A compile subprocess that initialised CUDA but recorded nothing.
  {
    RankInfo info;
    RankFileWriter empty(dir.file("shardscope_rank0_lrank0_pid999.ssdb"), info, kT0, "");
    empty.finish();
  }
  // torchrun's agent (no rank in its environment), whose NVTX started the collector: no warning.
  {
    RankInfo info;
    RankFileWriter empty(dir.file("shardscope_rankx_lrankx_pid98.ssdb"), info, kT0, "");
    empty.finish();
  }

  auto inputs = find_rank_inputs(dir.path());
  REQUIRE(inputs.size() == 5);
  MergeOptions mo;
  mo.output = dir.file("run.ssdb");
  mo.command = "torchrun train.py";
  MergeResult r = merge_rank_files(inputs, mo);
  CHECK(r.ranks == 3);
  CHECK(r.warnings.size() == 1);  // the empty subprocess file (of rank 0)

  auto db = open_profile_readonly(mo.output);
  CHECK(q(db, "SELECT count(*) FROM ranks") == 3);
  CHECK(q(db, "SELECT clock_offset_ns FROM ranks WHERE rank = 0") == 0);
  CHECK(q(db, "SELECT count(*) FROM ranks WHERE rank = 1 AND gpu_name = 'NVIDIA H200' AND device_index = 1 "
              "AND gpu_memory_bytes = 141 << 30 AND sm_count = 132 AND compute_major = 9") == 1);
  CHECK(q(db, "SELECT clock_offset_ns FROM ranks WHERE rank = 1") == -5'000);
  CHECK(q(db, "SELECT clock_offset_ns FROM ranks WHERE rank = 2") == 0);  // same host as rank 0
  // Aligned: every all-gather ends at the same instant on both ranks.
  CHECK(q(db, "SELECT count(*) FROM collectives a JOIN collectives b ON a.sequence = b.sequence "
              "WHERE a.rank = 0 AND b.rank = 1 AND a.start_ns + a.duration_ns = b.start_ns + b.duration_ns") == 3);
  CHECK(q(db, "SELECT count(*) FROM collectives WHERE bytes = 4000 AND group_size = 2 AND process_group_id IS NOT NULL") == 6);
  CHECK(q(db, "SELECT count(*) FROM process_groups") == 1);
  // Time 0 is the earliest corrected origin: rank 1's, kT0 + 900 on its clock, 5000 ns ahead.
  const TimeNs origin = kT0 + 900 - 5'000;
  CHECK(q(db, "SELECT value FROM meta WHERE key = 'time_origin_unix_ns'") == origin);
  CHECK(q(db, "SELECT min(start_ns) FROM ranges WHERE rank = 2") == kT0 + 1'000 - origin);  // uncorrected host
  // Modules: one tree, sizes from the sidecar, unit links.
  CHECK(q(db, "SELECT count(*) FROM modules") == 4);
  CHECK(q(db, "SELECT param_bytes FROM modules WHERE fqn = 'layers.0'") == 400);
  CHECK(q(db, "SELECT is_fsdp_unit FROM modules WHERE fqn = 'layers.0'") == 1);
  CHECK(q(db, "SELECT count(*) FROM modules m JOIN modules u ON u.id = m.fsdp_unit_id "
              "WHERE m.fqn = 'layers.0.attn' AND u.fqn = 'layers.0'") == 1);
  CHECK(q(db, "SELECT count(*) FROM modules m JOIN modules p ON p.id = m.parent_id WHERE m.fqn = 'layers' AND p.fqn = ''") == 1);
  // Kernels keep their module; ranges get nesting.
  CHECK(q(db, "SELECT count(*) FROM kernels k JOIN modules m ON m.id = k.module_id WHERE m.fqn = 'layers.0.attn'") == 2);
  CHECK(q(db, "SELECT count(*) FROM ranges r JOIN ranges p ON p.id = r.parent_id JOIN strings s ON s.id = r.name_id "
              "WHERE s.value = 'layers.0.attn' AND r.depth = 1") == 2);
  // The gemm's launch: on its rank's thread 55, on the shared clock, named.
  CHECK(q(db, "SELECT count(*) FROM launches") == 2);
  CHECK(q(db, "SELECT count(*) FROM launches l JOIN kernels k ON k.id = l.kernel_id AND k.rank = l.rank "
              "JOIN strings s ON s.id = k.name_id JOIN threads t ON t.id = l.thread_id AND t.rank = l.rank "
              "JOIN strings n ON n.id = l.name_id WHERE s.value = 'sm90_gemm' AND t.tid = 55 AND n.value = 'cudaLaunchKernel' "
              "AND l.duration_ns = 100 AND l.start_ns = " + std::to_string(kT0 + 11'500 - origin)) == 2);
  CHECK(q(db, "SELECT count(*) FROM steps") == 3);
  CHECK(q(db, "SELECT count(*) FROM memory_events WHERE module_id IS NOT NULL") == 2);
  CHECK(q(db, "SELECT sum(count) FROM skipped_events WHERE reason = 'cupti dropped records'") == 5);
  // The whole profile loads through the normal reader.
  Profile p = load_profile(mo.output);
  CHECK(p.ranks.size() == 3);
  CHECK(p.kernel_count == 8);
}

TEST_CASE("same-host ranks are not shifted; a failed merge leaves no output") {
  test::TempDir dir;
  write_rank(dir.file("shardscope_rank0_lrank0_pid100.ssdb"), 0, "node-a", kT0, 0);
  write_rank(dir.file("shardscope_rank1_lrank1_pid101.ssdb"), 1, "node-a", kT0, 0);
  MergeOptions mo;
  mo.output = dir.file("run.ssdb");
  auto r = merge_rank_files(find_rank_inputs(dir.path()), mo);
  REQUIRE(r.clock_offsets.size() == 2);
  CHECK(r.clock_offsets[1].second == 0);

  test::TempDir empty;
  mo.output = empty.file("none.ssdb");
  CHECK_THROWS_AS(merge_rank_files(find_rank_inputs(empty.path()), mo), ProfileError);
  CHECK_FALSE(std::filesystem::exists(mo.output));
}

TEST_CASE("sidecar parsing: errors name the file and line, a torn last line is ignored") {
  auto ok = parse_sidecar("# shardscope-sidecar 1\nmodule\ta\tLinear\t10\t40\t0\t\nmodule\ta\tLinear\t12\t48\t1\tfalse\nrange\t1\t5\t9\tss:fwd:a\nrange\t1\t10", "x.tsv");
  REQUIRE(ok.modules.size() == 1);  // the second line replaced the first
  CHECK(ok.modules[0].param_count == 12);
  CHECK(ok.modules[0].is_fsdp_unit);
  CHECK(ok.modules[0].reshard_policy == "false");
  CHECK(ok.ranges.size() == 1);

  auto fails_with = [](const std::string& text, const std::string& what) {
    try {
      parse_sidecar(text, "s.tsv");
      FAIL("no error for " << text);
    } catch (const ProfileError& e) {
      CHECK_THAT(e.what(), Catch::Contains(what));
    }
  };
  fails_with("meta\tk\tv\nmodule\ta\tLinear\tten\t40\t0\t\n", "s.tsv:2: expected an integer param_count");
  fails_with("bogus\t1\n", "s.tsv:1: unknown record type 'bogus'");
  fails_with("range\t1\t9\t5\tss:fwd:\n", "s.tsv:1: range ends before it starts");
  fails_with("module\ta\n", "s.tsv:1: expected 7 or 8 fields");
  fails_with("step\t3\t9\t5\n", "s.tsv:1: step ends before it starts");
  fails_with("step\t-1\t5\t9\n", "s.tsv:1: negative step number");
  fails_with("step\t1\t5\n", "s.tsv:1: expected 4 or 5 fields 'step number start_ns end_ns [model_calls]'");
  fails_with("step\t1\t5\t9\t-2\n", "s.tsv:1: negative model call count");
  fails_with("step\t1\t5\t9\tx\n", "s.tsv:1: expected an integer model call count");
  auto grouped = parse_sidecar("module\thead\tLinear\t8\t32\t0\ttrue\tnorm\n", "g.tsv");
  REQUIRE(grouped.modules.size() == 1);
  CHECK(grouped.modules[0].unit_owner == "norm");
}

TEST_CASE("a loop with two optimizers: one step an iteration, to the second optimizer's end") {
  // The hooks number both optimizer ranges of an iteration with its step (_step_cycle.py); the
  // collector (here: a rank built from its sidecar, through the attributor) writes a step row for
  // each, the second from the first's end: merged into one.
  test::TempDir dir;
  auto range = [](TimeNs a, TimeNs b, const char* name) {
    return "range\t9\t" + std::to_string(kT0 + a) + "\t" + std::to_string(kT0 + b) + "\t" + name + "\n";
  };
  test::write_file(dir.file("shardscope_rank0_lrank0_pid100.modules.tsv"),
                   "# shardscope-sidecar 1\nmodule\t\tModel\t40\t160\t1\t\n" + range(1'000, 2'000, "ss:fwd:") +
                       range(2'100, 2'300, "ss:opt:0") + range(2'400, 2'500, "ss:opt:0") + range(3'000, 4'000, "ss:fwd:") +
                       range(4'100, 4'300, "ss:opt:1") + range(4'400, 4'600, "ss:opt:1"));
  MergeOptions mo;
  mo.output = dir.file("run.ssdb");
  merge_rank_files(find_rank_inputs(dir.path()), mo);
  auto db = open_profile_readonly(mo.output);
  CHECK(q(db, "SELECT count(*) FROM steps") == 2);
  CHECK(q(db, "SELECT duration_ns FROM steps WHERE number = 0") == 1'500);  // the first module range to 2500
  CHECK(q(db, "SELECT duration_ns FROM steps WHERE number = 1") == 2'100);  // 2500 to 4600
  CHECK(q(db, "SELECT s1.start_ns - s0.start_ns - s0.duration_ns FROM steps s0 JOIN steps s1 ON s1.number = 1 "
              "WHERE s0.number = 0") == 0);
}

TEST_CASE("a grouped unit (fully_shard([norm, head])): one unit, its other member points to it") {
  test::TempDir dir;
  // "head" sorts before "norm" at the same depth, but refers to it: the owner's row comes first.
  test::write_file(dir.file("shardscope_rank0_lrank0_pid100.modules.tsv"),
                   "# shardscope-sidecar 1\n"
                   "module\t\tModel\t40\t160\t1\t\n"
                   "module\thead\tLinear\t32\t128\t0\ttrue\tnorm\n"
                   "module\thead.inner\tIdentity\t0\t0\t0\t\n"
                   "module\tblock\tBlock\t0\t0\t1\ttrue\n"
                   "module\tblock.inner\tWrapper\t0\t0\t0\t\n"
                   "module\tblock.inner.mlp\tMLP\t0\t0\t0\t\n"
                   "module\tnorm\tLayerNorm\t8\t32\t1\ttrue\n"
                   "range\t9\t" + std::to_string(kT0 + 1'000) + "\t" + std::to_string(kT0 + 2'000) + "\tss:fwd:head\n" +
                   "range\t9\t" + std::to_string(kT0 + 2'500) + "\t" + std::to_string(kT0 + 2'700) + "\tss:opt:0\n");
  MergeOptions mo;
  mo.output = dir.file("run.ssdb");
  merge_rank_files(find_rank_inputs(dir.path()), mo);
  auto db = open_profile_readonly(mo.output);
  CHECK(q(db, "SELECT count(*) FROM modules WHERE is_fsdp_unit = 1") == 3);  // the root, block and norm
  // A module two levels below a unit belongs to that unit, not to the root (no owner is no owner).
  CHECK(q(db, "SELECT count(*) FROM modules m JOIN modules u ON u.id = m.fsdp_unit_id WHERE m.fqn = 'block.inner.mlp' AND u.fqn = 'block'") == 1);
  CHECK(q(db, "SELECT count(*) FROM modules m JOIN modules u ON u.id = m.fsdp_unit_id WHERE m.fqn = 'head' AND u.fqn = 'norm' "
              "AND m.is_fsdp_unit = 0 AND m.reshard_policy = 'true' AND u.id < m.id") == 1);
  // Below the member, its modules' parameters are the group's too.
  CHECK(q(db, "SELECT count(*) FROM modules m JOIN modules u ON u.id = m.fsdp_unit_id WHERE m.fqn = 'head.inner' AND u.fqn = 'norm'") == 1);
}

TEST_CASE("per-tensor memory of a GPU rank gets the importers' categories from steps and hook ranges, pass by pass") {
  test::TempDir dir;
  RankInfo info;
  info.rank = 0;
  info.host = "node-a";
  RankFileWriter w(dir.file("shardscope_rank0_lrank0_pid100.ssdb"), info, kT0, "train.py");
  auto range = [&](TimeNs s, TimeNs e, const char* name, RangePhase ph) {
    ResolvedRange r;
    r.tid = 55;
    r.start = kT0 + s;
    r.end = kT0 + e;
    r.name = name;
    r.kind = RangeKind::Module;
    r.phase = ph;
    w.on_range(r);
  };
  // Two passes a step (gradient accumulation): the second forward comes after the first backward.
  range(1'000, 4'000, "layers.0", RangePhase::Forward);
  range(5'000, 6'000, "layers.0", RangePhase::Backward);
  range(6'200, 7'000, "layers.0", RangePhase::Forward);
  range(7'200, 8'000, "layers.0", RangePhase::Backward);
  range(9'000, 9'900, "optimizer.step", RangePhase::Optimizer);
  w.on_step({0, kT0, kT0 + 10'000});
  auto mem = [&](TimeNs t, std::int64_t addr, std::int64_t bytes) {
    ResolvedMemory m;
    m.time = kT0 + t;
    m.address = addr;
    m.bytes = bytes;
    w.on_memory(m);
  };
  mem(2'000, 0x100, 64);   // forward, freed in backward: activation
  mem(6'000, 0x100, -64);
  mem(2'500, 0x200, 32);   // forward, freed in forward: temporary
  mem(3'000, 0x200, -32);
  mem(7'500, 0x300, 16);   // backward, alive into the optimizer: gradient
  mem(9'500, 0x400, 128);  // optimizer, alive after it: optimizer state
  mem(6'400, 0x500, 64);   // the second forward, freed in its backward: activation
  mem(7'600, 0x500, -64);
  mem(6'600, 0x600, 32);   // the second forward, freed in it: temporary
  mem(6'800, 0x600, -32);
  w.finish();
  MergeOptions mo;
  mo.output = dir.file("out.ssdb");
  merge_rank_files(find_rank_inputs(dir.path()), mo);
  sql::Db db = open_profile_readonly(mo.output);
  auto category_of = [&](std::int64_t addr) {
    return q(db, "SELECT min(category) FROM memory_events WHERE address = " + std::to_string(addr));
  };
  CHECK(category_of(0x100) == static_cast<int>(MemoryCategory::Activation));
  CHECK(category_of(0x200) == static_cast<int>(MemoryCategory::Temporary));
  CHECK(category_of(0x300) == static_cast<int>(MemoryCategory::Gradient));
  CHECK(category_of(0x400) == static_cast<int>(MemoryCategory::OptimizerState));
  CHECK(category_of(0x500) == static_cast<int>(MemoryCategory::Activation));
  CHECK(category_of(0x600) == static_cast<int>(MemoryCategory::Temporary));
}

// record --steps A:B: the sidecar's wall-clock "step" lines (steps outside the capture window)
// become unobserved_steps on the profile's clock; a step the rank file profiled is not one.
TEST_CASE("steps outside the capture window are stored as unobserved steps") {
  test::TempDir dir;
  write_rank(dir.file("shardscope_rank0_lrank0_pid100.ssdb"), 0, "node-a", kT0, 0);  // profiled step 0
  test::write_file(dir.file("shardscope_rank0_lrank0_pid100.modules.tsv"),
                   "# shardscope-sidecar 1\nmeta\tcapture_window\t0:1\n"
                   "step\t0\t" + std::to_string(kT0 + 10'000) + "\t" + std::to_string(kT0 + 31'000) + "\n"
                   "step\t1\t" + std::to_string(kT0 + 31'500) + "\t" + std::to_string(kT0 + 50'000) + "\t2\n"
                   "step\t2\t" + std::to_string(kT0 + 50'100) + "\t" + std::to_string(kT0 + 70'000) + "\n");
  MergeOptions mo;
  mo.output = dir.file("run.ssdb");
  merge_rank_files(find_rank_inputs(dir.path()), mo);
  sql::Db db = open_profile_readonly(mo.output);
  CHECK(q(db, "SELECT count(*) FROM steps") == 1);
  CHECK(q(db, "SELECT count(*) FROM unobserved_steps") == 2);
  CHECK(q(db, "SELECT start_ns FROM unobserved_steps WHERE number = 1") == 31'500);
  CHECK(q(db, "SELECT duration_ns FROM unobserved_steps WHERE number = 1") == 18'500);
  CHECK(q(db, "SELECT duration_ns FROM unobserved_steps WHERE number = 2") == 19'900);
  // The model's calls where the sidecar counted them (an evaluation adds calls); NULL where not.
  CHECK(q(db, "SELECT model_calls FROM unobserved_steps WHERE number = 1") == 2);
  CHECK(q(db, "SELECT model_calls IS NULL FROM unobserved_steps WHERE number = 2") == 1);
  sql::Stmt st(db.get(), "SELECT value FROM meta WHERE key = 'rank0.capture_window'");
  REQUIRE(st.step());
  CHECK(st.col_text(0) == "0:1");
}

// An FSDP2 unit with parameters on several meshes (hooks.py, fsdp2_group_sizes) and the job's
// prefetch lists (fsdp2_prefetch_lists), and the mesh dimensions beside FSDP's (model_parallel_dims)
// with FSDP's own process group: the sidecar's "param_groups.<fqn>", "<phase>_prefetch.<fqn>",
// "model_parallel", "fsdp_group" and "fsdp_dtype_bytes" meta reach the
// profile per rank, where the replay reads them; other meta keys of the sidecar stay out.
TEST_CASE("a unit's parameter groups, prefetch lists and the model-parallel mesh reach the profile's meta") {
  test::TempDir dir;
  write_rank(dir.file("shardscope_rank0_lrank0_pid100.ssdb"), 0, "node-a", kT0, 0);
  test::write_file(dir.file("shardscope_rank0_lrank0_pid100.modules.tsv"),
                   "# shardscope-sidecar 1\nmeta\tparam_groups.layers.0\t1575680@2 196608@1\n"
                   "meta\tforward_prefetch.layers.0\tlayers.1 layers.2\nmeta\tbackward_prefetch.layers.2\tlayers.1\n"
                   "meta\tmodel_parallel\ttp=2\nmeta\tmodel_parallel_ranks\t2\nmeta\tfsdp_group\t1\n"
                   "meta\tfsdp_dtype_bytes\t2 4\n"
                   "meta\tparam_groupsX\t1\nmeta\tsomething_else\t2\n");
  MergeOptions mo;
  mo.output = dir.file("run.ssdb");
  merge_rank_files(find_rank_inputs(dir.path()), mo);
  sql::Db db = open_profile_readonly(mo.output);
  sql::Stmt st(db.get(), "SELECT key, value FROM meta WHERE key LIKE 'rank0.%' ORDER BY key");
  std::vector<std::pair<std::string, std::string>> rows;
  while (st.step()) rows.emplace_back(st.col_text(0), st.col_text(1));
  CHECK(rows == std::vector<std::pair<std::string, std::string>>{{"rank0.backward_prefetch.layers.2", "layers.1"},
                                                                  {"rank0.forward_prefetch.layers.0", "layers.1 layers.2"},
                                                                  {"rank0.fsdp_dtype_bytes", "2 4"},
                                                                  {"rank0.fsdp_group", "1"},
                                                                  {"rank0.model_parallel", "tp=2"},
                                                                  {"rank0.model_parallel_ranks", "2"},
                                                                  {"rank0.param_groups.layers.0", "1575680@2 196608@1"}});
}
