// The frees torch.profiler loses on CPU runs (gloo's worker thread frees the block, outside the
// profiler's thread state): placed where the same block is freed, recorded, in another step.
#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "profiler/import/common/lost_frees.h"
#include "profiler/import/common/unrecorded_frees.h"

using ss::TimeNs;
using ss::import::AllocatorEvent;
using ss::import::ProgramPoints;
using ss::import::place_lost_frees;

namespace {

// Three steps of 100 ns; in each, an all-gather range (name 1) at +10..+20 and the next group's
// wait (name 2) at +40..+50, and a module range (name 3) around both at +5..+60.
ProgramPoints three_steps(std::vector<TimeNs> allocations = {}) {
  std::vector<ProgramPoints::Range> ranges;
  for (TimeNs s : {0, 100, 200}) {
    ranges.push_back({s + 5, s + 60, 3});
    ranges.push_back({s + 10, s + 20, 1});
    ranges.push_back({s + 40, s + 50, 2});
  }
  return ProgramPoints({{0, 100}, {100, 200}, {200, 300}}, ranges, std::move(allocations));
}

AllocatorEvent ev(TimeNs t, std::int64_t address, std::int64_t bytes, std::size_t source) {
  return {t, address, bytes, -1, false, source};
}

std::vector<TimeNs> allocation_times(const std::vector<AllocatorEvent>& events) {
  std::vector<TimeNs> times;
  for (const auto& e : events)
    if (e.bytes > 0) times.push_back(e.time);
  return times;
}

std::int64_t live_at(const std::vector<AllocatorEvent>& events, TimeNs t) {
  std::int64_t level = 0;
  for (const auto& e : events)
    if (e.time <= t) level += e.bytes;
  return level;
}

}  // namespace

TEST_CASE("program points: the innermost range, its occurrence in the step, and the same place elsewhere", "[kineto][memory]") {
  const ProgramPoints p = three_steps();
  const auto a = p.at(145);
  REQUIRE(a);
  CHECK(a->step == 1);
  CHECK(a->name == 2);
  CHECK(a->occurrence == 0);
  CHECK(a->fraction == Approx(0.5));
  auto there = *a;
  there.step = 2;
  CHECK(p.time_of(there) == 245);
  // Inside the module range but outside the two FSDP ranges: the module range is the place.
  const auto m = p.at(130);
  REQUIRE(m);
  CHECK(m->name == 3);
  // Between ranges: after the step's range that ended last (the module range, 20 ns before).
  const auto o = p.at(180);
  REQUIRE(o);
  CHECK(o->name == 3);
  CHECK(o->after_end == 20);
  there = *o;
  there.step = 0;
  CHECK(p.time_of(there) == 80);
  // Before any range of its step: the step itself, by fraction.
  const auto b = p.at(102);
  REQUIRE(b);
  CHECK(b->after_end == -1);
  there = *b;
  there.step = 2;
  CHECK(p.time_of(there) == 202);
  CHECK_FALSE(p.at(300));  // after the last step
  there.step = 3;
  CHECK_FALSE(p.time_of(there));
}

TEST_CASE("lost frees: a block never freed is freed where its site's block is in another step", "[kineto][memory]") {
  const std::vector<ProgramPoints> lanes{three_steps()};
  // The all-gather output of each step (100 B), made in the all-gather range and freed at the
  // wait; step 1's free was lost. A parameter made in step 0 and never freed (no site elsewhere).
  std::vector<AllocatorEvent> events{ev(8, 9, 50, 0),     ev(12, 1, 100, 1),  ev(45, 1, -100, 2),
                                     ev(112, 2, 100, 3),  ev(212, 3, 100, 4), ev(245, 3, -100, 5)};
  std::int64_t placed = -1;
  const auto out = place_lost_frees(events, lanes, {0, 0, 0, 0, 0, 0}, &placed);
  CHECK(placed == 1);
  REQUIRE(out.size() == 7);
  CHECK(out[4].time == 145);
  CHECK(out[4].address == 2);
  CHECK(out[4].bytes == -100);
  CHECK(out[4].synthetic);
  CHECK(live_at(out, 150) == 50);    // only the parameter, as in the other steps
  CHECK(live_at(out, 1000) == 50);   // the parameter stays
  // Made on a thread without program points (a gloo worker's lane): left as it is.
  CHECK(place_lost_frees(events, lanes, {0, 0, 0, -1, 0, 0}, &placed).size() == 6);
  CHECK(placed == 0);
}

TEST_CASE("lost frees: a reuse's free is moved back to the program's point, never later", "[kineto][memory]") {
  const std::vector<ProgramPoints> lanes{three_steps()};
  // Step 1's block (address 2) is freed, unrecorded, and its address reused at 230: the reuse
  // rule puts the free just before 230; the program point says 145.
  std::vector<AllocatorEvent> events{ev(12, 1, 100, 0), ev(45, 1, -100, 1), ev(112, 2, 100, 2),
                                     ev(230, 2, 64, 3), ev(240, 2, -64, 4)};
  events = ss::import::add_unrecorded_frees(events, 0);
  REQUIRE(events.size() == 6);
  REQUIRE(events[3].synthetic);
  CHECK(events[3].time == 230);
  std::int64_t placed = 0;
  const auto out = place_lost_frees(events, lanes, {0, 0, 0, 0, 0}, &placed);
  CHECK(placed == 1);
  REQUIRE(out.size() == 6);
  CHECK(out[2].time == 112);
  CHECK(out[3].time == 145);
  CHECK(out[3].address == 2);
  CHECK(out[3].bytes == -100);
  CHECK(live_at(out, 200) == 0);
}

TEST_CASE("lost frees: on the same side of the range's allocations as in the other step", "[kineto][memory]") {
  // Step 0: the all-gather output (100 B) is freed at the middle of the wait range, before the
  // next allocation there (64 B, at 47). Step 1 makes that allocation earlier in the range (at
  // 143) and its free was lost: the same fraction (145) would keep the 100 B alive at 143; the
  // order puts the free before it. Step 2's wait range holds two allocations, not one: laid out
  // differently, the fraction alone (245).
  const std::vector<AllocatorEvent> events{
      ev(12, 1, 100, 0),  ev(45, 1, -100, 1), ev(47, 9, 64, 2),   ev(49, 9, -64, 3),  ev(112, 2, 100, 4),
      ev(143, 10, 64, 5), ev(149, 10, -64, 6), ev(212, 3, 100, 7), ev(243, 11, 64, 8), ev(244, 12, 64, 9),
      ev(249, 11, -64, 10), ev(249, 12, -64, 11)};
  const std::vector<ProgramPoints> lanes{three_steps(allocation_times(events))};
  const auto freed = lanes[0].at(45);
  REQUIRE(freed);
  CHECK(freed->allocations_before == 0);
  CHECK(freed->allocations_inside == 1);
  std::int64_t placed = 0;
  const auto out = place_lost_frees(events, lanes, std::vector<int>(events.size(), 0), &placed);
  CHECK(placed == 2);
  REQUIRE(out.size() == 14);
  std::map<std::int64_t, TimeNs> freed_at;
  for (const auto& e : out)
    if (e.synthetic) freed_at[e.address] = e.time;
  CHECK(freed_at[2] == 142);
  CHECK(freed_at[3] == 245);
  CHECK(live_at(out, 143) == 64);  // as at step 0's 47
  CHECK(live_at(out, 47) == 64);
  // Without the allocations (not known), the fraction: the 100 B still alive at 143.
  const auto by_fraction = place_lost_frees(events, {three_steps()}, std::vector<int>(events.size(), 0), &placed);
  CHECK(live_at(by_fraction, 143) == 164);
}

TEST_CASE("lost frees: what the steps do not show the same way is left alone", "[kineto][memory]") {
  const std::vector<ProgramPoints> lanes{three_steps()};
  std::int64_t placed = -1;
  // Gradients made in the all-gather range of a step and freed in the next step (at its wait):
  // no block of that site is freed within its own step, so the last one, never freed (the trace
  // ended), keeps its life.
  std::vector<AllocatorEvent> grads{ev(12, 1, 100, 0), ev(112, 2, 100, 1), ev(145, 1, -100, 2),
                                    ev(212, 3, 100, 3), ev(245, 2, -100, 4)};
  CHECK(place_lost_frees(grads, lanes, {0, 0, 0, 0, 0}, &placed).size() == 5);
  CHECK(placed == 0);
  // A different size, or a different occurrence of the range, is a different site.
  std::vector<AllocatorEvent> other{ev(12, 1, 100, 0), ev(45, 1, -100, 1), ev(112, 2, 101, 2)};
  CHECK(place_lost_frees(other, lanes, {0, 0, 0}, &placed).size() == 3);
  CHECK(placed == 0);
}

TEST_CASE("lost frees: where the step is laid out differently, the step's end", "[kineto][memory]") {
  const std::vector<ProgramPoints> lanes{three_steps()};
  std::int64_t placed = 0;
  // The point would come before the block was made (made late in the wait range, freed early in
  // it elsewhere), but blocks of its size made in that range never outlive their step: freed by
  // the step's end at the latest.
  std::vector<AllocatorEvent> late{ev(41, 1, 100, 0), ev(42, 1, -100, 1), ev(148, 2, 100, 2)};
  const auto out = place_lost_frees(late, lanes, {0, 0, 0}, &placed);
  CHECK(placed == 1);
  REQUIRE(out.size() == 4);
  CHECK(out[3].time == 199);
  CHECK(out[3].address == 2);
  // The same block in a range whose blocks of that size live on into the next step: left alone.
  std::vector<AllocatorEvent> kept{ev(41, 1, 100, 0), ev(42, 1, -100, 1), ev(43, 3, 100, 2), ev(145, 3, -100, 3),
                                   ev(148, 2, 100, 4)};
  CHECK(place_lost_frees(kept, lanes, {0, 0, 0, 0, 0}, &placed).size() == 5);
  CHECK(placed == 0);
}

TEST_CASE("lost frees: a block made inside a collective call is freed no earlier than gloo's run of it", "[kineto][memory]") {
  const std::vector<ProgramPoints> lanes{three_steps()};
  using ss::import::GlooRun;
  const std::vector<int> lane_of(4, 0);
  std::int64_t placed = -1, at_run_end = -1;
  // In each step the thread issues a collective at +41..+43 that clones its input (100 B at +42),
  // and no step's clone has a recorded free: no point to take. The runs ended at +45; step 2's
  // run was issued by another thread (lane 1). Without the runs none is placed (no block of the
  // kind is freed in its step), with them each at its own run's end.
  const std::vector<AllocatorEvent> all_lost{ev(42, 1, 100, 0), ev(142, 2, 100, 1), ev(242, 3, 100, 2)};
  const std::vector<GlooRun> runs{{0, 41, 43, 45}, {0, 141, 143, 145}, {1, 241, 243, 245}};
  auto out = place_lost_frees(all_lost, lanes, lane_of, &placed);
  CHECK(placed == 0);
  out = place_lost_frees(all_lost, lanes, lane_of, &placed, {}, runs, &at_run_end);
  CHECK(placed == 2);
  CHECK(at_run_end == 2);
  CHECK(live_at(out, 44) == 100);
  CHECK(live_at(out, 45) == 0);
  CHECK(live_at(out, 145) == 0);
  CHECK(live_at(out, 1000) == 100);  // step 2's: another thread's run says nothing of it
  // Step 0's clone freed, recorded, at +44 (the training thread let go of the Work last there):
  // step 1's lost one goes at that point, or at its run's end where that comes later.
  const std::vector<AllocatorEvent> one_freed{ev(42, 1, 100, 0), ev(44, 1, -100, 1), ev(142, 2, 100, 2)};
  out = place_lost_frees(one_freed, lanes, lane_of, &placed, {}, {{0, 141, 143, 143}}, &at_run_end);
  CHECK(at_run_end == 0);
  CHECK(live_at(out, 143) == 100);
  CHECK(live_at(out, 144) == 0);
  out = place_lost_frees(one_freed, lanes, lane_of, &placed, {}, {{0, 141, 143, 146}}, &at_run_end);
  CHECK(at_run_end == 1);
  CHECK(live_at(out, 145) == 100);
  CHECK(live_at(out, 146) == 0);
  // A run that ended before the block was made (a mismatched pairing) is no bound.
  out = place_lost_frees(all_lost, lanes, lane_of, &placed, {}, {{0, 141, 143, 141}});
  CHECK(placed == 0);
}

TEST_CASE("lost frees: a block the hooks name as the job's tensor keeps its life", "[kineto][memory]") {
  const std::vector<ProgramPoints> lanes{three_steps()};
  // An optimizer state made in step 0 after the module range (at 70, 100 B) and never freed; in
  // steps 1 and 2 blocks of its size are made at the same place and freed in their step (a foreach
  // optimizer's intermediates). Without facts its free goes where theirs are (step 0's 75).
  std::vector<AllocatorEvent> events{ev(70, 5, 100, 0), ev(170, 6, 100, 1), ev(175, 6, -100, 2),
                                     ev(270, 6, 100, 3), ev(275, 6, -100, 4)};
  const std::vector<int> lane_of(events.size(), 0);
  std::int64_t placed = -1;
  auto out = place_lost_frees(events, lanes, lane_of, &placed);
  CHECK(placed == 1);
  CHECK(live_at(out, 1000) == 0);
  // The hooks' fact ("optimizer state at address 5", at 72, before the step's end): alive.
  out = place_lost_frees(events, lanes, lane_of, &placed, {{5, 72}});
  CHECK(placed == 0);
  CHECK(live_at(out, 1000) == 100);
  // A fact before the block was made, or about another address, names another tensor.
  place_lost_frees(events, lanes, lane_of, &placed, {{5, 60}, {6, 95}});
  CHECK(placed == 1);
}

// Random allocations over random nested ranges: whatever it places, every recorded event stays,
// each placed free ends a block that had none (or moves a reuse's free earlier), after the block was
// made and inside its step, and the result is in time order.
TEST_CASE("lost frees: invariants on random traces", "[kineto][memory]") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<std::pair<TimeNs, TimeNs>> steps;
    std::vector<ProgramPoints::Range> ranges;
    const int n_steps = 1 + static_cast<int>(rng() % 4);
    for (int s = 0; s < n_steps; ++s) {
      const TimeNs base = s * 1000;
      steps.emplace_back(base, base + 1000);
      for (int k = 0; k < 6; ++k) {  // the same layout in every step, jittered
        const TimeNs start = base + 100 * k + static_cast<TimeNs>(rng() % 20);
        ranges.push_back({start, start + 50 + static_cast<TimeNs>(rng() % 40), static_cast<std::uint32_t>(k % 3)});
        ranges.push_back({start + 10, start + 30, 7});
      }
    }
    std::vector<AllocatorEvent> events;
    std::int64_t next_address = 1;
    std::vector<std::pair<std::int64_t, std::int64_t>> live;  // (address, bytes)
    for (TimeNs t = 0; t < n_steps * 1000; t += 1 + static_cast<TimeNs>(rng() % 40)) {
      if (!live.empty() && rng() % 2) {
        const std::size_t k = rng() % live.size();
        if (rng() % 4)  // else the free is lost
          events.push_back(ev(t, live[k].first, -live[k].second, events.size()));
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
      } else {
        const std::int64_t bytes = 100 * (1 + static_cast<std::int64_t>(rng() % 3));
        live.emplace_back(next_address, bytes);
        events.push_back(ev(t, next_address++, bytes, events.size()));
      }
    }
    // Half the trials know the thread's allocations (each free kept between the same two).
    const std::vector<ProgramPoints> lanes{
        ProgramPoints(steps, ranges, trial % 2 ? allocation_times(events) : std::vector<TimeNs>{})};
    const std::vector<int> lane_of_source(events.size(), 0);
    std::int64_t placed = 0;
    const auto out = place_lost_frees(events, lanes, lane_of_source, &placed);
    REQUIRE(out.size() >= events.size());
    CHECK(static_cast<std::int64_t>(out.size() - events.size()) <= placed);
    std::map<std::int64_t, TimeNs> made;
    std::map<std::int64_t, int> frees;
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (i) REQUIRE(out[i - 1].time <= out[i].time);
      const AllocatorEvent& e = out[i];
      if (e.bytes > 0) {
        made[e.address] = e.time;
        continue;
      }
      REQUIRE(made.count(e.address));
      CHECK(++frees[e.address] == 1);
      CHECK(e.time > made[e.address]);
      if (e.synthetic) {
        const TimeNs step_start = made[e.address] / 1000 * 1000;
        CHECK(e.time < step_start + 1000);
      }
    }
    std::size_t recorded = 0;
    for (const auto& e : out) recorded += e.synthetic ? 0 : 1;
    CHECK(recorded == events.size());
  }
}
