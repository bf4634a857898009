// The synthetic generator: its counts match what it reports, the file loads, and it says it is synthetic.
#include <catch2/catch.hpp>

#include "profiler/synthetic/synthetic_profile.h"

#include <algorithm>
#include <map>
#include "storage/profile_reader.h"
#include "storage/profile_summary.h"
#include "tests/support/test_paths.h"

using namespace ss;

TEST_CASE("synthetic profiles load and match their reported counts", "[storage][synthetic]") {
  test::TempDir dir;
  SyntheticSpec spec;
  spec.ranks = 3;
  spec.layers = 4;
  spec.steps = 2;
  spec.min_kernels = 5000;
  auto stats = write_synthetic_profile(dir.file("s.ssdb"), spec);
  CHECK(stats.kernels >= 5000);
  Profile p = load_profile(dir.file("s.ssdb"));
  CHECK(p.origin.kind == OriginKind::Synthetic);
  CHECK(p.kernel_count == stats.kernels);
  CHECK(p.range_count == stats.ranges);
  CHECK(static_cast<std::int64_t>(p.collectives.size()) == stats.collectives);
  CHECK(p.memory_event_count == stats.memory_events);
  REQUIRE(p.ranks.size() == 3);
  for (const auto& r : p.ranks) {
    CHECK(static_cast<std::int64_t>(r.steps.size()) == stats.steps);
    // Memory returns to zero at the end of each step: the generator frees what it allocates.
    REQUIRE_FALSE(r.memory.empty());
    CHECK(r.memory.back().value == 0);
    for (const auto& c : r.memory) CHECK(c.value >= 0);
  }
  // Layers are FSDP units with the expected module tree.
  const auto l2 = p.find_module("layers.2");
  REQUIRE(l2 >= 0);
  CHECK(p.modules[static_cast<std::size_t>(l2)].is_fsdp_unit);
  CHECK(p.modules[static_cast<std::size_t>(l2)].children.size() == 2);
  auto s = summarize_profile(dir.file("s.ssdb"));
  CHECK(s.gpu_activities == stats.kernels);
  CHECK(s.copies > 0);  // the synthetic steps copy inputs in: info counts them apart from kernels
  CHECK(s.kernels + s.copies + s.memsets == stats.kernels);
  CHECK(s.steps == stats.steps);
  CHECK(s.ranks.size() == 3);
  CHECK(s.origin.notes.find("not a measurement") != std::string::npos);
}

TEST_CASE("the same seed gives the same events", "[storage][synthetic]") {
  test::TempDir dir;
  SyntheticSpec spec;
  spec.layers = 2;
  spec.seed = 7;
  write_synthetic_profile(dir.file("a.ssdb"), spec);
  write_synthetic_profile(dir.file("b.ssdb"), spec);
  spec.seed = 8;
  write_synthetic_profile(dir.file("c.ssdb"), spec);
  auto durations = [](const Profile& p) {
    std::vector<TimeNs> d;
    for (const auto& t : p.stream_tracks)
      for (const auto& e : t.events) d.push_back(e.end - e.start);
    return d;
  };
  auto a = durations(load_profile(dir.file("a.ssdb")));
  CHECK(a == durations(load_profile(dir.file("b.ssdb"))));
  CHECK(a != durations(load_profile(dir.file("c.ssdb"))));
}

TEST_CASE("kernel_id_limit reads the kernel rows up to that id", "[storage][reader]") {
  test::TempDir dir;
  const auto path = dir.file("s.ssdb");
  SyntheticSpec spec;
  spec.ranks = 2;
  spec.layers = 4;
  write_synthetic_profile(path, spec);
  const Profile whole = load_profile(path);
  REQUIRE(whole.kernel_count > 100);
  LoadOptions o;
  o.kernel_id_limit = 100;
  o.ranges = false;
  o.memory = false;
  o.collectives = false;
  const Profile part = load_profile(path, o);
  CHECK(part.kernel_count == 100);
  CHECK(part.range_count == 0);
  CHECK(part.collectives.empty());
  CHECK(!whole.collectives.empty());
  std::uint32_t max_id = 0;
  std::size_t n = 0;
  for (const auto& t : part.stream_tracks)
    for (const auto& e : t.events) {
      max_id = std::max(max_id, e.id);
      ++n;
    }
  CHECK(n == 100);
  CHECK(max_id == 100);
  // Every kernel of the part is the whole profile's kernel of that id.
  std::map<std::uint32_t, std::pair<TimeNs, TimeNs>> by_id;
  for (const auto& t : whole.stream_tracks)
    for (const auto& e : t.events) by_id[e.id] = {e.start, e.end};
  for (const auto& t : part.stream_tracks)
    for (const auto& e : t.events) CHECK(by_id.at(e.id) == std::make_pair(e.start, e.end));
  // A limit beyond the table reads it all.
  o.kernel_id_limit = whole.kernel_count * 10;
  CHECK(load_profile(path, o).kernel_count == whole.kernel_count);
}
