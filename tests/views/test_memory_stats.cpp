// Per-module memory figures and the memory series, checked against SQL over the same file.
#include <catch2/catch.hpp>

#include "profiler/synthetic/synthetic_profile.h"
#include "storage/profile_reader.h"
#include "storage/sqlite_handle.h"
#include "tests/support/test_paths.h"
#include "views/memory/module_memory_stats.h"

using namespace ss;
using namespace ss::memview;

namespace {
std::int64_t sql_int(const std::string& path, const std::string& query) {
  sql::Db db(path, SQLITE_OPEN_READONLY);
  sql::Stmt s(db.get(), query);
  REQUIRE(s.step());
  return s.col_int_or(0, 0);
}
}  // namespace

TEST_CASE("module memory stats agree with SQL over memory_events and ranges", "[views][memory]") {
  test::TempDir dir;
  const std::string path = dir.file("p.ssdb");
  SyntheticSpec spec;
  spec.ranks = 2;
  spec.layers = 3;
  write_synthetic_profile(path, spec);
  const Profile p = load_profile(path);
  const ModuleMemoryStats s = compute_module_memory(p, 1);
  REQUIRE(s.modules.size() == p.modules.size());
  const std::int32_t root = p.find_module("");
  REQUIRE(root >= 0);
  const auto& r = s.modules[static_cast<std::size_t>(root)];
  const std::string root_id = std::to_string(p.modules[static_cast<std::size_t>(root)].id);

  // Everything attributed to any module rolls up into the root: the peak of the running sum.
  auto peak_live = [&](int category, const std::string& module_filter) {
    return sql_int(path, "SELECT max(total) FROM (SELECT sum(bytes) OVER (ORDER BY time_ns, id) AS total FROM memory_events "
                         "WHERE rank=1 AND category=" + std::to_string(category) + " AND " + module_filter + ")");
  };
  CHECK(r[kGradients] == peak_live(3, "module_id IS NOT NULL"));
  CHECK(r[kActivations] == peak_live(5, "module_id IS NOT NULL"));
  CHECK(r[kActivations] > 0);
  CHECK(r[kParamsUnsharded] == p.modules[static_cast<std::size_t>(root)].param_bytes);
  // The synthetic profile has no optimizer-state events: the column says "missing", not 0.
  REQUIRE(sql_int(path, "SELECT count(*) FROM memory_events WHERE category=4") == 0);
  CHECK(r[kOptimizerStates] == kMissing);
  // The synthetic root has no range of its own: its times are unknown ("—"), not zero.
  REQUIRE(sql_int(path, "SELECT count(*) FROM ranges WHERE module_id=" + root_id) == 0);
  CHECK(r[kForwardTime] == kMissing);
  CHECK(r[kPeakWhileRunning] == kMissing);
  const std::int32_t layer = p.find_module("layers.1");
  REQUIRE(layer >= 0);
  const auto& l = s.modules[static_cast<std::size_t>(layer)];
  const std::string layer_id = std::to_string(p.modules[static_cast<std::size_t>(layer)].id);
  CHECK(l[kForwardTime] ==
        sql_int(path, "SELECT sum(duration_ns) FROM ranges WHERE rank=1 AND kind=1 AND phase=1 AND module_id=" + layer_id));
  CHECK(l[kBackwardTime] ==
        sql_int(path, "SELECT sum(duration_ns) FROM ranges WHERE rank=1 AND kind=1 AND phase IN (2,3) AND module_id=" + layer_id));
  CHECK(l[kForwardTime] > 0);

  // A leaf: its own events only.
  const std::int32_t leaf = p.find_module("layers.1.attention");
  REQUIRE(leaf >= 0);
  const std::string leaf_id = std::to_string(p.modules[static_cast<std::size_t>(leaf)].id);
  CHECK(s.modules[static_cast<std::size_t>(leaf)][kActivations] == peak_live(5, "module_id=" + leaf_id));
  CHECK(s.modules[static_cast<std::size_t>(leaf)][kActivations] > 0);

  // The series' peak is the reader's memory counter maximum (an independent sum).
  std::int64_t counter_max = 0;
  for (const auto& c : p.rank(1)->memory) counter_max = std::max(counter_max, c.value);
  CHECK(s.series.peak_bytes == counter_max);
  CHECK(s.series.peak_module >= 0);
  // At the peak, the stacked categories add up to the peak somewhere in the samples.
  std::int64_t best = 0;
  for (std::size_t i = 0; i < s.series.times.size(); ++i) {
    std::int64_t sum = 0;
    for (const auto& cat : s.series.by_category) sum += cat[i];
    best = std::max(best, sum);
  }
  CHECK(best == counter_max);
  CHECK(s.series.times.size() <= 1500);
  // Peak while layers.1 runs: at least the highest running total at an event inside its ranges
  // (SQL window sum), at most the rank's peak.
  const std::int64_t inside = sql_int(path,
      "WITH t AS (SELECT time_ns, sum(bytes) OVER (ORDER BY time_ns, id) AS total FROM memory_events WHERE rank=1) "
      "SELECT max(total) FROM t JOIN ranges r ON r.rank=1 AND r.kind=1 AND r.module_id=" + layer_id +
      " AND t.time_ns BETWEEN r.start_ns AND r.start_ns + r.duration_ns");
  CHECK(inside > 0);
  CHECK(l[kPeakWhileRunning] >= inside);
  CHECK(l[kPeakWhileRunning] <= counter_max);
}
