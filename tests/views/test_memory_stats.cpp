// Per-module memory figures and the memory series, checked against SQL over the same file.
#include <catch2/catch.hpp>

#include "profiler/synthetic/synthetic_profile.h"
#include "storage/profile_reader.h"
#include "storage/sqlite_handle.h"
#include "tests/support/test_paths.h"
#include "views/memory/memory_axis.h"
#include "views/memory/module_memory_stats.h"

#include <cmath>

using namespace ss;
using namespace ss::memview;

namespace {
std::int64_t sql_int(const std::string& path, const std::string& query) {
  sql::Db db(path, SQLITE_OPEN_READONLY);
  sql::Stmt s(db.get(), query);
  REQUIRE(s.step());
  return s.col_int_or(0, 0);
}

// The rank's memory events with each free charged to the module of the latest allocation at its
// address (what read_memory_events does), written independently in SQL: "WITH charged AS (...)".
std::string charged_events(int rank) {
  return "WITH owner AS (SELECT id, time_ns, bytes, module_id, CASE WHEN bytes < 0 AND address != 0 THEN "
         "max(CASE WHEN bytes > 0 THEN id END) OVER (PARTITION BY address ORDER BY time_ns, id ROWS UNBOUNDED PRECEDING) END AS alloc "
         "FROM memory_events WHERE rank = " + std::to_string(rank) + "), "
         "charged AS (SELECT o.id, o.time_ns, o.bytes, CASE WHEN o.alloc IS NULL THEN o.module_id ELSE a.module_id END AS module_id "
         "FROM owner o LEFT JOIN memory_events a ON a.id = o.alloc) ";
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

TEST_CASE("memory chart helpers: byte unit from the range, round ticks, category names", "[views][memory]") {
  CHECK(std::string(byte_unit_for(0).name) == "B");
  CHECK(std::string(byte_unit_for(1023).name) == "B");
  CHECK(std::string(byte_unit_for(1024).name) == "KiB");
  CHECK(std::string(byte_unit_for(100LL << 20).name) == "MiB");
  CHECK(byte_unit_for(100LL << 20).bytes == 1024.0 * 1024);
  CHECK(std::string(byte_unit_for(3LL << 30).name) == "GiB");
  // Steps are 1, 2 or 5 × 10^k, the first tick a multiple of the step, at most ~target ticks.
  for (auto [lo, hi] : {std::pair{0.0, 2626.9}, std::pair{0.0, 0.11}, std::pair{1913.2, 1925.7}, std::pair{0.0, 97.3}}) {
    const Ticks t = nice_ticks(lo, hi, 6);
    const double mantissa = t.step / std::pow(10.0, std::floor(std::log10(t.step) + 1e-12));
    CHECK((std::abs(mantissa - 1) < 1e-9 || std::abs(mantissa - 2) < 1e-9 || std::abs(mantissa - 5) < 1e-9));
    CHECK(std::abs(t.first / t.step - std::round(t.first / t.step)) < 1e-6);
    CHECK(t.first >= lo - 1e-9);
    CHECK(t.first < lo + t.step);
    CHECK((hi - lo) / t.step <= 6.0 + 1e-9);
    CHECK((hi - lo) / t.step > 1.0);
  }
  CHECK(nice_ticks(0, 2626.9, 6).step == 500);
  CHECK(nice_ticks(0, 0.11, 6).step == Approx(0.02));
  CHECK(nice_ticks(0, 0.11, 6).decimals == 2);
  CHECK(nice_ceiling(97.3) == 100);
  CHECK(nice_ceiling(107.1) == 120);  // step 20, not 150 with a step of 50
  CHECK(nice_ceiling(0.093) == Approx(0.1));
  CHECK(std::string(category_label(MemoryCategory::ShardedParameter)) == "Sharded parameters");
  CHECK(std::string(category_label(MemoryCategory::OptimizerState)) == "Optimizer state");
  CHECK(std::string(category_label(MemoryCategory::Activation)) == "Activations");
  CHECK(std::string(category_label(MemoryCategory::Unknown)) == "Other");
}

TEST_CASE("memory readout at a time and a module's attributed series agree with SQL", "[views][memory]") {
  const std::string path = test::source_dir() + "/resources/samples/cpu-fsdp2-llama-2rank.ssdb";
  const Profile p = load_profile(path);
  const ModuleMemoryStats s = compute_module_memory(p, 0);
  REQUIRE(s.series.times.size() > 100);
  // At a sample time the readout is the sum of every event up to that time, per category.
  for (std::size_t i : {std::size_t{10}, s.series.times.size() / 2, s.series.times.size() - 1}) {
    const TimeNs t = s.series.times[i];
    const MemoryReadout r = readout_at(s.series, t);
    REQUIRE(r.valid);
    CHECK(r.time == t);
    CHECK(r.total == sql_int(path, "SELECT sum(bytes) FROM memory_events WHERE rank=0 AND time_ns <= " + std::to_string(t)));
    for (int cat : {3, 5})
      CHECK(r.by_category[static_cast<std::size_t>(cat)] ==
            sql_int(path, "SELECT sum(bytes) FROM memory_events WHERE rank=0 AND category=" + std::to_string(cat) + " AND time_ns <= " + std::to_string(t)));
    // Between two samples: the earlier one.
    if (i + 1 < s.series.times.size() && s.series.times[i + 1] > t + 1) CHECK(readout_at(s.series, t + 1).time == t);
  }
  CHECK_FALSE(readout_at(s.series, s.series.times.front() - 1).valid);

  // A leaf module: its attributed bytes peak where SQL's running sum over its events does, and it
  // runs where its module ranges are.
  const std::int32_t leaf = p.find_module("layers.1.attention.wq");
  REQUIRE(leaf >= 0);
  REQUIRE(p.modules[static_cast<std::size_t>(leaf)].children.empty());
  const std::string id = std::to_string(p.modules[static_cast<std::size_t>(leaf)].id);
  const ModuleSeries m = compute_module_series(p, 0, leaf);
  CHECK(m.module == leaf);
  const std::int64_t sql_peak = sql_int(path, charged_events(0) + "SELECT max(total) FROM (SELECT sum(bytes) OVER (ORDER BY time_ns, id) AS total FROM charged "
                                              "WHERE module_id=" + id + ")");
  CHECK(sql_peak > 0);
  CHECK(m.peak_bytes == sql_peak);
  CHECK(*std::max_element(m.bytes.begin(), m.bytes.end()) == sql_peak);
  CHECK(static_cast<std::int64_t>(m.running.size()) == sql_int(path, "SELECT count(*) FROM ranges WHERE rank=0 AND kind=1 AND module_id=" + id));
  CHECK(m.running.front().first == sql_int(path, "SELECT min(start_ns) FROM ranges WHERE rank=0 AND kind=1 AND module_id=" + id));
  // A parent's share includes its children's events (layers.1.attention and its wq/wk/wv/wo).
  const std::int32_t parent = p.modules[static_cast<std::size_t>(leaf)].parent;
  std::string ids = std::to_string(p.modules[static_cast<std::size_t>(parent)].id);
  for (std::int32_t c : p.modules[static_cast<std::size_t>(parent)].children) ids += "," + std::to_string(p.modules[static_cast<std::size_t>(c)].id);
  const ModuleSeries ps = compute_module_series(p, 0, parent);
  CHECK(ps.peak_bytes == sql_int(path, charged_events(0) + "SELECT max(total) FROM (SELECT sum(bytes) OVER (ORDER BY time_ns, id) AS total FROM charged "
                                       "WHERE module_id IN (" + ids + "))"));
  CHECK(ps.peak_bytes > m.peak_bytes);
  CHECK(compute_module_series(p, 0, -1).times.empty());
}

TEST_CASE("a zoomed window re-sampled from the events agrees with SQL at every sample", "[views][memory]") {
  const std::string path = test::source_dir() + "/resources/samples/cpu-fsdp2-llama-2rank.ssdb";
  const Profile p = load_profile(path);
  const ModuleMemoryStats s = compute_module_memory(p, 1);
  REQUIRE(s.events);
  CHECK(static_cast<std::int64_t>(s.events->size()) == sql_int(path, "SELECT count(*) FROM memory_events WHERE rank=1"));
  // 20 ms in the middle of the profile: far finer than the whole-profile sampling (~1.75 ms a sample).
  const TimeNs t0 = p.time_begin + 1'900'000'000, t1 = t0 + 20'000'000;
  const MemorySeries w = sample_window(*s.events, t0, t1, 1500);
  const std::string sum_to = "SELECT sum(bytes) FROM memory_events WHERE rank=1 AND time_ns <= ";
  REQUIRE(w.times.size() > 10);
  CHECK(w.times.front() == t0);
  CHECK(w.times.back() == t1);
  CHECK(w.present == s.series.present);
  CHECK(w.times.size() <= 1500 + 2);
  // With 1 ns buckets every distinct event time in the window is a sample.
  CHECK(static_cast<std::int64_t>(sample_window(*s.events, t0, t1, 20'000'000).times.size()) ==
        2 + sql_int(path, "SELECT count(DISTINCT time_ns) FROM memory_events WHERE rank=1 AND time_ns > " + std::to_string(t0) +
                              " AND time_ns < " + std::to_string(t1)));
  for (std::size_t i = 0; i < w.times.size(); i += std::max<std::size_t>(1, w.times.size() / 12)) {
    std::int64_t total = 0;
    for (const auto& c : w.by_category) total += c[i];
    CHECK(total == sql_int(path, sum_to + std::to_string(w.times[i])));
    CHECK(readout_at(w, w.times[i]).total == total);
  }
  // The window's peak is SQL's highest running total inside it.
  const std::int64_t sql_peak = sql_int(path,
      "SELECT max(total) FROM (SELECT time_ns, sum(bytes) OVER (ORDER BY time_ns, id) AS total FROM memory_events WHERE rank=1) "
      "WHERE time_ns <= " + std::to_string(t1));
  CHECK(w.peak_bytes <= sql_peak);
  const std::int64_t in_window = sql_int(path,
      "SELECT max(total) FROM (SELECT time_ns, sum(bytes) OVER (ORDER BY time_ns ROWS UNBOUNDED PRECEDING) AS total FROM "
      "(SELECT time_ns, sum(bytes) AS bytes FROM memory_events WHERE rank=1 GROUP BY time_ns)) WHERE time_ns BETWEEN " +
          std::to_string(t0) + " AND " + std::to_string(t1));
  CHECK(w.peak_bytes == std::max(in_window, sql_int(path, sum_to + std::to_string(t0))));
}

TEST_CASE("a module never holds more than the rank's total: each free is charged to its allocation's module", "[views][memory]") {
  // The bundled real CPU recording frees some 14 MiB outside any module range (after backward,
  // at the optimizer step); charged to no module, (root) would reach 61 MiB where the rank holds 43.
  const Profile p = load_profile(test::source_dir() + "/resources/samples/cpu-fsdp2-llama-2rank.ssdb");
  for (const auto& rank : p.ranks) {
    const int r = rank.info.rank;
    const ModuleMemoryStats stats = compute_module_memory(p, r);
    REQUIRE(stats.events);
    const auto& events = *stats.events;
    REQUIRE(events.size() > 1000);
    std::int64_t outside_frees = sql_int(p.path, "SELECT count(*) FROM memory_events WHERE rank = " + std::to_string(r) +
                                                     " AND bytes < 0 AND module_id IS NULL");
    CHECK(outside_frees > 0);  // the case this is about is in the sample
    for (std::size_t m = 0; m < p.modules.size(); ++m) {
      const ModuleNode& node = p.modules[m];
      if (!(node.fqn.empty() || node.is_fsdp_unit)) continue;
      INFO("rank " << r << " module '" << node.fqn << "'");
      std::vector<char> inside(p.modules.size(), 0);
      for (std::size_t q = 0; q < p.modules.size(); ++q)
        for (std::int32_t a = static_cast<std::int32_t>(q); a >= 0; a = p.modules[static_cast<std::size_t>(a)].parent)
          inside[q] |= a == static_cast<std::int32_t>(m);
      std::int64_t total = 0, mine = 0, worst = std::numeric_limits<std::int64_t>::min();
      for (std::size_t i = 0; i < events.size(); ++i) {
        total += events[i].bytes;
        if (events[i].module >= 0 && inside[static_cast<std::size_t>(events[i].module)]) mine += events[i].bytes;
        if (i + 1 < events.size() && events[i + 1].time == events[i].time) continue;  // the state after a timestamp
        worst = std::max(worst, mine - total);
        CHECK(mine >= 0);
      }
      CHECK(worst <= 0);
      const ModuleSeries series = compute_module_series(p, r, static_cast<std::int32_t>(m), &events);
      CHECK(series.peak_bytes <= stats.series.peak_bytes);
      // Read from the file or handed the kept events: the same series.
      CHECK(compute_module_series(p, r, static_cast<std::int32_t>(m)).bytes == series.bytes);
    }
  }
}

TEST_CASE("a module's running bands: clipped to the window, merged below a pixel, bounded by pixels not steps", "[views][memory]") {
  std::vector<std::pair<TimeNs, TimeNs>> running;
  for (TimeNs step = 0; step < 3000; ++step) {  // forward and backward of one module in each of 3000 steps
    running.emplace_back(step * 1000 + 100, step * 1000 + 200);
    running.emplace_back(step * 1000 + 600, step * 1000 + 800);
  }
  // Whole profile on 1000 pixels (3000 ns a pixel): every gap is under a pixel, one band.
  auto whole = visible_runs(running, 0, 3'000'000, 3000.0);
  REQUIRE(whole.size() == 1);
  CHECK(whole.front() == std::make_pair(TimeNs{100}, TimeNs{2'999'800}));
  // 2 steps at full detail: each range its own band, those crossing the edges clipped.
  auto two = visible_runs(running, 1150, 3150, 1.0);
  REQUIRE(two.size() == 5);
  CHECK(two.front() == std::make_pair(TimeNs{1150}, TimeNs{1200}));
  CHECK(two[1] == std::make_pair(TimeNs{1600}, TimeNs{1800}));
  CHECK(two.back() == std::make_pair(TimeNs{3100}, TimeNs{3150}));
  // Any window: at most one band per min_gap of time, plus one.
  for (TimeNs w : {TimeNs{5'000}, TimeNs{50'000}, TimeNs{500'000}}) {
    const double gap = static_cast<double>(w) / 800;
    CHECK(static_cast<double>(visible_runs(running, 1'000'000, 1'000'000 + w, gap).size()) <= w / gap + 1);
  }
  // A long range that starts well before the window still shows.
  running.emplace_back(2'999'000, 3'500'000);
  std::sort(running.begin(), running.end());
  auto late = visible_runs(running, 3'200'000, 3'300'000, 1.0);
  REQUIRE(late.size() == 1);
  CHECK(late.front() == std::make_pair(TimeNs{3'200'000}, TimeNs{3'300'000}));
  CHECK(visible_runs(running, 10, 5, 1.0).empty());
}
