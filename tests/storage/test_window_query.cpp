// Time-window queries by binary search equal a brute-force scan on random tracks.
#include <catch2/catch.hpp>

#include <random>

#include "storage/profile_model.h"

using namespace ss;

namespace {

std::vector<KernelEvent> random_track(std::mt19937_64& rng, int n, bool overlapping) {
  std::vector<KernelEvent> ev;
  TimeNs t = static_cast<TimeNs>(rng() % 1000);
  for (int i = 0; i < n; ++i) {
    const TimeNs dur = static_cast<TimeNs>(rng() % (rng() % 10 == 0 ? 50'000 : 500));  // a few long ones
    ev.push_back({t, t + dur, static_cast<std::uint32_t>(i), -1, static_cast<std::uint32_t>(i), KernelCategory::Compute, {}});
    t += overlapping ? static_cast<TimeNs>(rng() % 300) : dur + static_cast<TimeNs>(rng() % 300);
  }
  std::stable_sort(ev.begin(), ev.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
  return ev;
}

}  // namespace

TEST_CASE("for_each_in_window equals a brute-force scan", "[storage][window]") {
  std::mt19937_64 rng(GENERATE(1, 2, 3, 4, 5));
  const bool overlapping = GENERATE(false, true);
  const int n = 1 + static_cast<int>(rng() % 3000);
  auto ev = random_track(rng, n, overlapping);
  TimeNs max_dur = 0;
  for (const auto& e : ev) max_dur = std::max(max_dur, e.end - e.start);
  const TimeNs span = ev.back().end + 1000;
  for (int trial = 0; trial < 300; ++trial) {
    TimeNs t0 = static_cast<TimeNs>(rng() % static_cast<std::uint64_t>(span)) - 500;
    TimeNs t1 = t0 + static_cast<TimeNs>(rng() % (trial % 3 == 0 ? 100 : 20'000));
    std::vector<std::uint32_t> expected, got;
    for (const auto& e : ev)
      if (e.start <= t1 && e.end >= t0) expected.push_back(e.id);
    for_each_in_window(ev, max_dur, t0, t1, [&](const KernelEvent& e) { got.push_back(e.id); });
    REQUIRE(got == expected);

    auto [lo, hi] = start_range(ev, t0, t1);
    std::size_t blo = 0;
    while (blo < ev.size() && ev[blo].start < t0) ++blo;
    std::size_t bhi = blo;
    while (bhi < ev.size() && ev[bhi].start <= t1) ++bhi;
    REQUIRE(lo == blo);
    REQUIRE(hi == bhi);
  }
}

TEST_CASE("window queries on an empty track visit nothing", "[storage][window]") {
  std::vector<KernelEvent> none;
  int visited = 0;
  for_each_in_window(none, 0, 0, 100, [&](const KernelEvent&) { ++visited; });
  CHECK(visited == 0);
  CHECK(start_range(none, 0, 100) == std::pair<std::size_t, std::size_t>{0, 0});
}
