// A recorded run with gradient accumulation (several forward-backward passes per optimizer step)
// replays as such: its micro-batches per step, whether the passes before the last reduce-scatter
// (FSDP2's set_requires_gradient_sync(False) on them, or not), each pass's compute, and the
// collectives the job issued. Before, the passes of a step were read as one: a 2-pass step
// replayed 13 all-gathers and 5 reduce-scatters where the job made 18 and 10 (docs/simulator.md).
// Hand-made CPU-style profiles, counted exactly.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "profiler/sim/fsdp_plan.h"
#include "profiler/sim/profile_extract.h"
#include "profiler/sim/sim_inputs.h"
#include "profiler/sim/step_simulator.h"
#include "storage/profile_reader.h"
#include "storage/profile_writer.h"
#include "tests/support/cpu_rank.h"
#include "tests/support/test_paths.h"

using namespace ss;
using namespace ss::sim;

namespace {

constexpr TimeNs us = 1000;

struct Accumulation {
  int passes = 2;            // micro-batches per step
  bool sync_every = true;    // every pass reduce-scatters (false: the last only)
  bool unit_called_twice = false;  // blocks.0 runs twice in each forward (a shared block)
  bool held = false;  // parameters kept unsharded between passes: the later forwards gather nothing
};

// Rank 0 of two on a CPU: a root unit holding blocks.0..2 (1000 parameters each), three steps
// (the first is the warm-up the replay skips). Each pass: the root's forward range spanning the
// blocks' forward ranges (400 us each, gathered at their start), then the blocks' backward ranges
// in reverse (800 us each, gathered at their start, reduce-scattered at their end where the pass
// syncs) inside the root's backward range. The optimizer follows the last pass.
void write_profile(const std::string& path, const Accumulation& a) {
  ProfileWriter w(path, Origin{});
  const auto [thread, stream, compute] = ss::test::add_cpu_rank(w, 2);
  const RowId root = w.add_module({kNoRow, "", "Model", 3000, 12000, true, kNoRow, "false"});
  std::vector<RowId> blocks;
  for (int i = 0; i < 3; ++i)
    blocks.push_back(w.add_module({root, "blocks." + std::to_string(i), "Block", 1000, 4000, true, kNoRow, "true"}));
  const std::uint32_t gloo = w.intern("gloo"), name = w.intern("m");
  const std::uint32_t op = w.intern("aten::mm");
  auto range = [&](RowId m, TimeNs s, TimeNs e, RangePhase ph) {  // a block's range is busy computing
    w.add_range({0, thread, kNoRow, s, e, name, RangeKind::Module, ph, m, kNoRow, 0});
    if (m != root) w.add_kernel({0, compute, s, e, op, 0, kNoRow, KernelCategory::Compute, m, 0});
  };
  auto coll = [&](RowId m, TimeNs at, CollectiveType type) {
    const RowId k = w.add_kernel({0, stream, at, at + 10 * us, gloo, 0, kNoRow, KernelCategory::Collective, m, 0});
    w.add_collective({0, k, type, 8000, 0, kNoRow, 2, -1, at, at + 10 * us});
  };
  constexpr TimeNs pass_us = 5000;
  const TimeNs step_us = a.passes * pass_us + 1000;
  for (int step = 0; step < 3; ++step) {
    const TimeNs t0 = step * step_us * us;
    w.add_step({0, step, t0, t0 + step_us * us});
    for (int p = 0; p < a.passes; ++p) {
      const TimeNs p0 = t0 + (100 + p * pass_us) * us;
      range(root, p0, p0 + 1800 * us, RangePhase::Forward);
      TimeNs f = p0 + 50 * us;
      for (int i = 0; i < 3; ++i) {
        for (int call = 0; call < (i == 0 && a.unit_called_twice ? 2 : 1); ++call, f += 450 * us) {
          range(blocks[static_cast<std::size_t>(i)], f, f + 400 * us, RangePhase::Forward);
          if (call == 0 && (p == 0 || !a.held)) coll(blocks[static_cast<std::size_t>(i)], f + 5 * us, CollectiveType::AllGather);
        }
      }
      const bool syncs = a.sync_every || p == a.passes - 1;
      range(root, p0 + 2000 * us, p0 + 4700 * us, RangePhase::Backward);
      for (int i = 0; i < 3; ++i) {
        const TimeNs b = p0 + (2050 + i * 850) * us;
        const RowId m = blocks[static_cast<std::size_t>(2 - i)];
        range(m, b, b + 800 * us, RangePhase::Backward);
        coll(m, b + 5 * us, CollectiveType::AllGather);
        if (syncs) coll(m, b + 700 * us, CollectiveType::ReduceScatter);
      }
    }
    const TimeNs o = t0 + (100 + a.passes * pass_us) * us;
    w.add_range({0, thread, kNoRow, o, o + 500 * us, w.intern("ss:opt:" + std::to_string(step)), RangeKind::Annotation,
                 RangePhase::Optimizer, kNoRow, kNoRow, 0});
  }
  w.finish();
}

SimResult replay(const SimInputs& in) { return simulate(compile_step(in.model, in.plan, in.cluster)); }

}  // namespace

TEST_CASE("a step of several forward-backward passes replays them, with the job's collectives", "[sim][replay]") {
  ss::test::TempDir dir;
  for (int passes : {1, 2, 3}) {
    for (bool sync_every : {true, false}) {
      if (passes == 1 && !sync_every) continue;
      CAPTURE(passes, sync_every);
      Accumulation a;
      a.passes = passes;
      a.sync_every = sync_every;
      const std::string path = dir.file("p" + std::to_string(passes) + (sync_every ? "s" : "n") + ".ssdb");
      write_profile(path, a);
      const ProfileInput pi = extract_profile(load_profile(path));
      CHECK(pi.micro_batches == passes);
      CHECK(pi.sync_every_microbatch == (sync_every || passes == 1));
      CHECK(pi.step_windows.size() == 2);
      CHECK(pi.pass_windows.size() == static_cast<std::size_t>(2 * passes));
      // Each block's segment holds one pass's forward and backward, not the step's.
      for (const auto& seg : pi.model.segments)
        if (!pi.model.units[static_cast<std::size_t>(seg.unit)].is_root) CHECK((seg.fwd_ns == 400 * us && seg.bwd_ns == 800 * us));

      SimInputRequest req;
      req.profile_path = path;
      const SimInputs in = load_sim_inputs(req);
      CHECK(in.plan.gradient_accumulation == passes);
      CHECK(in.recorded_plan.gradient_accumulation == passes);
      CHECK(in.plan.sync_every_microbatch == (sync_every || passes == 1));
      const SimResult r = replay(in);
      // What the job issued per step: each block gathered in each pass's forward and backward,
      // reduce-scattered in every pass or the last.
      CHECK(r.all_gathers == 6 * passes);
      CHECK(r.reduce_scatters == 3 * (sync_every ? passes : 1));
    }
  }
}

TEST_CASE("a unit called twice in one forward is not a second micro-batch", "[sim][replay]") {
  ss::test::TempDir dir;
  Accumulation a;
  a.passes = 1;
  a.unit_called_twice = true;
  write_profile(dir.file("twice.ssdb"), a);
  CHECK(extract_profile(load_profile(dir.file("twice.ssdb"))).micro_batches == 1);
  a.passes = 2;
  write_profile(dir.file("twice2.ssdb"), a);
  CHECK(extract_profile(load_profile(dir.file("twice2.ssdb"))).micro_batches == 2);
}

TEST_CASE("a plan's gradient_accumulation overrides the recorded micro-batches; the replay keeps them", "[sim][replay]") {
  ss::test::TempDir dir;
  Accumulation a;
  a.passes = 2;
  a.sync_every = false;
  write_profile(dir.file("p.ssdb"), a);
  {
    std::ofstream(dir.file("plan.json")) << R"({"gradient_accumulation": 4})";
  }
  SimInputRequest req;
  req.profile_path = dir.file("p.ssdb");
  req.plan_path = dir.file("plan.json");
  const SimInputs in = load_sim_inputs(req);
  CHECK(in.plan.gradient_accumulation == 4);
  CHECK_FALSE(in.plan.sync_every_microbatch);  // the plan does not say: as recorded
  CHECK(in.recorded_plan.gradient_accumulation == 2);
  CHECK(replay(in).all_gathers == 24);
  CHECK(simulate(compile_step(in.model, in.recorded_plan, in.cluster)).all_gathers == 12);
}

TEST_CASE("parameters kept unsharded between passes (set_reshard_after_backward(False)) replay so", "[sim][replay]") {
  // FSDP2's recipe for accumulation without re-gathering: all but the last pass keep the
  // parameters after their backward, so the next forward gathers nothing. Replayed with a forward
  // gather a pass, a user's loop came out 18 all-gathers for the job's 13 (+5.19 %).
  ss::test::TempDir dir;
  for (int passes : {2, 3}) {
    CAPTURE(passes);
    Accumulation a;
    a.passes = passes;
    a.sync_every = false;
    a.held = true;
    const std::string path = dir.file("held" + std::to_string(passes) + ".ssdb");
    write_profile(path, a);
    const ProfileInput pi = extract_profile(load_profile(path));
    CHECK(pi.micro_batches == passes);
    CHECK_FALSE(pi.reshard_after_backward);
    SimInputRequest req;
    req.profile_path = path;
    const SimInputs in = load_sim_inputs(req);
    CHECK_FALSE(in.plan.reshard_after_backward);
    CHECK_FALSE(in.recorded_plan.reshard_after_backward);
    const SimResult held = replay(in);
    CHECK(held.all_gathers == 3 + 3 * passes);  // the first forward's, and every backward's
    CHECK(held.reduce_scatters == 3);
    // A plan may undo it: every forward gathers again, and the parameters are not held between.
    FsdpPlan resharded = in.plan;
    resharded.reshard_after_backward = true;
    const SimResult again = simulate(compile_step(in.model, resharded, in.cluster));
    CHECK(again.all_gathers == 6 * passes);
    CHECK(again.peak_bytes <= held.peak_bytes);
  }
  // Passes that all gather (the default) are not taken for held ones.
  Accumulation plain;
  write_profile(dir.file("plain.ssdb"), plain);
  CHECK(extract_profile(load_profile(dir.file("plain.ssdb"))).reshard_after_backward);
}

TEST_CASE("a plan's reshard_after_backward round-trips and is written only when false", "[sim][json]") {
  FsdpPlan p;
  CHECK(plan_to_json(p).find("reshard_after_backward") == std::string::npos);
  p.reshard_after_backward = false;
  const FsdpPlan back = parse_plan_json(plan_to_json(p), "p.json");
  CHECK_FALSE(back.reshard_after_backward);
  CHECK_THROWS_WITH(parse_plan_json(R"({"reshard_after_backward": 1})", "p.json"), Catch::Contains("reshard_after_backward"));
}
