// Every table written by ProfileWriter reads back unchanged, through SQL and the in-memory model.
#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <filesystem>

#include "storage/profile_reader.h"
#include "storage/profile_summary.h"
#include "storage/profile_writer.h"
#include "storage/sqlite_handle.h"
#include "tests/support/test_paths.h"

using namespace ss;

namespace {

struct Written {
  RowId compute, nccl, thread, config, kernel, copy, group, collective, root, layer, attn, range_outer, range_inner,
      memory, step;
};

// `reattribute`: the copy's module is set afterwards (set_kernel_module), as importers do.
Written write_everything(const std::string& path, WriterOptions options = {}, bool reattribute = false) {
  Origin o;
  o.kind = OriginKind::Imported;
  o.tool = "roundtrip-test";
  o.tool_version = "9.9";
  o.source_format = "kineto-json";
  o.source_files = "a.json\nb.json";
  o.parameters_json = R"({"x": 1})";
  o.created_utc = "2026-01-02T03:04:05Z";
  o.notes = "notes here";
  ProfileWriter w(path, o, options);
  w.set_time_origin(1'700'000'000'123'456'789);
  w.add_rank({0, "node-a", 4242, 3, "NVIDIA H100 80GB HBM3", 85'520'809'984, 132, 9, 0, -1500, 2});
  w.add_rank({1, "node-b", 4243, 0, "NVIDIA H100 80GB HBM3", 85'520'809'984, 132, 9, 0, 2500, 2});
  Written r{};
  r.compute = w.add_stream({0, 3, 7, StreamKind::Compute, "compute"});
  r.nccl = w.add_stream({0, 3, 24, StreamKind::Nccl, "nccl"});
  r.thread = w.add_thread({0, 777, "python"});
  r.config = w.launch_config({132, 2, 1, 384, 1, 1, 232448, 168});
  CHECK(w.launch_config({132, 2, 1, 384, 1, 1, 232448, 168}) == r.config);  // interned
  r.root = w.add_module({kNoRow, "", "Transformer", 1000, 2000, true, kNoRow, "true"});
  r.layer = w.add_module({r.root, "layers.0", "Block", 600, 1200, true, kNoRow, "false"});
  r.attn = w.add_module({r.layer, "layers.0.attention", "Attention", 200, 400, false, r.layer, ""});
  const auto gemm = w.intern("gemm_kernel");
  CHECK(w.intern("gemm_kernel") == gemm);
  KernelRow k;
  k.rank = 0;
  k.stream = r.compute;
  k.start = 1000;
  k.end = 1500;
  k.name = gemm;
  k.correlation = 99;
  k.launch_config = r.config;
  k.category = KernelCategory::Compute;
  k.module = r.attn;
  r.kernel = w.add_kernel(k);
  KernelRow c = k;
  c.start = 1600;
  c.end = 1700;
  c.name = w.intern("Memcpy HtoD (Pageable -> Device)");
  c.category = KernelCategory::Memcpy;
  c.launch_config = kNoRow;
  c.module = kNoRow;
  c.bytes = 1 << 20;
  r.copy = w.add_kernel(c);
  KernelRow n = k;
  n.stream = r.nccl;
  n.start = 900;
  n.end = 2000;
  n.name = w.intern("ncclDevKernel_AllGather_RING_LL");
  n.category = KernelCategory::Collective;
  n.module = kNoRow;
  const RowId nk = w.add_kernel(n);
  r.group = w.add_process_group({"0", "default_pg", "[0,1]", 2, "nccl"});
  r.collective = w.add_collective({0, nk, CollectiveType::AllGather, 4096, w.intern("BFloat16"), r.group, 2, 7, 900, 2000});
  r.range_outer = w.add_range({0, r.thread, kNoRow, 800, 2100, w.intern("layers.0"), RangeKind::Module,
                               RangePhase::Forward, r.layer, kNoRow, 0});
  r.range_inner = w.add_range({0, r.thread, kNoRow, 950, 1550, w.intern("layers.0.attention"), RangeKind::Module,
                               RangePhase::Forward, r.attn, r.range_outer, 1});
  w.add_range({0, kNoRow, r.nccl, 900, 2000, w.intern("nccl:_all_gather_base"), RangeKind::GpuAnnotation,
               RangePhase::None, kNoRow, kNoRow, 0});
  r.memory = w.add_memory_event({0, 1000, 0x7f00, 4096, MemoryCategory::Activation, r.attn, r.compute});
  w.add_memory_event({0, 1200, 0x7f00, -4096, MemoryCategory::Activation, r.attn, r.compute});
  w.add_memory_event({0, 1100, 0x8f00, 100, MemoryCategory::Gradient, kNoRow, kNoRow});
  r.step = w.add_step({0, 5, 700, 2200});
  w.add_skipped(0, "unknown category 'foo'", 3);
  w.add_skipped(-1, "flow events", 10);
  w.set_meta("custom_key", "custom value");
  if (reattribute) w.set_kernel_module(r.copy, r.layer);
  const ProfileWriter::Counts n_rows = w.counts();
  w.finish();
  // What the writer counted is what `shardscope info` reads back.
  const ProfileSummary sum = summarize_profile(path, 0);
  CHECK(n_rows.ranks == static_cast<std::int64_t>(sum.ranks.size()));
  CHECK(n_rows.kernels == sum.kernels);
  CHECK(n_rows.copies == sum.copies);
  CHECK(n_rows.memsets == sum.memsets);
  CHECK(n_rows.collectives == sum.collectives);
  CHECK(n_rows.ranges == sum.ranges);
  CHECK(n_rows.modules == sum.modules);
  CHECK(n_rows.memory_events == sum.memory_events);
  CHECK(n_rows.steps == sum.steps);
  std::int64_t skipped = 0;
  for (const auto& k : sum.skipped) skipped += k.count;
  CHECK(n_rows.skipped_events == skipped);
  CHECK(n_rows.kernels == 2);
  CHECK(n_rows.skipped_events == 13);
  return r;
}

std::int64_t q(sql::Db& db, const std::string& query) {
  sql::Stmt s(db.get(), query);
  REQUIRE(s.step());
  return s.col_int(0);
}

std::string qs(sql::Db& db, const std::string& query) {
  sql::Stmt s(db.get(), query);
  REQUIRE(s.step());
  return s.col_text(0);
}

}  // namespace

TEST_CASE("every table round-trips through SQL", "[storage][roundtrip]") {
  test::TempDir dir;
  const auto path = dir.file("rt.ssdb");
  Written r = write_everything(path);
  sql::Db db = open_profile_readonly(path);

  CHECK(qs(db, "SELECT value FROM meta WHERE key = 'format'") == "shardscope-profile");
  CHECK(qs(db, "SELECT value FROM meta WHERE key = 'schema_version'") == "1");
  CHECK(qs(db, "SELECT value FROM meta WHERE key = 'time_origin_unix_ns'") == "1700000000123456789");
  CHECK(qs(db, "SELECT value FROM meta WHERE key = 'custom_key'") == "custom value");
  CHECK(q(db, "PRAGMA application_id") == 0x53534450);
  CHECK(q(db, "PRAGMA user_version") == 1);

  CHECK(qs(db, "SELECT tool || '|' || tool_version || '|' || source_format || '|' || source_files || '|' ||"
               " parameters_json || '|' || created_utc || '|' || notes FROM origin") ==
        "roundtrip-test|9.9|kineto-json|a.json\nb.json|{\"x\": 1}|2026-01-02T03:04:05Z|notes here");
  CHECK(q(db, "SELECT kind FROM origin") == static_cast<int>(OriginKind::Imported));

  CHECK(qs(db, "SELECT host || ',' || pid || ',' || device_index || ',' || gpu_name || ',' || gpu_memory_bytes || ','"
               " || sm_count || ',' || compute_major || ',' || compute_minor || ',' || clock_offset_ns || ',' || world_size"
               " FROM ranks WHERE rank = 0") == "node-a,4242,3,NVIDIA H100 80GB HBM3,85520809984,132,9,0,-1500,2");
  CHECK(q(db, "SELECT count(*) FROM ranks") == 2);
  CHECK(qs(db, "SELECT rank || ',' || device || ',' || native_id || ',' || kind || ',' || name FROM streams WHERE id = " +
               std::to_string(r.nccl)) == "0,3,24,2,nccl");
  CHECK(qs(db, "SELECT rank || ',' || tid || ',' || name FROM threads") == "0,777,python");
  CHECK(qs(db, "SELECT grid_x || ',' || grid_y || ',' || grid_z || ',' || block_x || ',' || block_y || ',' || block_z"
               " || ',' || shared_mem_bytes || ',' || registers_per_thread FROM launch_configs") ==
        "132,2,1,384,1,1,232448,168");
  CHECK(q(db, "SELECT count(*) FROM launch_configs") == 1);

  CHECK(qs(db, "SELECT rank || ',' || stream_id || ',' || start_ns || ',' || duration_ns || ',' || correlation || ','"
               " || launch_config_id || ',' || category || ',' || module_id || ',' || coalesce(bytes, 'null')"
               " FROM kernels WHERE id = " + std::to_string(r.kernel)) ==
        "0," + std::to_string(r.compute) + ",1000,500,99," + std::to_string(r.config) + ",0," + std::to_string(r.attn) +
            ",null");
  CHECK(q(db, "SELECT bytes FROM kernels WHERE id = " + std::to_string(r.copy)) == (1 << 20));
  CHECK(qs(db, "SELECT name FROM kernel_view WHERE id = " + std::to_string(r.kernel)) == "gemm_kernel");
  CHECK(qs(db, "SELECT module FROM kernel_view WHERE id = " + std::to_string(r.kernel)) == "layers.0.attention");
  CHECK(q(db, "SELECT end_ns FROM kernel_view WHERE id = " + std::to_string(r.kernel)) == 1500);

  CHECK(qs(db, "SELECT name || ',' || description || ',' || ranks || ',' || size || ',' || backend FROM process_groups") ==
        "0,default_pg,[0,1],2,nccl");
  CHECK(qs(db, "SELECT type || ',' || bytes || ',' || dtype || ',' || process_group || ',' || group_size || ',' ||"
               " sequence || ',' || start_ns || ',' || end_ns FROM collective_view") ==
        "all_gather,4096,BFloat16,0,2,7,900,2000");

  CHECK(qs(db, "SELECT coalesce(parent_id, 'null') || ',' || fqn || ',' || class_name || ',' || param_count || ',' ||"
               " param_bytes || ',' || is_fsdp_unit || ',' || coalesce(fsdp_unit_id, 'null') || ',' ||"
               " coalesce(reshard_policy, 'null') FROM modules WHERE id = " + std::to_string(r.attn)) ==
        std::to_string(r.layer) + ",layers.0.attention,Attention,200,400,0," + std::to_string(r.layer) + ",null");
  CHECK(qs(db, "SELECT reshard_policy FROM modules WHERE id = " + std::to_string(r.layer)) == "false");

  CHECK(qs(db, "SELECT rank || ',' || thread_id || ',' || coalesce(stream_id, 'null') || ',' || start_ns || ',' ||"
               " end_ns || ',' || name || ',' || kind || ',' || phase || ',' || module || ',' || parent_id || ',' || depth"
               " FROM range_view WHERE id = " + std::to_string(r.range_inner)) ==
        "0," + std::to_string(r.thread) + ",null,950,1550,layers.0.attention,module,forward,layers.0.attention," +
            std::to_string(r.range_outer) + ",1");
  CHECK(qs(db, "SELECT kind FROM range_view WHERE stream_id IS NOT NULL") == "gpu_annotation");

  CHECK(qs(db, "SELECT rank || ',' || time_ns || ',' || address || ',' || bytes || ',' || category || ',' || module ||"
               " ',' || stream_id FROM memory_view WHERE id = " + std::to_string(r.memory)) ==
        "0,1000,32512,4096,activation,layers.0.attention," + std::to_string(r.compute));
  CHECK(qs(db, "SELECT rank || ',' || number || ',' || start_ns || ',' || duration_ns FROM steps") == "0,5,700,1500");
  CHECK(q(db, "SELECT count FROM skipped_events WHERE reason = 'unknown category ''foo'''") == 3);
  CHECK(q(db, "SELECT count(*) FROM skipped_events WHERE rank IS NULL") == 1);
  // The label tables make every enum joinable by name.
  CHECK(q(db, "SELECT count(*) FROM enums WHERE type = 'memory_category'") == kMemoryCategoryCount);
}

TEST_CASE("every table round-trips into the in-memory model", "[storage][roundtrip]") {
  test::TempDir dir;
  const auto path = dir.file("rt.ssdb");
  Written r = write_everything(path);
  Profile p = load_profile(path);

  CHECK(p.origin.kind == OriginKind::Imported);
  CHECK(p.origin.tool == "roundtrip-test");
  CHECK(p.origin.source_files == "a.json\nb.json");
  CHECK(p.meta.at("custom_key") == "custom value");
  REQUIRE(p.ranks.size() == 2);
  CHECK(p.ranks[0].info.host == "node-a");
  CHECK(p.ranks[0].info.clock_offset_ns == -1500);
  CHECK(p.ranks[1].info.clock_offset_ns == 2500);
  CHECK(p.kernel_count == 3);
  REQUIRE(p.stream_tracks.size() == 2);
  const auto& compute = p.stream_tracks[0].stream_id == r.compute ? p.stream_tracks[0] : p.stream_tracks[1];
  REQUIRE(compute.events.size() == 2);
  CHECK(compute.kind == StreamKind::Compute);
  CHECK(compute.native_id == 7);
  CHECK(compute.events[0].start == 1000);
  CHECK(compute.events[0].end == 1500);
  CHECK(p.strings[compute.events[0].name] == "gemm_kernel");
  CHECK(p.modules[static_cast<std::size_t>(compute.events[0].module)].fqn == "layers.0.attention");
  CHECK(compute.events[1].category == KernelCategory::Memcpy);
  CHECK(compute.events[1].module == -1);
  CHECK(compute.max_duration == 500);
  REQUIRE(p.ranks[0].stream_tracks.size() == 2);
  CHECK(p.ranks[1].stream_tracks.empty());

  // Module tree with parent/child links.
  REQUIRE(p.modules.size() == 3);
  const auto root = p.find_module("");
  const auto layer = p.find_module("layers.0");
  const auto attn = p.find_module("layers.0.attention");
  REQUIRE(root >= 0);
  REQUIRE(layer >= 0);
  REQUIRE(attn >= 0);
  CHECK(p.modules[static_cast<std::size_t>(root)].parent == -1);
  CHECK(p.modules[static_cast<std::size_t>(layer)].parent == root);
  CHECK(p.modules[static_cast<std::size_t>(attn)].parent == layer);
  CHECK(p.modules[static_cast<std::size_t>(root)].children == std::vector<std::int32_t>{layer});
  CHECK(p.modules[static_cast<std::size_t>(attn)].fsdp_unit == layer);
  CHECK(p.modules[static_cast<std::size_t>(layer)].is_fsdp_unit);
  CHECK(p.modules[static_cast<std::size_t>(layer)].reshard_policy == "false");
  CHECK(p.modules[static_cast<std::size_t>(attn)].param_bytes == 400);

  // Range tracks: per rank x lane x depth.
  CHECK(p.range_count == 3);
  REQUIRE(p.range_tracks.size() == 3);
  int depth1 = 0;
  for (const auto& t : p.range_tracks) {
    REQUIRE(t.events.size() == 1);
    if (t.depth == 1) {
      ++depth1;
      CHECK(t.events[0].start == 950);
      CHECK(t.events[0].phase == RangePhase::Forward);
      CHECK(t.events[0].kind == RangeKind::Module);
      CHECK(t.events[0].module == attn);
    }
  }
  CHECK(depth1 == 1);

  REQUIRE(p.collectives.size() == 1);
  CHECK(p.collectives[0].type == CollectiveType::AllGather);
  CHECK(p.collectives[0].bytes == 4096);
  CHECK(p.collectives[0].sequence == 7);

  // Memory counter: cumulative and sorted by time (written out of order).
  REQUIRE(p.ranks[0].memory.size() == 3);
  CHECK(p.ranks[0].memory[0].time == 1000);
  CHECK(p.ranks[0].memory[0].value == 4096);
  CHECK(p.ranks[0].memory[1].time == 1100);
  CHECK(p.ranks[0].memory[1].value == 4196);
  CHECK(p.ranks[0].memory[2].value == 100);
  CHECK(p.memory_event_count == 3);

  REQUIRE(p.ranks[0].steps.size() == 1);
  CHECK(p.ranks[0].steps[0].number == 5);
  CHECK(p.ranks[0].steps[0].end == 2200);
  CHECK(p.time_begin == 800);
  CHECK(p.time_end == 2100);
}

TEST_CASE("a profile of memory alone spans its memory events", "[storage][reader]") {
  // An imported PyTorch memory snapshot has no kernels or ranges: its views still need a time span.
  test::TempDir dir;
  const auto path = dir.file("memory-only.ssdb");
  {
    ProfileWriter w(path, Origin{});
    RankInfo ri;
    w.add_rank(ri);
    w.add_memory_event({0, 3000, 0x10, 512, MemoryCategory::Unknown, kNoRow, kNoRow});
    w.add_memory_event({0, 9000, 0x10, -512, MemoryCategory::Unknown, kNoRow, kNoRow});
    w.add_memory_event({0, 5000, 0x20, 64, MemoryCategory::Unknown, kNoRow, kNoRow});
    w.finish();
  }
  Profile p = load_profile(path);
  CHECK(p.time_begin == 3000);
  CHECK(p.time_end == 9000);
}

TEST_CASE("the writer thread writes the same file as direct inserts", "[storage][writer]") {
  test::TempDir dir;
  WriterOptions threaded;
  threaded.background_writer = true;
  const Written a = write_everything(dir.file("direct.ssdb"), {}, true);
  const Written b = write_everything(dir.file("threaded.ssdb"), threaded, true);
  CHECK(a.kernel == b.kernel);
  CHECK(a.range_inner == b.range_inner);
  CHECK(a.step == b.step);
  // Same rows inserted in the same order: the same bytes (origin.created_utc is fixed above).
  CHECK(test::sha256_of_file(dir.file("direct.ssdb")) == test::sha256_of_file(dir.file("threaded.ssdb")));
  sql::Db db = open_profile_readonly(dir.file("threaded.ssdb"));
  CHECK(q(db, "SELECT module_id FROM kernels WHERE id = " + std::to_string(b.copy)) == b.layer);
}

// Long runs of ranges and of memory events go to SQLite in multi-row INSERTs on the writer
// thread; short runs, and every row without the thread, one by one. Both give the same file.
TEST_CASE("the writer thread's multi-row range inserts give the same file", "[storage][writer]") {
  test::TempDir dir;
  auto write = [&](const std::string& path, bool threaded) {
    Origin o;
    o.created_utc = "2026-01-02T03:04:05Z";
    WriterOptions opts;
    opts.background_writer = threaded;
    ProfileWriter w(path, o, opts);
    const RowId th = w.add_thread({0, 1, "main"});
    RowId parent = kNoRow;
    for (int i = 0; i < 10'000; ++i) {
      // Runs of 1..97 ranges between other rows, some with NULLs (no thread / module / parent).
      const auto name = w.intern("range " + std::to_string(i % 37));
      const bool odd = i % 3 == 0;
      parent = w.add_range({i % 2, odd ? kNoRow : th, odd ? 5 : kNoRow, i * 100, i * 100 + 50 + i % 7, name,
                            static_cast<RangeKind>(i % 3), RangePhase::Forward, odd ? kNoRow : i, parent, i % 5});
      if (i % 97 == 0 || i % 41 == 0) w.add_step({0, i, i * 100, i * 100 + 1});
      if (i % 500 == 0)  // runs of 1..97 memory events, some with NULLs (no module / stream)
        for (int m = 0; m < 1 + i % 97; ++m)
          w.add_memory_event({i % 2, i * 100 + m, 0x1000 + m, m % 2 ? -64 : 64 * (m + 1), static_cast<MemoryCategory>(m % 3),
                              m % 3 ? kNoRow : i, m % 4 ? kNoRow : 5});
    }
    w.finish();
  };
  write(dir.file("direct.ssdb"), false);
  write(dir.file("threaded.ssdb"), true);
  CHECK(test::sha256_of_file(dir.file("direct.ssdb")) == test::sha256_of_file(dir.file("threaded.ssdb")));
  sql::Db db = open_profile_readonly(dir.file("threaded.ssdb"));
  CHECK(q(db, "SELECT count(*) FROM ranges") == 10'000);
  CHECK(q(db, "SELECT count(*) FROM ranges WHERE thread_id IS NULL") == 3334);
  CHECK(q(db, "SELECT count(*) FROM memory_events") == 930);  // sum of 1 + i % 97 over i = 0, 500, ..., 9500
  CHECK(q(db, "SELECT max(id) FROM memory_events") == 930);
  CHECK(q(db, "SELECT count(*) FROM memory_events WHERE module_id IS NULL") > 0);
  CHECK(q(db, "SELECT sum(duration_ns) FROM ranges") == 10'000 * 50 + q(db, "SELECT sum((id - 1) % 7) FROM ranges"));
}

TEST_CASE("a writer thread's rows are written in batches, in order, past many hand-offs", "[storage][writer]") {
  test::TempDir dir;
  const auto path = dir.file("many.ssdb");
  WriterOptions o;
  o.background_writer = true;
  o.rows_per_transaction = 7'000;  // commits in the middle of batches too
  o.atomic_rename = false;         // the target itself, readable by others after commit()
  constexpr int kRows = 50'000;
  {
    ProfileWriter w(path, Origin{}, o);
    const RowId s = w.add_stream({0, 0, 7, StreamKind::Compute, "compute"});
    for (int i = 0; i < kRows; ++i) {
      KernelRow k;
      k.stream = s;
      k.start = i * 10;
      k.end = i * 10 + 5;
      k.name = w.intern("k" + std::to_string(i % 1000));
      CHECK(w.add_kernel(k) == i + 1);
    }
    w.commit();  // durable now: readable by another connection before finish()
    {
      sql::Db other(path, SQLITE_OPEN_READONLY);
      CHECK(q(other, "SELECT count(*) FROM kernels") == kRows);
    }
    w.finish();
  }
  sql::Db db = open_profile_readonly(path);
  CHECK(q(db, "SELECT count(*) FROM kernels") == kRows);
  CHECK(q(db, "SELECT count(*) FROM strings") == 1001);
  CHECK(q(db, "SELECT count(*) FROM kernels k JOIN strings s ON s.id = k.name_id"
              " WHERE s.value <> 'k' || ((k.id - 1) % 1000) OR k.start_ns <> (k.id - 1) * 10") == 0);
}

TEST_CASE("a write error on the writer thread reaches the caller and leaves no file", "[storage][writer]") {
  test::TempDir dir;
  const auto path = dir.file("full.ssdb");
  // A file size limit makes SQLite's writes fail (EFBIG) as on a full disk.
  struct rlimit old {};
  REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old;
  small.rlim_cur = 256 * 1024;
  REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
  std::string message;
  bool thrown = false;
  try {
    WriterOptions o;
    o.background_writer = true;
    o.rows_per_transaction = 5'000;
    ProfileWriter w(path, Origin{}, o);
    const RowId s = w.add_stream({0, 0, 7, StreamKind::Compute, "compute"});
    for (int i = 0; i < 200'000; ++i) {
      KernelRow k;
      k.stream = s;
      k.start = i;
      k.end = i + 1;
      k.name = w.intern("kernel name number " + std::to_string(i));
      w.add_kernel(k);
    }
    w.finish();
  } catch (const ProfileError& e) {
    thrown = true;
    message = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  CHECK(thrown);
  INFO(message);
  CHECK(!message.empty());
  CHECK_FALSE(std::filesystem::exists(path));
  int files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++files;
  CHECK(files == 0);
}

TEST_CASE("a writer that is not finished leaves no file behind", "[storage][writer]") {
  test::TempDir dir;
  const auto path = dir.file("abandoned.ssdb");
  const bool threaded = GENERATE(false, true);
  INFO("writer thread: " << threaded);
  {
    WriterOptions o;
    o.background_writer = threaded;
    ProfileWriter w(path, Origin{}, o);
    w.intern("x");
    for (int i = 0; i < 20'000; ++i) w.add_step({0, i, i, i + 1});  // several batches queued or written
  }
  CHECK(test::read_file(path).empty());
  // Nor any temporary file.
  sql::Db probe(dir.file("probe.db"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) files += e.path().filename() != "probe.db";
  CHECK(files == 0);
}

TEST_CASE("progress is reported and a load can be cancelled", "[storage][reader]") {
  test::TempDir dir;
  const auto path = dir.file("rt.ssdb");
  write_everything(path);
  double last = -1;
  int calls = 0;
  LoadOptions o;
  o.progress = [&](double f, const char*) {
    CHECK(f >= last);
    last = f;
    ++calls;
  };
  load_profile(path, o);
  CHECK(calls > 0);
  CHECK(last == 1.0);
  std::atomic<bool> cancel{true};
  LoadOptions c;
  c.cancel = &cancel;
  try {
    load_profile(path, c);
    FAIL("expected cancellation");
  } catch (const ProfileError& e) {
    CHECK(e.kind() == ProfileErrorKind::Cancelled);
  }
}
