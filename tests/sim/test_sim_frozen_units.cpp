// Frozen units of the trained model itself (SimUnit::frozen_in_trained_model): a fine-tune that
// freezes the model's bottom (the root's input layer and blocks.0) has no backward through them,
// yet FSDP2's backward prefetch gathers blocks.0 from blocks.1's pre-backward, and the root's
// post-backward callback reshards it, and reduces the root's trained head there, inside the last
// module range still open. A hand-made CPU profile with FSDP2's ranges, as the user loop's job
// (tests/python/user_loop.py --freeze inp,layers.0: 9 all-gathers and 4 reduce-scatters a step,
// replayed 8 and 3 before).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "profiler/sim/profile_extract.h"
#include "profiler/sim/sim_inputs.h"
#include "profiler/sim/sim_report.h"
#include "profiler/sim/step_simulator.h"
#include "storage/profile_writer.h"
#include "tests/support/cpu_rank.h"
#include "tests/support/test_paths.h"

using namespace ss;
using namespace ss::sim;

namespace {

constexpr TimeNs us = 1000;
constexpr TimeNs kStepUs = 10'000;

// Rank 0 of two: the root (100 parameters: a frozen input layer of 60, a trained head of 40, kept
// unsharded) over blocks.0 (frozen) and blocks.1 (1000 parameters each), 4 steps.
void write_profile(const std::string& path) {
  ProfileWriter w(path, Origin{});
  ss::test::CpuTraceWriter t(w, 2);
  const RowId root = w.add_module({kNoRow, "", "Model", 2100, 8400, true, kNoRow, "false"});
  const RowId b0 = w.add_module({root, "blocks.0", "Block", 1000, 4000, true, kNoRow, "true"});
  const RowId b1 = w.add_module({root, "blocks.1", "Block", 1000, 4000, true, kNoRow, "true"});
  const RowId b1_norm = w.add_module({b1, "blocks.1.norm", "LayerNorm", 0, 0, false, kNoRow, ""});
  auto range = [&](RowId m, TimeNs s, TimeNs e, RangePhase ph, int depth = 0) { t.module_range(m, s, e, ph, m != root, depth); };
  auto coll = [&](RowId m, TimeNs at, CollectiveType type, std::int64_t bytes) { t.collective(m, at, type, bytes); };
  // An FSDP range, named for its unit or (the root's) not, with the module the importer gives it.
  auto fsdp = [&](const std::string& what, RowId module, TimeNs at, RangePhase ph) { t.fsdp_range(what, module, at, ph); };
  for (int step = 0; step < 4; ++step) {
    const TimeNs t0 = step * kStepUs * us;
    w.add_step({0, step, t0, t0 + kStepUs * us});
    range(root, t0 + 100 * us, t0 + 1000 * us, RangePhase::Forward);
    coll(root, t0 + 105 * us, CollectiveType::AllGather, 400);
    for (int i = 0; i < 2; ++i) {
      const RowId b = i == 0 ? b0 : b1;
      const TimeNs f = t0 + (150 + 420 * i) * us;
      range(b, f, f + 400 * us, RangePhase::Forward);
      fsdp("all_gather (blocks." + std::to_string(i) + ")", b, f + 5 * us, RangePhase::Forward);
      coll(b, f + 7 * us, CollectiveType::AllGather, 4000);
    }
    // Backward: blocks.1 only; its pre-backward gathers it and prefetches blocks.0, which no
    // backward uses. Its range stays open to the callback, which reduces it and the root's head.
    const TimeNs b = t0 + 1200 * us;
    range(root, b, b + 2000 * us, RangePhase::Backward);
    range(b1, b + 50 * us, b + 1900 * us, RangePhase::Backward, 1);
    range(b1_norm, b + 1500 * us, b + 1800 * us, RangePhase::Backward, 2);
    fsdp("all_gather (blocks.1)", b1, b + 55 * us, RangePhase::Backward);
    coll(b1, b + 57 * us, CollectiveType::AllGather, 4000);
    fsdp("all_gather (blocks.0)", b0, b + 100 * us, RangePhase::Backward);
    coll(b1, b + 102 * us, CollectiveType::AllGather, 4000);
    fsdp("post_backward_reduce", b1_norm, b + 1600 * us, RangePhase::Backward);
    coll(b1_norm, b + 1602 * us, CollectiveType::ReduceScatter, 160);
    fsdp("post_backward_reduce (blocks.1)", b1, b + 1700 * us, RangePhase::Backward);
    coll(b1, b + 1702 * us, CollectiveType::ReduceScatter, 4000);
    w.add_range({0, t.lanes.thread, kNoRow, t0 + 9000 * us, t0 + 9500 * us, w.intern("ss:opt:" + std::to_string(step)),
                 RangeKind::Annotation, RangePhase::Optimizer, kNoRow, kNoRow, 0});
  }
  w.finish();
}

struct Replayed {
  SimInputs in;
  SimResult result;
  CompiledStep step;
};

Replayed replay(const std::string& path, const std::vector<std::string>& keep = {}) {
  SimInputRequest req;
  req.profile_path = path;
  Replayed r{load_sim_inputs(req), {}, {}};
  FsdpPlan plan = r.in.recorded_plan;
  plan.unsharded = keep;
  r.step = compile_step(r.in.model, plan, r.in.cluster);
  r.result = simulate(r.step);
  return r;
}

const SimUnit& unit(const SimInputs& in, const char* name) { return in.model.units[static_cast<std::size_t>(in.model.find_unit(name))]; }

}  // namespace

TEST_CASE("a frozen unit of the trained model is prefetched in backward and resharded after it", "[sim][replay]") {
  ss::test::TempDir dir;
  write_profile(dir.file("frozen.ssdb"));
  const Replayed r = replay(dir.file("frozen.ssdb"));
  CHECK(unit(r.in, "blocks.0").frozen);
  CHECK(unit(r.in, "blocks.0").frozen_in_trained_model);
  CHECK_FALSE(unit(r.in, "blocks.1").frozen);
  // The root's head is reduced (160 B: 40 parameters), counted for the root, not for blocks.1
  // whose norm's range was open around it (the root had come out training nothing).
  CHECK(unit(r.in, "").trainable_params == 40);
  CHECK(unit(r.in, "blocks.1").trainable_params == -1);
  // The root once, each block in forward, blocks.1 in backward and blocks.0 prefetched there; the
  // root and blocks.1 reduced. Before: 4 and 1.
  CHECK(r.result.all_gathers == 5);
  CHECK(r.result.reduce_scatters == 2);
  CHECK(check_replay(r.in, r.result, true).collectives.match);
  // blocks.0's prefetched parameters are gone at the backward's end: nothing of it is left after.
  const int b0 = r.step.exec_of_unit[static_cast<std::size_t>(r.in.model.find_unit("blocks.0"))];
  std::int64_t held = 0;
  for (const auto& m : r.result.memory)
    if (m.exec == b0 && (m.cat == MemCat::AllGatherBuffer || m.cat == MemCat::UnshardedParam)) held += m.delta;
  CHECK(held == 0);
  // Kept unsharded after forward, blocks.0 is still gathered in every step's forward (the
  // callback resharded it), and no more in backward: 4, not the 3 of a teacher's unit kept so.
  const Replayed kept = replay(dir.file("frozen.ssdb"), {"blocks.0"});
  CHECK(kept.result.all_gathers == 4);
  held = 0;
  for (const auto& m : kept.result.memory)
    if (m.exec == b0 && m.cat == MemCat::UnshardedParam) held += m.delta;
  CHECK(held == 0);
}
