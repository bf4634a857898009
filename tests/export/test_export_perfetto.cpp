#include <catch2/catch.hpp>

#include "profiler/export/export.h"
#include "profiler/synthetic/synthetic_profile.h"
#include "storage/errors.h"
#include "tests/export/perfetto_check.h"
#include "tests/import/import_test_util.h"

using namespace ss;
using namespace ss::test;

TEST_CASE("Perfetto export holds every kernel, range, collective and memory point", "[export]") {
  TempDir dir;
  const std::string prof = dir.file("synth.ssdb");
  SyntheticSpec spec;
  spec.ranks = 2;
  spec.layers = 3;
  spec.steps = 1;
  write_synthetic_profile(prof, spec);
  const std::string out = dir.file("trace.json");
  const auto stats = exporting::export_perfetto(prof, out);
  const PerfettoCounts c = count_perfetto(out);
  const std::int64_t kernels = query_int(prof, "SELECT count(*) FROM kernels");
  REQUIRE(kernels > 0);
  CHECK(c.kernel_events == kernels);
  CHECK(stats.kernel_events == kernels);
  CHECK(c.range_events == query_int(prof, "SELECT count(*) FROM ranges"));
  CHECK(c.counter_events == query_int(prof, "SELECT count(*) FROM memory_events"));
  CHECK(c.process_names == 2);
  CHECK(c.thread_names >= query_int(prof, "SELECT count(*) FROM streams"));
  // Collectives: the NCCL kernels carry type, bytes and sequence (and the group when known).
  CHECK(c.collective_args == query_int(prof, "SELECT count(*) FROM collectives WHERE kernel_id IS NOT NULL"));
  CHECK(c.with_group == query_int(prof, "SELECT count(*) FROM collectives WHERE kernel_id IS NOT NULL AND process_group_id IS NOT NULL"));
  CHECK(c.by_cat.at("module") == query_int(prof, "SELECT count(*) FROM ranges WHERE kind=1"));
  // Nothing but the output in the folder (no temporary left).
  CHECK(list_dir(dir.path()) == std::vector<std::string>{"synth.ssdb", "trace.json"});
}

TEST_CASE("Perfetto export to .json.gz is gzip-compressed", "[export]") {
  TempDir dir;
  const std::string prof = dir.file("synth.ssdb");
  SyntheticSpec spec;
  spec.layers = 2;
  spec.steps = 1;
  write_synthetic_profile(prof, spec);
  const std::string out = dir.file("trace.json.gz");
  exporting::export_perfetto(prof, out);
  const std::string head = read_file(out).substr(0, 2);
  CHECK(head == "\x1f\x8b");
  CHECK(count_perfetto(out, true).kernel_events == query_int(prof, "SELECT count(*) FROM kernels"));
}

TEST_CASE("export of a file that is not a profile fails without output", "[export]") {
  TempDir dir;
  const std::string bad = dir.file("bad.ssdb");
  write_file(bad, "not a database at all, just text");
  CHECK_THROWS_AS(exporting::export_perfetto(bad, dir.file("t.json")), ProfileError);
  CHECK_THROWS_AS(exporting::export_csv(bad, dir.file("csv")), ProfileError);
  CHECK(list_dir(dir.path()) == std::vector<std::string>{"bad.ssdb"});
}
