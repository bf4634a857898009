// Kineto JSON import rules, one hand-written fixture per concern (tests/import/fixtures/).
#include <catch2/catch.hpp>

#include "profiler/common/comm_kernels.h"
#include "profiler/common/fsdp_range_name.h"
#include "profiler/import/import.h"
#include "tests/import/import_test_util.h"
#include "tests/support/test_paths.h"

using namespace ss;
using namespace ss::test;

namespace {

std::string fixture(const std::string& name) { return source_dir() + "/tests/import/fixtures/" + name; }

std::string import_one(TempDir& dir, const std::string& input) {
  const std::string out = dir.file("out.ssdb");
  import::ImportOptions o;
  o.show_progress = false;
  import::import_files({input}, out, o);
  return out;
}

}  // namespace

TEST_CASE("FSDP fixture: rank, GPU and streams", "[kineto]") {
  TempDir dir;
  const auto db = import_one(dir, fixture("fsdp_rank1.json"));
  // distributedInfo.rank / world_size and deviceProperties of the device the kernels ran on.
  CHECK(query_int(db, "SELECT count(*) FROM ranks") == 1);
  CHECK(query_int(db, "SELECT rank FROM ranks") == 1);
  CHECK(query_int(db, "SELECT world_size FROM ranks") == 2);
  CHECK(query_text(db, "SELECT gpu_name FROM ranks") == "NVIDIA H100 80GB HBM3");
  CHECK(query_int(db, "SELECT gpu_memory_bytes FROM ranks") == 85045231616);
  CHECK(query_int(db, "SELECT sm_count FROM ranks") == 132);
  CHECK(query_int(db, "SELECT compute_major FROM ranks") == 9);
  CHECK(query_int(db, "SELECT pid FROM ranks") == 100);
  // One stream per (device, stream): NCCL when it carries NCCL kernels, copy when only copies.
  CHECK(query_int(db, "SELECT count(*) FROM streams") == 3);
  CHECK(query_text(db, "SELECT e.label FROM streams s JOIN enums e ON e.type='stream_kind' AND e.value=s.kind WHERE native_id=20") == "nccl");
  CHECK(query_text(db, "SELECT e.label FROM streams s JOIN enums e ON e.type='stream_kind' AND e.value=s.kind WHERE native_id=7") == "compute");
  CHECK(query_text(db, "SELECT e.label FROM streams s JOIN enums e ON e.type='stream_kind' AND e.value=s.kind WHERE native_id=30") == "copy");
}

TEST_CASE("FSDP fixture: kernels, memcpy, memset with exact times", "[kineto]") {
  TempDir dir;
  const auto db = import_one(dir, fixture("fsdp_rank1.json"));
  CHECK(query_int(db, "SELECT count(*) FROM kernels") == 6);
  CHECK(query_int(db, "SELECT count(*) FROM kernel_view WHERE category='collective'") == 2);
  CHECK(query_int(db, "SELECT count(*) FROM kernel_view WHERE category='compute'") == 2);
  CHECK(query_int(db, "SELECT bytes FROM kernel_view WHERE category='memcpy'") == 4096);
  CHECK(query_int(db, "SELECT bytes FROM kernel_view WHERE category='memset'") == 128);
  // Time 0 is the first event (ProfilerStep#7 at ts 1000.000 us after baseTimeNanoseconds).
  CHECK(query_text(db, "SELECT value FROM meta WHERE key='time_origin_unix_ns'") == "1700000000001000000");
  // ts 1013.000 us, dur 8.250 us -> 13000 ns after the origin, 8250 ns long (no float rounding).
  CHECK(query_int(db, "SELECT start_ns FROM kernels WHERE correlation=11") == 13000);
  CHECK(query_int(db, "SELECT duration_ns FROM kernels WHERE correlation=11") == 8250);
  CHECK(query_int(db, "SELECT duration_ns FROM kernels WHERE correlation=16") == 500);
  CHECK(query_int(db, "SELECT grid_x FROM kernel_view WHERE correlation=12") == 132);
  CHECK(query_int(db, "SELECT block_x FROM kernel_view WHERE correlation=12") == 128);
  CHECK(query_int(db, "SELECT c.registers_per_thread FROM kernels k JOIN launch_configs c ON c.id=k.launch_config_id WHERE correlation=12") == 168);
}

TEST_CASE("FSDP fixture: module tree and kernel attribution through the launch", "[kineto]") {
  TempDir dir;
  const auto db = import_one(dir, fixture("fsdp_rank1.json"));
  // FSDP FQNs build the tree from their prefixes: "" (root) <- layers <- layers.0.
  CHECK(query_column(db, "SELECT fqn FROM modules ORDER BY fqn") == std::vector<std::string>{"", "layers", "layers.0"});
  CHECK(query_text(db, "SELECT p.fqn FROM modules m JOIN modules p ON p.id=m.parent_id WHERE m.fqn='layers.0'") == "layers");
  CHECK(query_int(db, "SELECT is_fsdp_unit FROM modules WHERE fqn='layers.0'") == 1);
  // The gemm launched between FSDP::pre_forward and FSDP::post_forward (layers.0).
  CHECK(query_text(db, "SELECT module FROM kernel_view WHERE correlation=12") == "layers.0");
  // The all-gather launched inside FSDP::all_gather (layers.0).
  CHECK(query_text(db, "SELECT module FROM kernel_view WHERE correlation=11") == "layers.0");
  // Backward: launched on the autograd thread between pre_backward and post_backward.
  CHECK(query_text(db, "SELECT module FROM kernel_view WHERE correlation=14") == "layers.0");
  // The copy launched after post_forward belongs to no module.
  CHECK(query_text(db, "SELECT module FROM kernel_view WHERE correlation=13") == "<null>");
  // Synthesized per-unit forward / backward ranges with their phases.
  CHECK(query_int(db, "SELECT count(*) FROM range_view WHERE kind='module' AND name='layers.0' AND phase='forward'") == 1);
  CHECK(query_int(db, "SELECT count(*) FROM range_view WHERE kind='module' AND name='layers.0' AND phase='backward'") == 1);
  CHECK(query_int(db, "SELECT duration_ns FROM range_view WHERE kind='module' AND phase='forward'") == 35000);
  CHECK(query_text(db, "SELECT phase FROM range_view WHERE name='FSDP::post_backward (layers.0)'") == "backward");
  CHECK(query_text(db, "SELECT phase FROM range_view WHERE name='FSDP::all_gather (layers.0)'") == "forward");
  CHECK(query_text(db, "SELECT kind FROM range_view WHERE name='FSDP::all_gather (layers.0)'") == "fsdp");
  CHECK(query_text(db, "SELECT phase FROM range_view WHERE name='Optimizer.step#AdamW.step'") == "optimizer");
  // CPU ops get the innermost module too.
  CHECK(query_text(db, "SELECT module FROM range_view WHERE name='aten::mm'") == "layers.0");
}

TEST_CASE("FSDP fixture: collectives joined with record_param_comms", "[kineto]") {
  TempDir dir;
  const auto db = import_one(dir, fixture("fsdp_rank1.json"));
  CHECK(query_int(db, "SELECT count(*) FROM collectives") == 2);
  // All-gather: output size, 2000 elements x 2 bytes (BFloat16).
  CHECK(query_text(db, "SELECT type FROM collective_view WHERE sequence=0") == "all_gather");
  CHECK(query_int(db, "SELECT bytes FROM collective_view WHERE type='all_gather'") == 4000);
  CHECK(query_text(db, "SELECT dtype FROM collective_view WHERE type='all_gather'") == "BFloat16");
  // Reduce-scatter: input size, 4000 elements x 4 bytes (Float).
  CHECK(query_int(db, "SELECT bytes FROM collective_view WHERE type='reduce_scatter'") == 16000);
  CHECK(query_int(db, "SELECT sequence FROM collective_view WHERE type='reduce_scatter'") == 1);
  CHECK(query_int(db, "SELECT group_size FROM collective_view WHERE type='reduce_scatter'") == 2);
  // One process group row from pg_config + args, shared by both.
  CHECK(query_int(db, "SELECT count(*) FROM process_groups") == 1);
  CHECK(query_text(db, "SELECT ranks FROM process_groups") == "[0,1]");
  CHECK(query_text(db, "SELECT description FROM process_groups") == "default_pg");
  CHECK(query_text(db, "SELECT backend FROM process_groups") == "cuda:nccl");
  CHECK(query_int(db, "SELECT count(DISTINCT process_group) FROM collective_view") == 1);
  CHECK(query_int(db, "SELECT c.kernel_id = k.id FROM collectives c JOIN kernels k ON k.correlation=15 WHERE c.type=3") == 1);
}

TEST_CASE("FSDP fixture: steps, memory, GPU annotations, threads, skips", "[kineto]") {
  TempDir dir;
  const auto db = import_one(dir, fixture("fsdp_rank1.json"));
  CHECK(query_int(db, "SELECT number FROM steps") == 7);
  CHECK(query_int(db, "SELECT start_ns FROM steps") == 0);
  CHECK(query_int(db, "SELECT duration_ns FROM steps") == 500000);
  // The CUDA [memory] event, attributed to the module active on its thread; the CPU one skipped.
  CHECK(query_int(db, "SELECT count(*) FROM memory_events") == 1);
  CHECK(query_int(db, "SELECT bytes FROM memory_events") == 1048576);
  CHECK(query_int(db, "SELECT address FROM memory_events") == 4096);
  CHECK(query_int(db, "SELECT time_ns FROM memory_events") == 25000);
  CHECK(query_text(db, "SELECT module FROM memory_view") == "layers.0");
  CHECK(query_int(db, "SELECT count FROM skipped_events WHERE reason LIKE '%non-CUDA%'") == 1);
  CHECK(query_int(db, "SELECT count FROM skipped_events WHERE reason LIKE 'flow arrow%'") == 2);
  // gpu_user_annotation: a range on the NCCL stream's lane.
  CHECK(query_int(db, "SELECT count(*) FROM range_view r JOIN streams s ON s.id=r.stream_id WHERE r.kind='gpu_annotation' AND s.native_id=20") == 1);
  // Thread names: from thread_name metadata, "autograd" for the engine thread.
  CHECK(query_text(db, "SELECT name FROM threads WHERE tid=100") == "python main");
  CHECK(query_text(db, "SELECT name FROM threads WHERE tid=200") == "autograd");
  // Nesting: the FSDP::all_gather range sits inside the synthesized layers.0 forward range.
  CHECK(query_text(db, "SELECT p.name FROM range_view r JOIN range_view p ON p.id=r.parent_id WHERE r.name='FSDP::all_gather (layers.0)'") == "FSDP::pre_forward (layers.0)");
  CHECK(query_text(db, "SELECT source_format FROM origin") == "kineto-json");
}

TEST_CASE("gzip input gives the same profile as plain JSON", "[kineto]") {
  TempDir dir;
  const std::string gz = dir.file("fsdp.json.gz");
  write_gzip(gz, read_file(fixture("fsdp_rank1.json")));
  const auto db = import_one(dir, gz);
  CHECK(query_int(db, "SELECT count(*) FROM kernels") == 6);
  CHECK(query_int(db, "SELECT bytes FROM collective_view WHERE type='all_gather'") == 4000);
  // Multi-member gzip (cat a.gz b.gz) inflates as one stream; here: JSON split in two members.
  const std::string json = read_file(fixture("fsdp_rank1.json"));
  const std::string two = dir.file("two.json.gz");
  write_file(two, gzip_bytes(json.substr(0, 1000)) + gzip_bytes(json.substr(1000)));
  TempDir dir2;
  const auto db2 = import_one(dir2, two);
  CHECK(query_int(db2, "SELECT count(*) FROM kernels") == 6);
}

TEST_CASE("legacy 2021 trace: capitalised categories, unix-us timestamps, string tids", "[kineto]") {
  TempDir dir;
  const auto db = import_one(dir, fixture("legacy_2021.json"));
  // No distributedInfo: the first free rank.
  CHECK(query_int(db, "SELECT rank FROM ranks") == 0);
  CHECK(query_int(db, "SELECT count(*) FROM kernels") == 3);
  CHECK(query_int(db, "SELECT count(*) FROM kernel_view WHERE category='memcpy' AND bytes=800") == 1);
  // No baseTimeNanoseconds: ts is unix-epoch microseconds.
  CHECK(query_text(db, "SELECT value FROM meta WHERE key='time_origin_unix_ns'") == "1640995200000000000");
  CHECK(query_int(db, "SELECT start_ns FROM kernels WHERE correlation=501") == 120000);
  // "tid": "stream 7" with no args.stream.
  CHECK(query_int(db, "SELECT s.native_id FROM kernels k JOIN streams s ON s.id=k.stream_id WHERE correlation=502") == 7);
  // Collective type and size from the nccl:all_reduce annotation around the launch (1024 floats).
  CHECK(query_text(db, "SELECT type FROM collective_view") == "all_reduce");
  CHECK(query_int(db, "SELECT bytes FROM collective_view") == 4096);
  CHECK(query_int(db, "SELECT number FROM steps") == 3);
  CHECK(query_text(db, "SELECT kind FROM range_view WHERE name='aten::add'") == "cpu_op");
}

TEST_CASE("nn.Module events: fully-qualified names from nesting, attribution, ns display unit", "[kineto]") {
  TempDir dir;
  const auto db = import_one(dir, fixture("modules.json"));
  CHECK(query_column(db, "SELECT fqn FROM modules ORDER BY fqn") ==
        std::vector<std::string>{"Net_0", "Net_0.Linear_0", "Net_0.Linear_1"});
  CHECK(query_text(db, "SELECT class_name FROM modules WHERE fqn='Net_0.Linear_1'") == "Linear");
  CHECK(query_text(db, "SELECT p.fqn FROM modules m JOIN modules p ON p.id=m.parent_id WHERE m.fqn='Net_0.Linear_0'") == "Net_0");
  CHECK(query_text(db, "SELECT module FROM kernel_view WHERE name='gemm_a'") == "Net_0.Linear_0");
  CHECK(query_text(db, "SELECT module FROM kernel_view WHERE name='gemm_b'") == "Net_0.Linear_1");
  CHECK(query_text(db, "SELECT module FROM kernel_view WHERE name='relu'") == "Net_0");
  CHECK(query_text(db, "SELECT module FROM kernel_view WHERE name='loose'") == "<null>");
  CHECK(query_text(db, "SELECT module FROM kernel_view WHERE name='unlaunched'") == "<null>");
  CHECK(query_int(db, "SELECT count(*) FROM range_view WHERE kind='module' AND phase='forward'") == 3);
  // displayTimeUnit "ns" is a display hint only: ts stays microseconds (Kineto writes us).
  CHECK(query_int(db, "SELECT duration_ns FROM kernels WHERE correlation=1") == 2000);
  // Non-module Python frames are counted, not imported.
  CHECK(query_int(db, "SELECT count FROM skipped_events WHERE reason LIKE 'python_function%'") == 1);
}

TEST_CASE("several ranks' files merge onto one clock", "[kineto]") {
  TempDir dir;
  const std::string base = R"({"distributedInfo": {"rank": RANK, "world_size": 2}, "baseTimeNanoseconds": 1000000000000,
    "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": TS, "dur": 1.5,
                     "args": {"device": 0, "stream": 7, "correlation": 1}}]})";
  auto make = [&](const std::string& rank, const std::string& ts) {
    std::string s = base;
    s.replace(s.find("RANK"), 4, rank);
    s.replace(s.find("TS"), 2, ts);
    const std::string p = dir.file("r" + rank + ".json");
    write_file(p, s);
    return p;
  };
  const auto a = make("0", "100.000");
  const auto b = make("1", "250.125");
  const std::string out = dir.file("merged.ssdb");
  import::ImportOptions o;
  o.show_progress = false;
  import::import_files({a, b}, out, o);
  CHECK(query_int(out, "SELECT count(*) FROM ranks") == 2);
  CHECK(query_int(out, "SELECT start_ns FROM kernels WHERE rank=0") == 0);
  CHECK(query_int(out, "SELECT start_ns FROM kernels WHERE rank=1") == 150125);
  CHECK(query_int(out, "SELECT count(*) FROM streams") == 2);
}

TEST_CASE("backward is the autograd engine's time, even when it runs on the main thread", "[kineto]") {
  // Older PyTorch runs backward on the thread that ran forward (as in the V100 DLRM trace): the
  // forward op at ts 10 and the annotation at ts 0 are forward / unphased; only what lies inside
  // autograd::engine::evaluate_function [100, 200] is backward.
  TempDir dir;
  const std::string p = dir.file("main_thread_backward.json");
  write_file(p, R"({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "## forward ##", "pid": 1, "tid": 5, "ts": 0, "dur": 50},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 5, "ts": 10, "dur": 5},
    {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: MmBackward0", "pid": 1, "tid": 5, "ts": 100, "dur": 100},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 5, "ts": 110, "dur": 5},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 120, "dur": 1,
     "args": {"device": 0, "stream": 7, "correlation": 1}}]})");
  const std::string out = import_one(dir, p);
  CHECK(query_text(out, "SELECT phase FROM range_view WHERE name = '## forward ##'") == "none");
  CHECK(query_text(out, "SELECT phase FROM range_view WHERE name = 'aten::mm' AND start_ns = 10000") == "none");
  CHECK(query_text(out, "SELECT phase FROM range_view WHERE name = 'aten::mm' AND start_ns = 110000") == "backward");
  CHECK(query_text(out, "SELECT phase FROM range_view WHERE name LIKE 'autograd::engine%'") == "backward");
}

TEST_CASE("memory: the level before the trace and a free the profiler did not record", "[kineto][memory]") {
  // The first event says 6000 bytes were allocated after its own 1000: 5000 came before the trace.
  // Address 4096 is allocated again at 1040 us without a free: the 1000-byte block was freed
  // unrecorded, and the trace's total shows when: at 1030 us it is 1000 short of the running sum.
  TempDir dir;
  const auto db = import_one(dir, fixture("memory_levels.json"));
  CHECK(query_int(db, "SELECT bytes FROM memory_events WHERE address = 0") == 5000);
  CHECK(query_int(db, "SELECT count(*) FROM memory_events WHERE address = 4096 AND bytes = -1000") == 1);
  CHECK(query_int(db, "SELECT time_ns FROM memory_events WHERE address = 4096 AND bytes = -1000") == 30000);
  CHECK(query_int(db, "SELECT count FROM skipped_events WHERE reason LIKE '%did not record%'") == 1);
  // The running sum now equals the trace's own total after every event: 6000, 6500, 5600, 5800.
  CHECK(query_int(db, "SELECT max(level) FROM (SELECT sum(bytes) OVER (ORDER BY time_ns, bytes ROWS UNBOUNDED PRECEDING) AS level "
                      "FROM memory_events)") == 6500);
  CHECK(query_int(db, "SELECT sum(bytes) FROM memory_events") == 5800);
}

// record --steps A:B on a CPU: the trace begins mid-run. The tensors alive then, told by the hooks
// with their sizes ("ss:live"), become allocations at its start with their categories and modules,
// freed at their "ss:freed" marker or, without one, just before a recorded allocation reuses the
// address; torch.profiler's own totals (which leave them out) still drive the rest.
TEST_CASE("a capture window's live tensors: allocated at the start, freed at their death or reuse", "[kineto][memory]") {
  TempDir dir;
  const auto db = import_one(dir, fixture("capture_window_cpu.json"));
  const auto at = [&](const std::string& where) {
    return query_int(db, "SELECT time_ns - (SELECT min(time_ns) FROM memory_events) FROM memory_events WHERE " + where);
  };
  CHECK(query_text(db, "SELECT category || ' ' || module FROM memory_view WHERE address = 4096 AND bytes = 1000") ==
        "sharded_parameter layers.0");
  CHECK(query_text(db, "SELECT category || ' ' || module FROM memory_view WHERE address = 8192 AND bytes = 2000") ==
        "optimizer_state layers.0");
  CHECK(query_text(db, "SELECT category FROM memory_view WHERE address = 12288 AND bytes = 500") == "gradient");
  CHECK(at("address = 4096") == 0);  // at the start, before the first recorded event
  CHECK(at("address = 12288 AND bytes = -500") == 5000);   // its ss:freed marker, 5 us later
  CHECK(at("address = 20480 AND bytes = -400") == 30000);  // no marker: freed at the reuse
  CHECK(at("address = 20480 AND bytes = 100") == 30000);
  CHECK(query_int(db, "SELECT count(*) FROM memory_events WHERE address IN (4096, 8192) AND bytes < 0") == 0);
  CHECK(query_int(db, "SELECT count(*) FROM memory_events WHERE address = 0") == 0);  // the totals start at zero
  CHECK(query_int(db, "SELECT sum(bytes) FROM memory_events") == 1000 + 2000 + 100);
  CHECK(query_int(db, "SELECT count(*) FROM skipped_events WHERE reason LIKE '%did not record%'") == 0);
}

// A CPU run's free lost on gloo's worker thread (lost_frees.h): step 1's all-gather buffer has no
// free and its address never comes back, and torch.profiler's total does not fall either (6010
// at the next allocation). Step 0's block of that site is freed half-way through the next
// unit's pre-forward: so is step 1's, in its own pre-forward (20 us long: at +10 us).
TEST_CASE("a free lost on gloo's worker thread is placed where the same block is freed in another step", "[kineto][memory]") {
  TempDir dir;
  const auto db = import_one(dir, fixture("lost_free_cpu.json"));
  CHECK(query_int(db, "SELECT count(*) FROM memory_events WHERE address = 200 AND bytes = -6000") == 1);
  CHECK(query_int(db, "SELECT m.time_ns - s.start_ns FROM memory_events m JOIN steps s ON s.number = 1 "
                      "WHERE m.address = 200 AND m.bytes = -6000") == 50000);
  CHECK(query_int(db, "SELECT sum(bytes) FROM memory_events") == 0);
  CHECK(query_int(db, "SELECT count FROM skipped_events WHERE reason LIKE '%lost on gloo%'") == 1);
  CHECK(query_int(db, "SELECT count(*) FROM skipped_events WHERE reason LIKE '%did not record%'") == 0);
  // Both steps' all-gather buffers live 33 us and 38 us, none past its step.
  CHECK(query_int(db, "SELECT sum(m.bytes) FROM memory_events m JOIN steps s ON s.number = 1 "
                      "WHERE m.time_ns < s.start_ns + s.duration_ns") == 0);
}

// The copy of its input gloo's reduce-scatter makes inside the collective call, held by the Work
// alone, lost in both steps (gloo's worker let go of it last; its address never comes back, and
// the trace's total does not fall): no step gives a point, and it was freed once the worker's run
// (gloo:all_reduce) had returned, not at its step's end (+100 us), and it is a reduce-scatter
// buffer (user_loop.py --nested: a gradient, in its parent unit's backward).
TEST_CASE("a lost free of a block made inside a collective call is placed at gloo's run's end", "[kineto][memory]") {
  TempDir dir;
  const auto db = import_one(dir, fixture("lost_clone_cpu.json"));
  CHECK(query_int(db, "SELECT m.time_ns - s.start_ns FROM memory_events m JOIN steps s ON s.number = 0 "
                      "WHERE m.address = 100 AND m.bytes = -6000") == 24000);
  CHECK(query_int(db, "SELECT m.time_ns - s.start_ns FROM memory_events m JOIN steps s ON s.number = 1 "
                      "WHERE m.address = 200 AND m.bytes = -6000") == 22000);
  CHECK(query_int(db, "SELECT sum(bytes) FROM memory_events") == 0);
  CHECK(query_int(db, "SELECT count(*) FROM memory_events m JOIN enums e ON e.type = 'memory_category' AND "
                      "e.value = m.category WHERE m.bytes = 6000 AND e.label = 'reduce_scatter_buffer'") == 2);
  CHECK(query_int(db, "SELECT count FROM skipped_events WHERE reason LIKE '%lost on gloo%run of it ended%'") == 2);
  CHECK(query_int(db, "SELECT count(*) FROM skipped_events WHERE reason LIKE '%lost on gloo%another step%'") == 0);
}

// Communication kernels that are not NCCL's (issue 14): DeepEP and a custom all-reduce by the
// built-in rules, a user's rule from a file; each becomes a collective kernel with a collective
// row, and the rules in effect are stored in the profile.
TEST_CASE("non-NCCL communication kernels are recognised by name rules", "[kineto][comm]") {
  TempDir dir;
  const auto db = import_one(dir, fixture("comm_kernels.json"));
  CHECK(query_int(db, "SELECT count(*) FROM kernel_view WHERE category='collective'") == 2);  // dpsk::ep, vllm
  CHECK(query_text(db, "SELECT type FROM collective_view c JOIN kernel_view k ON k.id = c.kernel_id"
                       " WHERE k.name LIKE '%dpsk::ep::%'") == "all_to_all");
  CHECK(query_text(db, "SELECT type FROM collective_view c JOIN kernel_view k ON k.id = c.kernel_id"
                       " WHERE k.name LIKE '%cross_device_reduce%'") == "all_reduce");
  CHECK(query_text(db, "SELECT category FROM kernel_view WHERE name = 'my_ep::combine_kernel'") == "compute");
  CHECK(query_text(db, "SELECT category FROM kernel_view WHERE name LIKE 'sm90%'") == "compute");
  CHECK(query_text(db, "SELECT value FROM meta WHERE key = 'comm_kernel_rules'").find("deepep dpsk::ep:: all_to_all") !=
        std::string::npos);

  // A user's rule names the third kernel.
  const std::string rules = dir.file("rules.txt");
  write_file(rules, "# family  contains  type\nmyep my_ep:: all_to_all\n");
  add_user_comm_kernel_rules_file(rules);
  TempDir dir2;
  const auto db2 = import_one(dir2, fixture("comm_kernels.json"));
  CHECK(query_text(db2, "SELECT category FROM kernel_view WHERE name = 'my_ep::combine_kernel'") == "collective");
  CHECK(query_int(db2, "SELECT count(*) FROM collective_view WHERE type = 'all_to_all'") == 2);
  CHECK(query_text(db2, "SELECT value FROM meta WHERE key = 'comm_kernel_rules'").find("myep my_ep:: all_to_all  # user") !=
        std::string::npos);
}

TEST_CASE("communication-kernel rule files: format and errors", "[comm]") {
  const auto r = parse_comm_kernel_rules("# comment\n\nfam sub all_gather\nother thing   # trailing comment\n");
  REQUIRE(r.size() == 2);
  CHECK(r[0].family == "fam");
  CHECK(r[0].contains == "sub");
  CHECK(r[0].type == CollectiveType::AllGather);
  CHECK(r[1].type == CollectiveType::Unknown);
  CHECK_THROWS_WITH(parse_comm_kernel_rules("fam\n"), Catch::Contains("line 1"));
  CHECK_THROWS_WITH(parse_comm_kernel_rules("ok fine\nfam sub sideways\n"), Catch::Contains("line 2: unknown collective type 'sideways'"));
  CHECK_THROWS_WITH(parse_comm_kernel_rules("fam sub all_reduce extra\n"), Catch::Contains("cannot contain spaces"));
  // The stored form reads back the same rules.
  const auto again = parse_comm_kernel_rules(format_comm_kernel_rules(r));
  REQUIRE(again.size() == 2);
  CHECK(again[0].contains == "sub");
  CHECK(again[0].type == CollectiveType::AllGather);
  CHECK_THROWS(add_user_comm_kernel_rules_file("/nonexistent/rules.txt"));
}

// A CPU (gloo) run on a 2D mesh (issue 15): gloo's events name no group, so the recorder notes the
// worker threads each group's creation started ("shardscope_pg_threads") and every collective gets
// its thread's group; c10d ops whose tensors are a TensorList give their bytes; send / recv run
// inline on the training thread, which stays the compute lane (the p2p get a lane of their own),
// and take their group from the recorder's "ss:pg:<name>" range around the issuing op.
TEST_CASE("CPU gloo trace: process group per worker thread, TensorList sizes, inline send", "[kineto][cpu]") {
  TempDir dir;
  const std::string p = dir.file("gloo_2d.json");
  write_file(p, R"({
  "shardscope_pg_threads": [{"pg_name": "1", "tids": [20, 21, 22]}, {"pg_name": "3", "tids": [30, 31]}, {"pg_name": "9", "tids": [5]}],
  "distributedInfo": {"backend": "gloo", "rank": 0, "world_size": 4, "pg_count": 3, "pg_config": [
    {"pg_name": "0", "pg_desc": "default_pg", "backend_config": "gloo", "pg_size": 4, "ranks": [0, 1, 2, 3]},
    {"pg_name": "1", "pg_desc": "mesh_dp", "backend_config": "gloo", "pg_size": 2, "ranks": [0, 2]},
    {"pg_name": "3", "pg_desc": "mesh_tp", "backend_config": "gloo", "pg_size": 2, "ranks": [0, 1]}]},
  "traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 5, "ts": 0, "dur": 5},
    {"ph": "X", "cat": "cpu_op", "name": "c10d::_allgather_base_", "pid": 1, "tid": 5, "ts": 10, "dur": 2,
     "args": {"Input type": ["float", "float", "", "Scalar", "Scalar"], "Input Dims": [[8], [4], [], [], []]}},
    {"ph": "X", "cat": "user_annotation", "name": "gloo:all_gather", "pid": 1, "tid": 20, "ts": 11, "dur": 4,
     "args": {"Input type": ["float"], "Input Dims": [[4]]}},
    {"ph": "X", "cat": "cpu_op", "name": "_c10d_functional::all_reduce", "pid": 1, "tid": 5, "ts": 20, "dur": 3},
    {"ph": "X", "cat": "cpu_op", "name": "c10d::allreduce_", "pid": 1, "tid": 5, "ts": 21, "dur": 1,
     "args": {"Input type": ["TensorList", "", "", "", "Scalar", "Scalar"], "Input Dims": [[[2, 3]], [], [], [], [], []]}},
    {"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce", "pid": 1, "tid": 30, "ts": 22, "dur": 4,
     "args": {"Input type": ["float"], "Input Dims": [[6]]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 5, "ts": 30, "dur": 5},
    {"ph": "X", "cat": "user_annotation", "name": "ss:pg:1", "pid": 1, "tid": 5, "ts": 39, "dur": 5},
    {"ph": "X", "cat": "cpu_op", "name": "c10d::send", "pid": 1, "tid": 5, "ts": 40, "dur": 3,
     "args": {"Input type": ["TensorList", "", "Scalar", "Scalar"], "Input Dims": [[[4], [2, 2]], [], [], []]}},
    {"ph": "X", "cat": "user_annotation", "name": "gloo:send", "pid": 1, "tid": 5, "ts": 41, "dur": 1,
     "args": {"Input type": ["float"], "Input Dims": [[4]]}}]})");
  const std::string out = import_one(dir, p);
  auto of = [&](const std::string& type, const std::string& what) {
    return query_text(out, "SELECT " + what + " FROM collective_view v LEFT JOIN process_groups g ON g.id = "
                           "(SELECT process_group_id FROM collectives WHERE id = v.id) WHERE v.type = '" + type + "'");
  };
  CHECK(query_int(out, "SELECT count(*) FROM collectives") == 3);
  CHECK(of("all_gather", "g.ranks") == "[0,2]");
  CHECK(of("all_gather", "v.bytes") == "32");  // the c10d op's output: 8 floats
  CHECK(of("all_gather", "v.group_size") == "2");
  CHECK(of("all_reduce", "g.ranks") == "[0,1]");
  CHECK(of("all_reduce", "v.bytes") == "24");  // the TensorList's 2 x 3 floats, float from gloo's event
  // The send ran on the training thread (which a group that distributedInfo does not list claims:
  // ignored); its group is the recorder's "ss:pg:1" range around the c10d op that issued it.
  CHECK(of("send", "g.ranks") == "[0,2]");
  CHECK(query_int(out, "SELECT count(*) FROM ranges r JOIN strings n ON n.id = r.name_id WHERE n.value LIKE 'ss:pg:%'") == 0);
  CHECK(of("send", "v.bytes") == "32");  // the TensorList's two tensors: 4 + 2 x 2 floats
  CHECK(query_int(out, "SELECT count(*) FROM process_groups") == 2);
  // Thread 5 is the compute lane (both aten::mm) and has a p2p lane beside it.
  CHECK(query_int(out, "SELECT count(*) FROM streams WHERE kind = 1") == 1);
  CHECK(query_int(out, "SELECT count(*) FROM kernels k JOIN streams s ON s.id = k.stream_id WHERE s.kind = 1 "
                       "AND k.category = 0") >= 2);
  CHECK(query_text(out, "SELECT s.name FROM kernels k JOIN streams s ON s.id = k.stream_id JOIN strings n ON n.id = k.name_id "
                        "WHERE n.value = 'gloo:send'") == "gloo p2p on thread 5");
}

TEST_CASE("a unit's parameter group on its own mesh: FSDP's '[pg=N]' ranges still name the unit", "[kineto]") {
  // fully_shard with parameters on two meshes (torchtitan's expert parallelism) appends the
  // group's mesh size to its ranges: "FSDP::all_gather (layers.0) [pg=2]". Before, such a range
  // named no module, so its all-gather had none and the replay counted none for the unit.
  TempDir dir;
  std::string json = read_file(fixture("fsdp_rank1.json"));
  const std::string from = "\"FSDP::all_gather (layers.0)\"";
  REQUIRE(json.find(from) != std::string::npos);
  json.replace(json.find(from), from.size(), "\"FSDP::all_gather (layers.0) [pg=2]\"");
  write_file(dir.file("pg.json"), json);
  const auto db = import_one(dir, dir.file("pg.json"));
  CHECK(query_text(db, "SELECT module FROM range_view WHERE name='FSDP::all_gather (layers.0) [pg=2]'") == "layers.0");
  CHECK(query_text(db, "SELECT module FROM kernel_view WHERE correlation=11") == "layers.0");
  CHECK(query_column(db, "SELECT fqn FROM modules ORDER BY fqn") == std::vector<std::string>{"", "layers", "layers.0"});
  CHECK(strip_fsdp_group_suffix("FSDP::all_gather (layers.0) [pg=16]") == "FSDP::all_gather (layers.0)");
  CHECK(strip_fsdp_group_suffix("FSDP::all_gather (layers.0) [pg=]") == "FSDP::all_gather (layers.0) [pg=]");
  CHECK(strip_fsdp_group_suffix("FSDP::all_gather (layers.0) [pg=x2]") == "FSDP::all_gather (layers.0) [pg=x2]");
  CHECK(strip_fsdp_group_suffix("[pg=2]") == "[pg=2]");  // no " [pg=" with its space: not the suffix
}

// A loop with two optimizers: the hooks number both optimizer ranges of an iteration with its step
// (shardscope/_step_cycle.py); the step ends with the second. The first range alone had ended it,
// and the second began the next step's time.
TEST_CASE("a step with two optimizer ranges ends with the second", "[kineto]") {
  TempDir dir;
  const auto db = import_one(dir, fixture("two_optimizers_cpu.json"));
  CHECK(query_int(db, "SELECT count(*) FROM steps") == 2);
  CHECK(query_int(db, "SELECT duration_ns FROM steps WHERE number = 0") == 58'000);  // 1000 to 1058 us
  CHECK(query_int(db, "SELECT start_ns - (SELECT start_ns + duration_ns FROM steps WHERE number = 0) FROM steps "
                      "WHERE number = 1") == 0);
  CHECK(query_int(db, "SELECT duration_ns FROM steps WHERE number = 1") == 70'000);  // 1058 to 1128 us
  CHECK(query_int(db, "SELECT count(*) FROM ranges WHERE phase = (SELECT value FROM enums WHERE type = 'range_phase' "
                      "AND label = 'optimizer') AND name_id = (SELECT id FROM strings WHERE value = 'optimizer.step')") == 4);
}
