// What a user's own loop does around the forward-backward pass (tests/python/user_loop.py
// --extras): clip_grad_norm_ all-reduces its norms and a logged loss is all-reduced, both
// collectives FSDP does not issue, which the replay keeps as measured (they had been taken for
// HSDP's all-reduces as soon as the run reduce-scattered, and dropped: a real loop replayed -8 %);
// and an evaluation forward under no_grad between optimizer steps, whose step is not averaged
// (its forward was taken for the units' own); and a checkpoint save between two steps, whose step,
// far longer than the others, is not averaged either. Hand-made CPU-style profiles, counted exactly.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "profiler/sim/profile_extract.h"
#include "profiler/sim/sim_inputs.h"
#include "profiler/sim/sim_report.h"
#include "profiler/sim/step_simulator.h"
#include "storage/profile_reader.h"
#include "storage/profile_writer.h"
#include "tests/support/cpu_rank.h"
#include "tests/support/test_paths.h"

using namespace ss;
using namespace ss::sim;

namespace {

constexpr TimeNs us = 1000;
constexpr TimeNs kStepUs = 5000;

struct Loop {
  bool extras = true;           // the norm's and the loss's all-reduces after the backward
  std::multiset<int> eval_in_steps;  // steps that also run an evaluation forward (no backward), once per entry
  bool gather_in_host_gap = false;  // an all-gather of 100 us while the thread is in Python, after the optimizer
  std::set<int> checkpoint_in_steps;  // steps that end with a checkpoint save (DCP: a gather, a scatter, writes)
  TimeNs checkpoint_us = 6000;        // the save's length: those steps last 5 ms + this
  int steps = 4;
  // A pipeline stage's receive posted ahead of the forward, [20, 150) us into the step, and block 0's
  // all-gather moved out from under its compute to [100, 150): the thread waits for the gather
  // while the receive is in flight.
  bool recv_over_first_gather = false;
};

// A loop with or without the extras, evaluating in `eval` steps and saving a checkpoint in `saves`.
Loop loop_with(bool extras, std::multiset<int> eval = {}, std::set<int> saves = {}) {
  Loop l;
  l.extras = extras;
  l.eval_in_steps = std::move(eval);
  l.checkpoint_in_steps = std::move(saves);
  return l;
}

// Rank 0 of two on a CPU: a root unit holding blocks.0 and blocks.1 (1000 parameters each), `steps`
// steps, 4 (the first is the warm-up the replay skips). A step: the root's forward range over the
// blocks' (400 us of compute each, gathered at their start), the root's backward range over the
// blocks' (800 us each, gathered at their start, reduce-scattered before their end), then with
// `extras` an all-reduce of 112 B (28 norms) and one of 4 B (the loss), 300 us each with nothing
// else running, the optimizer, and in `eval_in_steps` an evaluation forward (200 us a block; a
// step listed twice runs two, 600 us apart, and lasts that much longer); in
// `checkpoint_in_steps` a save after the optimizer: a gather and a scatter of 200 B (the planners'
// objects) and the file writes, the thread busy in Python.
void write_profile(const std::string& path, const Loop& loop) {
  ProfileWriter w(path, Origin{});
  const auto [thread, gloo_lane, compute] = ss::test::add_cpu_rank(w, 2);
  const RowId root = w.add_module({kNoRow, "", "Model", 2000, 8000, true, kNoRow, "false"});
  const std::vector<RowId> blocks{w.add_module({root, "blocks.0", "Block", 1000, 4000, true, kNoRow, "true"}),
                                  w.add_module({root, "blocks.1", "Block", 1000, 4000, true, kNoRow, "true"})};
  const std::uint32_t gloo = w.intern("gloo"), name = w.intern("m"), op = w.intern("aten::mm");
  auto range = [&](RowId m, TimeNs s, TimeNs e, RangePhase ph) {  // a block's range is busy computing
    w.add_range({0, thread, kNoRow, s, e, name, RangeKind::Module, ph, m, kNoRow, 0});
    if (m != root) w.add_kernel({0, compute, s, e, op, 0, kNoRow, KernelCategory::Compute, m, 0});
  };
  auto coll = [&](RowId m, TimeNs at, TimeNs len, CollectiveType type, std::int64_t bytes) {
    const RowId k = w.add_kernel({0, gloo_lane, at, at + len, gloo, 0, kNoRow, KernelCategory::Collective, m, 0});
    w.add_collective({0, k, type, bytes, 0, kNoRow, 2, -1, at, at + len});
  };
  TimeNs t0 = 0;
  for (int step = 0; step < loop.steps; ++step) {
    const int evals = static_cast<int>(loop.eval_in_steps.count(step));
    const TimeNs len =
        (kStepUs + (loop.checkpoint_in_steps.count(step) ? loop.checkpoint_us : 0) + std::max(0, evals - 1) * 600) * us;
    w.add_step({0, step, t0, t0 + len});
    range(root, t0 + 100 * us, t0 + 1000 * us, RangePhase::Forward);
    for (int i = 0; i < 2; ++i) {
      const TimeNs f = t0 + (150 + 420 * i) * us;
      range(blocks[static_cast<std::size_t>(i)], f, f + 400 * us, RangePhase::Forward);
      if (i == 0 && loop.recv_over_first_gather) {
        coll(kNoRow, t0 + 20 * us, 130 * us, CollectiveType::Recv, 4000);
        coll(blocks[0], f - 50 * us, 50 * us, CollectiveType::AllGather, 4000);
      } else {
        coll(blocks[static_cast<std::size_t>(i)], f + 5 * us, 10 * us, CollectiveType::AllGather, 4000);
      }
    }
    range(root, t0 + 1100 * us, t0 + 2900 * us, RangePhase::Backward);
    for (int i = 0; i < 2; ++i) {
      const TimeNs b = t0 + (1150 + 850 * i) * us;
      const RowId m = blocks[static_cast<std::size_t>(1 - i)];
      range(m, b, b + 800 * us, RangePhase::Backward);
      coll(m, b + 5 * us, 10 * us, CollectiveType::AllGather, 4000);
      coll(m, b + 700 * us, 10 * us, CollectiveType::ReduceScatter, 4000);
    }
    if (loop.extras) {
      coll(kNoRow, t0 + 3000 * us, 300 * us, CollectiveType::AllReduce, 112);
      coll(kNoRow, t0 + 3400 * us, 300 * us, CollectiveType::AllReduce, 4);
    }
    w.add_range({0, thread, kNoRow, t0 + 3800 * us, t0 + 4300 * us, w.intern("ss:opt:" + std::to_string(step)),
                 RangeKind::Annotation, RangePhase::Optimizer, kNoRow, kNoRow, 0});
    if (loop.gather_in_host_gap) coll(blocks[0], t0 + 3750 * us, 100 * us, CollectiveType::AllGather, 4000);
    for (int e = 0; e < evals; ++e) {
      const TimeNs at = t0 + 600 * e * us;
      range(root, at + 4400 * us, at + 4900 * us, RangePhase::Forward);
      for (int i = 0; i < 2; ++i) {
        const TimeNs f = at + (4450 + 220 * i) * us;
        range(blocks[static_cast<std::size_t>(i)], f, f + 200 * us, RangePhase::Forward);
        coll(blocks[static_cast<std::size_t>(i)], f + 5 * us, 10 * us, CollectiveType::AllGather, 4000);
      }
    }
    if (loop.checkpoint_in_steps.count(step)) {
      coll(kNoRow, t0 + 4400 * us, 50 * us, CollectiveType::Gather, 200);
      coll(kNoRow, t0 + 4500 * us, 50 * us, CollectiveType::Scatter, 200);
    }
    t0 += len;
  }
  w.finish();
}

SimInputs inputs(const std::string& path) {
  SimInputRequest req;
  req.profile_path = path;
  return load_sim_inputs(req);
}

}  // namespace

TEST_CASE("the loop's own all-reduces (gradient norm, logged loss) are replayed as measured, not taken for FSDP's",
          "[sim][replay]") {
  ss::test::TempDir dir;
  write_profile(dir.file("extras.ssdb"), loop_with(true));
  write_profile(dir.file("plain.ssdb"), loop_with(false));
  const ProfileInput pi = extract_profile(load_profile(dir.file("extras.ssdb")));
  CHECK(pi.steps_used == 3);
  CHECK(pi.other_collectives == 2 * 3);
  CHECK(pi.measured_other_comm_ns == 600 * us);  // both, each with nothing else running
  CHECK(pi.recorded_hsdp_replicate == 1);
  const SimInputs with = inputs(dir.file("extras.ssdb")), without = inputs(dir.file("plain.ssdb"));
  const SimResult a = simulate(compile_step(with.model, with.plan, with.cluster));
  const SimResult b = simulate(compile_step(without.model, without.plan, without.cluster));
  CHECK(a.all_gathers == 4);
  CHECK(a.reduce_scatters == 2);
  CHECK(a.all_reduces == 0);
  CHECK(a.other_comm_ns == 600 * us);
  // Both steps are 5 ms: the all-reduces' 600 us are replayed where the other loop idles (taken for
  // FSDP's, they were neither: the replay came out 600 us short).
  CHECK(with.measured_step_ns == without.measured_step_ns);
  CHECK(b.idle_ns - a.idle_ns == 600 * us);
  CHECK(a.step_ns == b.step_ns);
}

TEST_CASE("a step holding an evaluation forward is left out of the measured step while training steps remain",
          "[sim][replay]") {
  ss::test::TempDir dir;
  write_profile(dir.file("eval.ssdb"), loop_with(true, {2}));
  const ProfileInput pi = extract_profile(load_profile(dir.file("eval.ssdb")));
  CHECK(pi.steps_used == 2);
  CHECK(pi.forward_only_steps_left_out == 1);
  CHECK(pi.step_windows.size() == 2);
  CHECK(pi.micro_batches == 1);
  // The blocks' forward is the training pass's alone (with step 2 averaged in, its evaluation after the
  // backward was read as a second pass: 350 us).
  for (const auto& seg : pi.model.segments)
    if (!pi.model.units[static_cast<std::size_t>(seg.unit)].is_root) CHECK(seg.fwd_ns == 400 * us);
  CHECK(pi.other_collectives == 2 * 2);

  // An evaluation in every step leaves nothing to average instead: the steps are kept as they are.
  write_profile(dir.file("eval_always.ssdb"), loop_with(true, {0, 1, 2, 3}));
  const ProfileInput always = extract_profile(load_profile(dir.file("eval_always.ssdb")));
  CHECK(always.steps_used == 3);
  CHECK(always.forward_only_steps_left_out == 0);
  // A forward without backward in every step (RLHF's rollouts) and an evaluation besides in step 2:
  // the training steps are those with the fewest, step 2 is left out (it had been averaged in).
  write_profile(dir.file("rollouts_eval.ssdb"), loop_with(true, {0, 1, 2, 2, 3}));
  const ProfileInput rollouts = extract_profile(load_profile(dir.file("rollouts_eval.ssdb")));
  CHECK(rollouts.steps_used == 2);
  CHECK(rollouts.forward_only_steps_left_out == 1);
  CHECK(rollouts.step_windows.size() == 2);

  // The report says what was left out.
  const SimInputs in = inputs(dir.file("eval.ssdb"));
  CHECK(in.forward_only_steps_left_out == 1);
  CHECK(in.steps_used == 2);
  std::ostringstream text;
  print_measured_text(text, in);
  CHECK_THAT(text.str(), Catch::Contains("1 step holding a forward without backward (an evaluation under no_grad) left out: "
                                         "the measured step is the mean of the other 2"));
  CHECK_THAT(text.str(), Catch::Contains("non-FSDP collectives 0.600 ms (4 in 2 steps)"));
}

TEST_CASE("a step lengthened by a checkpoint save is left out of the measured step; two steps are kept as they are",
          "[sim][replay]") {
  ss::test::TempDir dir;
  write_profile(dir.file("plain.ssdb"), loop_with(true));
  write_profile(dir.file("save.ssdb"), loop_with(true, {}, {2}));
  const ProfileInput plain = extract_profile(load_profile(dir.file("plain.ssdb")));
  const ProfileInput pi = extract_profile(load_profile(dir.file("save.ssdb")));
  CHECK(pi.steps_used == 2);
  CHECK(pi.long_steps_left_out == 1);
  CHECK(pi.long_steps_ns == (kStepUs + 6000) * us);
  CHECK(pi.step_windows.size() == 2);
  // The replay stands for the training step: the same as without the save (averaged in, the step
  // was 7 ms, the save's 6 ms a third of it as idle, and its gather and scatter the loop's collectives).
  CHECK(pi.measured_step_ns == kStepUs * us);
  CHECK(pi.measured_step_ns == plain.measured_step_ns);
  CHECK(pi.measured_idle_ns == plain.measured_idle_ns);
  CHECK(pi.other_collectives == 2 * 2);

  // A save twice the training step or less is within what a step may take: kept.
  Loop short_save{true, {}, false, {2}, kStepUs};
  write_profile(dir.file("short_save.ssdb"), short_save);
  const ProfileInput kept = extract_profile(load_profile(dir.file("short_save.ssdb")));
  CHECK(kept.steps_used == 3);
  CHECK(kept.long_steps_left_out == 0);

  // Two steps (three recorded, the first the warm-up): nothing tells which of them is the long one.
  Loop two{true, {}, false, {2}};
  two.steps = 3;
  write_profile(dir.file("two.ssdb"), two);
  const ProfileInput both = extract_profile(load_profile(dir.file("two.ssdb")));
  CHECK(both.steps_used == 2);
  CHECK(both.long_steps_left_out == 0);

  const SimInputs in = inputs(dir.file("save.ssdb"));
  CHECK(in.long_steps_left_out == 1);
  const SimResult r = simulate(compile_step(in.model, in.plan, in.cluster));
  CHECK(r.other_comm_ns == 600 * us);  // the loop's all-reduces, not the save's gather and scatter
  std::ostringstream text;
  print_measured_text(text, in);
  CHECK_THAT(text.str(), Catch::Contains("1 step over 2x the median step (11.000 ms on average: a checkpoint save, a pause "
                                         "of the job) left out: the measured step is the mean of the other 2"));
}

TEST_CASE("on a CPU, an FSDP collective's time inside the thread's idle is not fitted again", "[sim][replay]") {
  // The thread idles from the all-reduces' end to the next step's first kernel (1.45 ms; the
  // optimizer range has no kernel), an all-gather of 100 us inside that ends more than 1 ms before
  // compute resumes (not waited for): the stretch is replayed as idle, so the gather's fit sample
  // is what it held the thread beyond it -- nothing. Counted in both, the replay came out long
  // (the CPU replays' +0.5 to +2.5 %).
  ss::test::TempDir dir;
  Loop loop;
  loop.gather_in_host_gap = true;
  write_profile(dir.file("gap.ssdb"), loop);
  SimInputRequest req;
  req.profile_path = dir.file("gap.ssdb");
  req.fit = true;
  const SimInputs in = load_sim_inputs(req);
  const SimResult r = simulate(compile_step(in.model, in.plan, in.cluster));
  CHECK(std::llabs(r.step_ns - in.measured_step_ns) < 1 * us);  // the gathers' bytes at the preset bandwidth
  const ProfileInput pi = extract_profile(load_profile(dir.file("gap.ssdb")));
  // Every all-gather's sample is 0: those of the passes run under the blocks' compute, the stray
  // one (one a step used) wholly inside the idle.
  int gathers = 0;
  for (const auto& c : pi.collectives)
    if (c.type == Coll::AllGather) {
      ++gathers;
      CHECK(c.duration == 0);
    }
  CHECK(gathers == 3 * 5);
}

// torchtitan's pipeline on CPU (dp 2 x pp 2): FSDP's all-gathers ran while the stage's sends and
// receives were in flight (62 to 129 ms a step); counted as the transfers' and modelled again as
// FSDP's, that time was replayed twice (+15.2 %).
TEST_CASE("a pipeline's receive in flight over an FSDP all-gather: the wait is FSDP's, not the receive's",
          "[sim][replay]") {
  ss::test::TempDir dir;
  Loop loop = loop_with(false);
  loop.recv_over_first_gather = true;
  write_profile(dir.file("pp.ssdb"), loop);
  const ProfileInput pi = extract_profile(load_profile(dir.file("pp.ssdb")));
  CHECK(pi.other_collectives == 3);
  // The receive's 130 us less the gather's 50: before, all 130 were the receive's.
  CHECK(pi.measured_other_comm_ns == 80 * us);
  SimInputRequest req;
  req.profile_path = dir.file("pp.ssdb");
  req.fit = true;
  const SimInputs in = load_sim_inputs(req);
  const SimResult r = simulate(compile_step(in.model, in.plan, in.cluster));
  CHECK(r.other_comm_ns == 80 * us);
  // The gather's 50 us come back as the modelled all-gather's (its fitted time), once.
  CHECK(std::llabs(r.step_ns - in.measured_step_ns) < 1 * us);
}
