// How a lane's ranges become tracks (storage/range_lanes.h): operators apart from modules, each
// packed; the staircase of backward module ranges on two tracks; never two overlapping ranges on
// one track; and the real CPU sample, whose module ranges spread over twenty mixed depths.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <random>

#include "storage/profile_reader.h"
#include "storage/range_lanes.h"
#include "tests/support/test_paths.h"

using namespace ss;

namespace {

RangeEvent ev(TimeNs start, TimeNs end, RangeKind kind, std::uint32_t id) {
  return RangeEvent{start, end, 0, -1, id, kind, RangePhase::None, {}};
}

// Every track: sorted by start, no two ranges overlapping.
void check_tracks(const std::vector<RangeTrack>& tracks) {
  for (const auto& t : tracks) {
    INFO("rank " << t.rank << " thread " << t.thread_id << " operators " << t.operators << " depth " << t.depth);
    for (std::size_t i = 1; i < t.events.size(); ++i) {
      CHECK(t.events[i - 1].start <= t.events[i].start);
      CHECK(t.events[i - 1].end <= t.events[i].start);
    }
    for (const auto& e : t.events) CHECK(is_operator_range(e.kind) == t.operators);
  }
}

}  // namespace

TEST_CASE("range lanes: operators apart from modules, each class packed", "[storage][lanes]") {
  // One thread: an autograd operator encloses a module's backward, which encloses two operators;
  // mixed nesting puts the module at depth 1 and its operators at 2.
  std::vector<RangeTrack> tracks(3);
  for (int d = 0; d < 3; ++d) tracks[static_cast<std::size_t>(d)].thread_id = 7, tracks[static_cast<std::size_t>(d)].depth = d;
  tracks[0].events = {ev(0, 100, RangeKind::CpuOp, 1)};
  tracks[1].events = {ev(10, 90, RangeKind::Module, 2)};
  tracks[2].events = {ev(20, 30, RangeKind::CpuOp, 3), ev(40, 50, RangeKind::Nccl, 4)};
  lay_out_range_lanes(tracks);
  check_tracks(tracks);
  REQUIRE(tracks.size() == 3);
  CHECK_FALSE(tracks[0].operators);  // structure first
  CHECK(tracks[0].depth == 0);
  CHECK(tracks[0].events.size() == 1);
  CHECK(tracks[0].events[0].id == 2);
  CHECK(tracks[1].operators);
  CHECK(tracks[1].depth == 0);
  CHECK(tracks[1].events.size() == 1);  // the autograd operator
  CHECK(tracks[2].operators);
  CHECK(tracks[2].depth == 1);
  CHECK(tracks[2].events.size() == 2);
}

TEST_CASE("range lanes: a staircase of backward ranges that overlap without nesting takes two tracks", "[storage][lanes]") {
  // (root)'s backward encloses 40 layers' backward ranges, each ending after the next has begun.
  std::vector<RangeEvent> events{ev(0, 10'000, RangeKind::Module, 0)};
  for (std::uint32_t i = 0; i < 40; ++i)
    events.push_back(ev(100 + i * 200, 100 + i * 200 + 300, RangeKind::Module, i + 1));
  std::vector<RangeTrack> tracks(1);
  tracks[0].events = events;
  lay_out_range_lanes(tracks);
  check_tracks(tracks);
  CHECK(tracks.size() == 3);  // the root, then the layers alternating between two tracks
  CHECK(tracks[0].events.size() == 1);
  CHECK(tracks[1].events.size() + tracks[2].events.size() == 40);
}

TEST_CASE("range lanes: random ranges keep the enclosing range above and never overlap on a track", "[storage][lanes]") {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 50; ++round) {
    std::vector<RangeTrack> tracks(1);
    std::uniform_int_distribution<TimeNs> start(0, 10'000), len(1, 3'000);
    std::uniform_int_distribution<int> kind(0, 4);
    for (std::uint32_t i = 0; i < 300; ++i) {
      const TimeNs s = start(rng);
      tracks[0].events.push_back(ev(s, s + len(rng), static_cast<RangeKind>(kind(rng)), i));
    }
    const auto before = tracks[0].events;
    lay_out_range_lanes(tracks);
    check_tracks(tracks);
    std::size_t n = 0;
    std::map<std::uint32_t, std::pair<bool, int>> where;  // id -> (operators, depth)
    for (const auto& t : tracks) {
      n += t.events.size();
      for (const auto& e : t.events) where[e.id] = {t.operators, t.depth};
    }
    CHECK(n == before.size());
    // A range that strictly encloses another of its class is on a track above it.
    for (const auto& a : before)
      for (const auto& b : before)
        if (a.id != b.id && is_operator_range(a.kind) == is_operator_range(b.kind) && a.start < b.start && b.end < a.end)
          CHECK(where[a.id].second < where[b.id].second);
  }
}

TEST_CASE("range lanes on the real CPU sample: modules on a few tracks, operators apart", "[storage][lanes]") {
  const Profile p = load_profile(test::source_dir() + "/resources/samples/cpu-fsdp2-llama-2rank.ssdb");
  check_tracks(p.range_tracks);
  std::map<std::pair<int, RowId>, int> module_tracks;
  std::size_t ranges = 0;
  for (const auto& t : p.range_tracks) {
    ranges += t.events.size();
    if (std::any_of(t.events.begin(), t.events.end(), [](const RangeEvent& e) { return e.kind == RangeKind::Module; }))
      ++module_tracks[{t.rank, t.thread_id}];
  }
  CHECK(static_cast<std::int64_t>(ranges) == p.range_count);
  REQUIRE(module_tracks.size() == 2);  // the training thread of each rank
  // Mixed with the operators the module ranges spread over 22 depths. Apart: the forward's 4 levels
  // ((root), a layer, attention / feed-forward, a linear) and the backward's overlapping siblings
  // (wq, wk and wv share their input, so their backward ranges close together): 9 tracks.
  for (const auto& [lane, n] : module_tracks) CHECK(n <= 9);
}
