// Units called more than once in a pass (profiler/sim/repeated_calls.h): a model run on two
// inputs before one backward (a siamese loss, DPO's chosen and rejected) and the trained model's
// no_grad rollouts before its training forward. FSDP2 gathers a resharding unit at every call,
// and again for the second backward through it; keeping it unsharded removes the forward ones
// only. Hand-made CPU-style profiles with FSDP2's own ranges and collectives, counted exactly
// against what the user loop's job made (tests/python/user_loop.py: --two-forwards 17 all-gathers
// a step, 13 with two blocks kept; --rollouts 2: 17 and 11; before, the replay made 13 and 9, and
// 17 and 15).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

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
constexpr TimeNs kStepUs = 10'000;

struct Loop {
  int grad_calls = 1;    // forwards with gradients before the backward: their backwards run last call first
  int no_grad_calls = 0;  // forwards under no_grad before them (rollouts)
  bool keep_block1 = false;  // blocks.1 recorded with reshard_after_forward=False
  bool fsdp_ranges = true;   // FSDP2's own ranges (a CPU trace); without, the collectives alone (NVTX on a GPU)
  bool two_groups = false;   // each block gathered as two parameter groups (experts on a mesh of their own)
};

// Rank 0 of two on a CPU: a root holding 100 parameters of its own and blocks.0, blocks.1 (1000
// each), 4 steps (the first the warm-up). Every forward call runs the root's range over the
// blocks', each block gathered at its start ("FSDP::all_gather (blocks.i)" and the collective)
// unless kept unsharded from an earlier call; the root is gathered at the first call only. Then one
// backward per call with gradients, blocks in reverse, each gathered at its start unless still
// unsharded from the forward (a kept block, in the first backward), the reduce-scatters in the
// last backward (the gradients of the others wait for it in autograd).
void write_profile(const std::string& path, const Loop& loop) {
  ProfileWriter w(path, Origin{});
  const auto [thread, gloo_lane, compute] = ss::test::add_cpu_rank(w, 2);
  const RowId root = w.add_module({kNoRow, "", "Model", 2100, 8400, true, kNoRow, "false"});
  const std::vector<RowId> blocks{
      w.add_module({root, "blocks.0", "Block", 1000, 4000, true, kNoRow, "true"}),
      w.add_module({root, "blocks.1", "Block", 1000, 4000, true, kNoRow, loop.keep_block1 ? "false" : "true"})};
  const std::uint32_t gloo = w.intern("gloo"), name = w.intern("m"), op = w.intern("aten::mm");
  auto range = [&](RowId m, TimeNs s, TimeNs e, RangePhase ph) {
    w.add_range({0, thread, kNoRow, s, e, name, RangeKind::Module, ph, m, kNoRow, 0});
    if (m != root) w.add_kernel({0, compute, s + 20 * us, e, op, 0, kNoRow, KernelCategory::Compute, m, 0});
  };
  auto coll = [&](RowId m, TimeNs at, CollectiveType type, std::int64_t bytes) {
    const RowId k = w.add_kernel({0, gloo_lane, at, at + 10 * us, gloo, 0, kNoRow, KernelCategory::Collective, m, 0});
    w.add_collective({0, k, type, bytes, 0, kNoRow, 2, -1, at, at + 10 * us});
  };
  auto gather = [&](int i, TimeNs at, RangePhase ph) {
    const RowId m = blocks[static_cast<std::size_t>(i)];
    const std::string fsdp_range = "FSDP::all_gather (blocks." + std::to_string(i) + ")";
    if (loop.fsdp_ranges && !loop.two_groups)
      w.add_range({0, thread, kNoRow, at, at + 15 * us, w.intern(fsdp_range), RangeKind::Fsdp, ph, m, kNoRow, 1});
    for (const char* group : {" [pg=2]", " [pg=1]"})
      if (loop.fsdp_ranges && loop.two_groups)
        w.add_range({0, thread, kNoRow, at, at + 15 * us, w.intern(fsdp_range + group), RangeKind::Fsdp, ph, m, kNoRow, 1});
    coll(m, at + 2 * us, CollectiveType::AllGather, 4000);
  };
  const int calls = loop.no_grad_calls + loop.grad_calls;
  for (int step = 0; step < 4; ++step) {
    const TimeNs t0 = step * kStepUs * us;
    w.add_step({0, step, t0, t0 + kStepUs * us});
    for (int c = 0; c < calls; ++c) {
      const TimeNs f0 = t0 + (100 + 1000 * c) * us;
      range(root, f0, f0 + 900 * us, RangePhase::Forward);
      if (c == 0) coll(root, f0 + 5 * us, CollectiveType::AllGather, 400);
      for (int i = 0; i < 2; ++i) {
        const TimeNs f = f0 + (50 + 420 * i) * us;
        range(blocks[static_cast<std::size_t>(i)], f, f + 400 * us, RangePhase::Forward);
        if (c == 0 || !(i == 1 && loop.keep_block1)) gather(i, f + 5 * us, RangePhase::Forward);
        // A block's intermediate outputs: freed at once under no_grad (5000 B live at most), a
        // training call's 1000 B temporary beside the activations it saves.
        const bool no_grad = c < loop.no_grad_calls;
        const std::int64_t address = 0x1000 * (1 + c * 2 + i), bytes = no_grad ? 5000 : 1000;
        w.add_memory_event({0, f + 100 * us, address, bytes, MemoryCategory::Temporary, blocks[static_cast<std::size_t>(i)], kNoRow});
        w.add_memory_event({0, f + 200 * us, address, -bytes, MemoryCategory::Temporary, blocks[static_cast<std::size_t>(i)], kNoRow});
      }
    }
    const TimeNs b0 = t0 + (200 + 1000 * calls) * us;
    range(root, b0, b0 + 1900 * us * loop.grad_calls, RangePhase::Backward);
    for (int g = 0; g < loop.grad_calls; ++g) {
      const bool last = g + 1 == loop.grad_calls;
      for (int k = 0; k < 2; ++k) {
        const int i = 1 - k;
        const TimeNs b = b0 + (50 + 1900 * g + 850 * k) * us;
        range(blocks[static_cast<std::size_t>(i)], b, b + 800 * us, RangePhase::Backward);
        if (!(g == 0 && i == 1 && loop.keep_block1)) gather(i, b + 5 * us, RangePhase::Backward);
        if (last) coll(blocks[static_cast<std::size_t>(i)], b + 700 * us, CollectiveType::ReduceScatter, 4000);
      }
    }
    coll(root, b0 + 1900 * us * loop.grad_calls - 100 * us, CollectiveType::ReduceScatter, 400);
    w.add_range({0, thread, kNoRow, t0 + 9000 * us, t0 + 9500 * us, w.intern("ss:opt:" + std::to_string(step)),
                 RangeKind::Annotation, RangePhase::Optimizer, kNoRow, kNoRow, 0});
  }
  w.finish();
}

struct Replayed {
  ProfileInput in;
  int all_gathers = 0, reduce_scatters = 0;
};

Replayed replay(const std::string& path, const FsdpPlan& plan = {}) {
  Replayed r{extract_profile(load_profile(path))};
  add_gathers_from_profile(r.in, path);
  ClusterModel c;
  c.world_size = 2;
  const SimResult s = simulate(compile_step(r.in.model, plan, c));
  r.all_gathers = s.all_gathers;
  r.reduce_scatters = s.reduce_scatters;
  return r;
}

int unit_field(const ProfileInput& in, const std::string& name, int SimUnit::*field) {
  const int u = in.model.find_unit(name);
  REQUIRE(u >= 0);
  return in.model.units[static_cast<std::size_t>(u)].*field;
}

FsdpPlan keep(std::vector<std::string> units) {
  FsdpPlan p;
  p.unsharded = std::move(units);
  return p;
}

FsdpPlan reshard(std::vector<std::string> units) {
  FsdpPlan p;
  p.resharded = std::move(units);
  return p;
}

}  // namespace

TEST_CASE("a model called twice before its backward: each block gathered at both calls and both backwards", "[sim][replay]") {
  ss::test::TempDir dir;
  write_profile(dir.file("two.ssdb"), Loop{2, 0, false, true});
  const Replayed r = replay(dir.file("two.ssdb"));
  CHECK(r.in.repeat_call_units == 3);  // the root is called twice too (kept unsharded, it gathers once)
  for (const char* b : {"blocks.0", "blocks.1"}) {
    CHECK(unit_field(r.in, b, &SimUnit::repeat_fwd_calls) == 1);
    CHECK(unit_field(r.in, b, &SimUnit::extra_bwd_gathers) == 1);
    CHECK(unit_field(r.in, b, &SimUnit::extra_fwd_gathers) == 0);
  }
  CHECK(unit_field(r.in, "", &SimUnit::extra_bwd_gathers) == 0);
  // The root once, each block 2 + 2; the reductions once a unit. Before: 7 (no second backward's).
  CHECK(r.all_gathers == 1 + 2 * 4);
  CHECK(r.reduce_scatters == 3);
  // Kept unsharded, a block is gathered at its first call and again after the first backward
  // resharded it: 2, not 4 (the job: 17 -> 13 with two blocks kept).
  CHECK(replay(dir.file("two.ssdb"), keep({"blocks.1"})).all_gathers == 1 + 4 + 2);
  CHECK(replay(dir.file("two.ssdb"), keep({"blocks.0", "blocks.1"})).all_gathers == 1 + 2 + 2);
}

TEST_CASE("the backward of a model called twice runs as two chains, reducing in the last", "[sim][replay]") {
  // Autograd goes through every block for the second call, then for the first; FSDP2 reshards each
  // block after each and reduces in the second, where the first chain's gradients have waited.
  // Kept unsharded, a block is gathered in the second chain only, and the peak there is the same.
  ss::test::TempDir dir;
  write_profile(dir.file("two.ssdb"), Loop{2, 0, false, true});
  for (const FsdpPlan& plan : {FsdpPlan{}, keep({"blocks.0", "blocks.1"})}) {
    ProfileInput in = extract_profile(load_profile(dir.file("two.ssdb")));
    ClusterModel c;
    c.world_size = 2;
    const CompiledStep step = compile_step(in.model, plan, c);
    const SimResult r = simulate(step);
    const int b0 = step.exec_of_unit[static_cast<std::size_t>(in.model.find_unit("blocks.0"))];
    const int b1 = step.exec_of_unit[static_cast<std::size_t>(in.model.find_unit("blocks.1"))];
    std::vector<const SimOp*> computes;  // the blocks' backward compute, in order
    const SimOp* rs0 = nullptr;
    int gathers = 0;
    for (const auto& op : r.ops) {
      if (op.phase != Phase::Backward || (op.exec != b0 && op.exec != b1)) continue;
      if (op.kind == OpKind::Compute) computes.push_back(&op);
      if (op.kind == OpKind::ReduceScatter && op.exec == b0) rs0 = &op;
      gathers += op.kind == OpKind::AllGather;
    }
    REQUIRE(computes.size() == 4);
    CHECK(computes[0]->exec == b1);  // chain 1: blocks.1, blocks.0; chain 2: the same again
    CHECK(computes[1]->exec == b0);
    CHECK(computes[2]->exec == b1);
    CHECK(computes[3]->exec == b0);
    REQUIRE(rs0 != nullptr);
    CHECK(rs0->start >= computes[3]->end);  // reduced after its second backward only
    CHECK(gathers == (plan.unsharded.empty() ? 4 : 2));
    // At the second chain's start both blocks' unsharded gradients of the first are alive.
    std::int64_t live = 0;
    for (const auto& m : r.memory)
      if (m.cat == MemCat::UnshardedGrad && m.time <= computes[2]->start) live += m.delta;
    CHECK(live == 2 * 1000 * in.model.param_dtype_bytes);
  }
}

TEST_CASE("after passes without reduction, a block called twice reduces at both post-backwards", "[sim][replay]") {
  // Accumulation with no_sync: the earlier pass leaves its unsharded gradients on the blocks, so
  // in the reducing pass the first post-backward reduces those and the second this pass's (the
  // user loop with --two-forwards --micro-batches 2 --no-sync: 9 reduce-scatters a step, replayed
  // 5 before: each block once, and the root).
  ss::test::TempDir dir;
  write_profile(dir.file("two.ssdb"), Loop{2, 0, false, true});
  FsdpPlan no_sync;
  no_sync.gradient_accumulation = 2;
  no_sync.sync_every_microbatch = false;
  const Replayed r = replay(dir.file("two.ssdb"), no_sync);
  CHECK(r.reduce_scatters == 2 * 2 + 1);
  FsdpPlan every;  // reducing every pass: nothing carried, once a block a pass
  every.gradient_accumulation = 2;
  CHECK(replay(dir.file("two.ssdb"), every).reduce_scatters == 2 * 3);
}

TEST_CASE("recorded kept unsharded, a block called twice is gathered at every call once a plan reshards it", "[sim][replay]") {
  ss::test::TempDir dir;
  write_profile(dir.file("kept.ssdb"), Loop{2, 0, true, true});
  const Replayed r = replay(dir.file("kept.ssdb"));
  CHECK(unit_field(r.in, "blocks.1", &SimUnit::repeat_fwd_calls) == 1);
  CHECK(unit_field(r.in, "blocks.1", &SimUnit::extra_bwd_gathers) == 1);
  CHECK(unit_field(r.in, "blocks.1", &SimUnit::extra_fwd_gathers) == 0);
  CHECK(r.all_gathers == 1 + 4 + 2);  // as recorded
  CHECK(replay(dir.file("kept.ssdb"), reshard({"blocks.1"})).all_gathers == 1 + 4 + 4);
}

TEST_CASE("no_grad rollouts of the trained model: gathered at each call while resharded, once kept", "[sim][replay]") {
  ss::test::TempDir dir;
  write_profile(dir.file("rollouts.ssdb"), Loop{1, 2, false, true});
  const Replayed r = replay(dir.file("rollouts.ssdb"));
  CHECK(r.in.repeat_call_units == 3);
  CHECK(unit_field(r.in, "blocks.0", &SimUnit::repeat_fwd_calls) == 2);
  CHECK(unit_field(r.in, "blocks.0", &SimUnit::extra_bwd_gathers) == 0);
  CHECK(unit_field(r.in, "blocks.0", &SimUnit::extra_fwd_gathers) == 0);
  CHECK(r.all_gathers == 1 + 2 * (3 + 1));
  CHECK(r.reduce_scatters == 3);
  // Kept, a block stays unsharded from the first rollout to its backward: one gather, not four
  // (the job: 17 -> 11 with two blocks kept; replayed as measured whatever the plan, 15).
  CHECK(replay(dir.file("rollouts.ssdb"), keep({"blocks.0", "blocks.1"})).all_gathers == 1 + 2);
  // A block's forward temporaries are its training call's, not the larger ones of the rollouts
  // before it, which are gone when the training call holds its activations (counted, they had
  // stacked on them: the user loop's plan peak 2.5 % higher).
  ProfileInput in = r.in;
  add_temporaries_from_profile(in, dir.file("rollouts.ssdb"));
  int blocks = 0;
  for (const auto& seg : in.model.segments)
    if (in.model.units[static_cast<std::size_t>(seg.unit)].name.rfind("blocks.", 0) == 0) {
      CHECK(seg.fwd_temp_bytes == 1000);
      ++blocks;
    }
  CHECK(blocks == 2);
}

TEST_CASE("a block gathered as two parameter groups is gathered once, forward and backward", "[sim][replay]") {
  // torchtitan's MoE blocks with experts on a mesh of their own: "FSDP::all_gather (layers.0)
  // [pg=2]" and "... [pg=1]" at each gather. Counted together in backward, every block had
  // replayed a second backward chain (8 all-gathers more a step on the 2-rank MoE run).
  ss::test::TempDir dir;
  Loop once{1, 0, false, true};
  once.two_groups = true;
  write_profile(dir.file("groups.ssdb"), once);
  const Replayed r = replay(dir.file("groups.ssdb"));
  CHECK(r.in.repeat_call_units == 0);
  for (const auto& u : r.in.model.units) {
    CHECK(u.extra_bwd_gathers == 0);
    CHECK(u.extra_fwd_gathers == 0);
  }
  CHECK(r.all_gathers == 1 + 2 * 2);
  Loop twice{2, 0, false, true};
  twice.two_groups = true;
  write_profile(dir.file("groups2.ssdb"), twice);
  const Replayed t = replay(dir.file("groups2.ssdb"));
  CHECK(unit_field(t.in, "blocks.0", &SimUnit::extra_bwd_gathers) == 1);
  CHECK(t.all_gathers == 1 + 2 * 4);
}

TEST_CASE("a model called once has no repeated calls", "[sim][replay]") {
  ss::test::TempDir dir;
  write_profile(dir.file("once.ssdb"), Loop{1, 0, false, true});
  const Replayed r = replay(dir.file("once.ssdb"));
  CHECK(r.in.repeat_call_units == 0);
  for (const auto& u : r.in.model.units) {
    CHECK(u.repeat_fwd_calls == 0);
    CHECK(u.extra_bwd_gathers == 0);
    CHECK(u.extra_fwd_gathers == 0);
  }
  CHECK(r.all_gathers == 1 + 2 * 2);
  CHECK(replay(dir.file("once.ssdb"), keep({"blocks.0", "blocks.1"})).all_gathers == 1 + 2);
}

TEST_CASE("without FSDP's ranges (a GPU trace) the calls still set the forward gathers a plan removes", "[sim][replay]") {
  // The step's gathers per unit are counted from the collectives, phases not told apart: a block
  // called twice makes 4, of which the calls' 2 in forward and 1 in backward are modelled and the
  // second backward's is replayed as measured; kept, 1 + that one, as the job makes.
  ss::test::TempDir dir;
  write_profile(dir.file("two.ssdb"), Loop{2, 0, false, false});
  const Replayed two = replay(dir.file("two.ssdb"));
  CHECK_FALSE(two.in.fsdp_gather_ranges);
  CHECK(unit_field(two.in, "blocks.0", &SimUnit::repeat_fwd_calls) == 1);
  CHECK(two.all_gathers == 1 + 2 * 4);
  CHECK(replay(dir.file("two.ssdb"), keep({"blocks.0", "blocks.1"})).all_gathers == 1 + 2 * 2);
  write_profile(dir.file("rollouts.ssdb"), Loop{1, 2, false, false});
  CHECK(replay(dir.file("rollouts.ssdb")).all_gathers == 1 + 2 * 4);
  CHECK(replay(dir.file("rollouts.ssdb"), keep({"blocks.0", "blocks.1"})).all_gathers == 1 + 2);
}
