// Calibration to the unobserved step (issue "Predictions checked against the job as it runs
// without ShardScope", item 2): a profile recorded with `record --steps A:B` carries the wall times
// of the steps outside the window (unobserved_steps); load_sim_inputs takes the profiled step's
// extra time out of the model's host time, so a replay predicts the job without the profiler.
// Hand-made profiles, exact figures.
#include <catch2/catch.hpp>

#include <sqlite3.h>

#include <cstdlib>

#include "profiler/sim/sim_inputs.h"
#include "profiler/sim/sim_report.h"
#include "profiler/sim/step_simulator.h"
#include "storage/profile_writer.h"
#include "storage/sqlite_handle.h"
#include "tests/support/test_paths.h"

using namespace ss;
using namespace ss::sim;

namespace {

constexpr TimeNs ms = 1'000'000;

// One rank of a 2-rank run on `device`: a root unit and two blocks (forward and backward ranges in
// each 10 ms step, no collectives), steps 0-2 profiled; `unobserved` wall times of steps 3...; on a
// GPU a kernel in the first half of every range (the GPU idles the rest: host time).
// `resident` bytes allocated before the first step and never freed: memory no module explains
// (the model then replays less than was measured).
// `before`: wall times of unobserved steps 1... before the window, whose profiled steps are then
// numbered after them.
// `optimizer_temp`: each step ends with an optimizer range (9-10 ms) holding that many bytes of
// temporaries outside every module (9.2-9.8 ms), as a foreach AdamW's intermediates are, and
// starts with the loop's zero_grad (an optimizer range too, 0.1-0.2 ms) and 32 MiB of activations
// of blocks.0 (1-8 ms): the step peaks there, the optimizer phase at the end.
// `backward_extra`: bytes outside every module alive through each step's backward (5-9 ms), as
// the gradients flowing between a CPU job's blocks are: memory the model does not explain there.
// `passes` > 1: the step's 9 ms of ranges (and backward_extra) are that many forward-backward
// passes, one after another (gradient accumulation).
void write_profile(const std::string& path, const std::string& device, const std::vector<TimeNs>& unobserved,
                   std::int64_t resident = 0, const std::vector<TimeNs>& before = {}, std::int64_t optimizer_temp = 0,
                   std::int64_t backward_extra = 0, int passes = 1) {
  ProfileWriter w(path, Origin{});
  RankInfo ri;
  ri.world_size = 2;
  ri.gpu_name = device;
  w.add_rank(ri);
  const RowId thread = w.add_thread({0, 1, "main"});
  const bool gpu = device != "CPU";
  const RowId stream = gpu ? w.add_stream({0, 0, 7, StreamKind::Compute, "compute"}) : kNoRow;
  const RowId root = w.add_module({kNoRow, "", "Model", 3000, 12000, true, kNoRow, "false"});
  const RowId b0 = w.add_module({root, "blocks.0", "Block", 1000, 4000, true, kNoRow, "true"});
  const RowId b1 = w.add_module({root, "blocks.1", "Block", 1000, 4000, true, kNoRow, "true"});
  if (resident > 0) {
    MemoryEventRow m;
    m.time = 0;
    m.address = 0x1000;
    m.bytes = resident;
    w.add_memory_event(m);
  }
  const std::int64_t first = before.empty() ? 0 : 1 + static_cast<std::int64_t>(before.size());
  for (std::size_t i = 0; i < before.size(); ++i) {
    const TimeNs t0 = -100 * ms + static_cast<TimeNs>(i) * 20 * ms;
    w.add_unobserved_step({0, static_cast<std::int64_t>(1 + i), t0, t0 + before[i]});
  }
  for (int step = 0; step < 3; ++step) {
    const TimeNs t0 = step * 10 * ms;
    w.add_step({0, first + step, t0, t0 + 10 * ms});
    auto range = [&](RowId m, TimeNs a, TimeNs b, RangePhase ph) {
      w.add_range({0, thread, kNoRow, t0 + a, t0 + b, w.intern("m"), RangeKind::Module, ph, m, kNoRow, 0});
      if (gpu) {
        KernelRow k;
        k.stream = stream;
        k.start = t0 + a;
        k.end = t0 + a + (b - a) / 2;
        k.name = w.intern("gemm");
        w.add_kernel(k);
      }
    };
    for (int p = 0; p < passes; ++p) {
      const auto at = [&](TimeNs x) { return (p * 9 * ms + x) / passes; };  // of the pass's share of 0-9 ms
      range(root, at(0), at(5 * ms), RangePhase::Forward);
      range(b0, at(1 * ms), at(2 * ms), RangePhase::Forward);
      range(b1, at(2 * ms), at(3 * ms), RangePhase::Forward);
      range(b1, at(5 * ms), at(7 * ms), RangePhase::Backward);
      range(b0, at(7 * ms), at(9 * ms), RangePhase::Backward);
      if (backward_extra > 0) {
        MemoryEventRow g;
        g.address = 0x300000;
        g.time = t0 + at(5 * ms + 100'000);
        g.bytes = backward_extra;
        w.add_memory_event(g);
        g.time = t0 + at(9 * ms - 100'000);
        g.bytes = -backward_extra;
        w.add_memory_event(g);
      }
    }
    if (optimizer_temp > 0) {
      w.add_range({0, thread, kNoRow, t0 + 100'000, t0 + 200'000, w.intern("Optimizer.zero_grad#AdamW.zero_grad"),
                   RangeKind::Annotation, RangePhase::Optimizer, kNoRow, kNoRow, 0});
      w.add_range({0, thread, kNoRow, t0 + 9 * ms, t0 + 10 * ms, w.intern("Optimizer.step#AdamW.step"), RangeKind::Annotation,
                   RangePhase::Optimizer, kNoRow, kNoRow, 0});
      MemoryEventRow a;
      a.address = 0x200000;
      a.category = MemoryCategory::Activation;
      a.module = b0;
      a.time = t0 + 1 * ms + 500'000;
      a.bytes = 32 << 20;
      w.add_memory_event(a);
      a.time = t0 + 8 * ms;
      a.bytes = -(32 << 20);
      w.add_memory_event(a);
      MemoryEventRow m;
      m.address = 0x100000;
      m.category = MemoryCategory::Temporary;
      m.time = t0 + 9 * ms + 200'000;
      m.bytes = optimizer_temp;
      w.add_memory_event(m);
      m.time = t0 + 9 * ms + 800'000;
      m.bytes = -optimizer_temp;
      w.add_memory_event(m);
    }
  }
  for (std::size_t i = 0; i < unobserved.size(); ++i) {
    const TimeNs t0 = 40 * ms + static_cast<TimeNs>(i) * 20 * ms;
    w.add_unobserved_step({0, first + 3 + static_cast<std::int64_t>(i), t0, t0 + unobserved[i]});
  }
  w.finish();
}

SimInputs load(const std::string& path, bool calibrate = true) {
  SimInputRequest req;
  req.profile_path = path;
  req.calibrate_to_unobserved = calibrate;
  return load_sim_inputs(req);
}

TimeNs replay(const SimInputs& in) { return simulate(compile_step(in.model, FsdpPlan{}, in.cluster)).step_ns; }

}  // namespace

TEST_CASE("a CPU profile's replay is calibrated to its unobserved step", "[sim][calibration]") {
  ss::test::TempDir dir;
  write_profile(dir.file("p.ssdb"), "CPU", {8 * ms, 9 * ms, 7 * ms});
  const SimInputs in = load(dir.file("p.ssdb"));
  CHECK(in.measured_step_ns == 10 * ms);    // the profiled steps (step 0 left out as warm-up)
  CHECK(in.unobserved_step_ns == 8 * ms);   // the median of 8, 9 and 7 ms
  CHECK(in.unobserved_steps == 3);
  CHECK(in.recording_slowdown_pct() == Approx(25.0));
  REQUIRE(in.calibrated);
  CHECK(in.reference_step_ns() == 8 * ms);
  // On a CPU every nanosecond of the measured step is host time (compute and gaps); the replay
  // adds the preset's collectives (none were measured). The 2 ms the profiled step took more
  // come out of the host time: 10 ms of it, scaled by 0.8.
  CHECK(in.replay_as_profiled_ns > 10 * ms);
  CHECK(in.host_time_scale == Approx(0.8));
  CHECK(std::llabs(in.replay_calibrated_ns - (in.replay_as_profiled_ns - 2 * ms)) <= 10);
  CHECK(replay(in) == in.replay_calibrated_ns);
}

TEST_CASE("on a GPU the steps after the window are the unobserved step where there are three or more",
          "[sim][calibration]") {
  ss::test::TempDir dir;
  const std::string gpu = "NVIDIA H100 80GB HBM3";
  // Steps 1-4 before the window (memory records on), 5-7 profiled, then 8...
  write_profile(dir.file("after.ssdb"), gpu, {8 * ms, 9 * ms, 7 * ms}, 0, {12 * ms, 12 * ms, 13 * ms, 12 * ms});
  const SimInputs in = load(dir.file("after.ssdb"));
  CHECK(in.unobserved_after_window);
  CHECK(in.unobserved_steps == 3);
  CHECK(in.unobserved_step_ns == 8 * ms);
  CHECK(in.recording_slowdown_pct() == Approx(25.0));
  // Two after it are too few: every unobserved step but step 0, before the window too.
  write_profile(dir.file("few.ssdb"), gpu, {8 * ms, 7 * ms}, 0, {12 * ms, 12 * ms, 13 * ms});
  const SimInputs few = load(dir.file("few.ssdb"));
  CHECK_FALSE(few.unobserved_after_window);
  CHECK(few.unobserved_steps == 5);
  CHECK(few.unobserved_step_ns == 12 * ms);  // the median of 7, 8, 12, 12, 13
  // A window from step 0: every unobserved step is after it.
  write_profile(dir.file("zero.ssdb"), gpu, {8 * ms, 9 * ms, 7 * ms});
  CHECK(load(dir.file("zero.ssdb")).unobserved_after_window);
  // A CPU rank runs nothing of ShardScope's outside the window: every unobserved step counts.
  write_profile(dir.file("cpu.ssdb"), "CPU", {8 * ms, 9 * ms, 7 * ms}, 0, {12 * ms, 12 * ms, 13 * ms, 12 * ms});
  const SimInputs cpu = load(dir.file("cpu.ssdb"));
  CHECK_FALSE(cpu.unobserved_after_window);
  CHECK(cpu.unobserved_steps == 7);
  CHECK(cpu.unobserved_step_ns == 12 * ms);
}

// An evaluation between optimizer steps (a no_grad forward, a validation loop) runs inside the
// step that follows it: record counts the model's calls in every unobserved step, and the steps
// with more calls than the fewest are not the training step the replay stands for.
TEST_CASE("unobserved steps that called the model more often are left out of the unobserved step",
          "[sim][calibration]") {
  ss::test::TempDir dir;
  auto with_calls = [&](const std::string& name, const std::string& device, const std::vector<TimeNs>& walls,
                        const std::string& calls_sql, const std::vector<TimeNs>& before = {}) {
    const std::string path = dir.file(name);
    write_profile(path, device, walls, 0, before);
    sql::Db db(path, SQLITE_OPEN_READWRITE);
    db.exec(calls_sql);
    return load(path);
  };
  // Steps 3-8: 8, 9, 7 ms training alone (one call), 14, 15, 13 ms with an evaluation (two).
  const std::vector<TimeNs> walls = {8 * ms, 14 * ms, 9 * ms, 15 * ms, 7 * ms, 13 * ms};
  const SimInputs counted =
      with_calls("eval.ssdb", "CPU", walls, "UPDATE unobserved_steps SET model_calls = 1 + (number % 2 = 0)");
  CHECK(counted.unobserved_steps == 3);
  CHECK(counted.unobserved_steps_left_out == 3);
  CHECK(counted.unobserved_step_ns == 8 * ms);
  CHECK(counted.host_time_scale == Approx(0.8));
  // The what-if panel's sentence (the CLI's Unobserved line says the same).
  CHECK(calibration_summary(counted) ==
        "calibrated to the job without the profiler: 8.000 ms (median of 3 step(s) outside the capture window; 3 that "
        "called the model more often (an evaluation) left out); the profiled step 10.000 ms was +25.0% from it");
  // Every step with the same count (an evaluation in each, or none): all of them.
  const SimInputs same = with_calls("same.ssdb", "CPU", walls, "UPDATE unobserved_steps SET model_calls = 3");
  CHECK(same.unobserved_steps == 6);
  CHECK(same.unobserved_steps_left_out == 0);
  CHECK(same.unobserved_step_ns == 11 * ms);  // the median of 7, 8, 9, 13, 14, 15
  // Not counted (a profile recorded before the count, or with the column gone): all of them.
  const SimInputs uncounted = with_calls("old.ssdb", "CPU", walls, "ALTER TABLE unobserved_steps DROP COLUMN model_calls");
  CHECK(uncounted.unobserved_steps == 6);
  CHECK(uncounted.unobserved_steps_left_out == 0);
  CHECK(uncounted.unobserved_step_ns == 11 * ms);
  // On a GPU, the steps after the window are three or more only with the evaluations: too few
  // then, so the steps before it count too, of the fewest calls (steps 1-4 at 12 ms, step 2 with
  // an evaluation at 20 ms).
  const std::string gpu = "NVIDIA H100 80GB HBM3";
  const SimInputs gpu_in = with_calls("gpu.ssdb", gpu, {8 * ms, 14 * ms, 7 * ms, 13 * ms},
                                      "UPDATE unobserved_steps SET model_calls = 1 + (number IN (2, 9, 11))",
                                      {12 * ms, 20 * ms, 12 * ms, 12 * ms});
  CHECK_FALSE(gpu_in.unobserved_after_window);
  CHECK(gpu_in.unobserved_steps == 5);  // 7, 8, 12, 12, 12
  CHECK(gpu_in.unobserved_steps_left_out == 3);
  CHECK(gpu_in.unobserved_step_ns == 12 * ms);
}

TEST_CASE("--as-profiled, or no unobserved steps: the replay is of the profiled job", "[sim][calibration]") {
  ss::test::TempDir dir;
  write_profile(dir.file("p.ssdb"), "CPU", {8 * ms, 9 * ms, 7 * ms});
  const SimInputs as_profiled = load(dir.file("p.ssdb"), false);
  CHECK_FALSE(as_profiled.calibrated);
  CHECK(as_profiled.unobserved_step_ns == 8 * ms);  // still reported
  CHECK(as_profiled.reference_step_ns() == 10 * ms);
  CHECK(replay(as_profiled) == load(dir.file("p.ssdb")).replay_as_profiled_ns);
  CHECK(calibration_summary(as_profiled) ==
        "not calibrated (as profiled); the job without the profiler: 8.000 ms (median of 3 step(s) outside the capture "
        "window); the profiled step 10.000 ms was +25.0% from it");

  write_profile(dir.file("all.ssdb"), "CPU", {});
  const SimInputs all = load(dir.file("all.ssdb"));
  CHECK_FALSE(all.calibrated);
  CHECK(all.unobserved_steps == 0);
  CHECK(all.recording_slowdown_pct() == 0.0);
  CHECK(calibration_summary(all).empty());

  // A profile written before the table existed reads the same.
  {
    sql::Db db(dir.file("all.ssdb"), SQLITE_OPEN_READWRITE);
    db.exec("DROP TABLE unobserved_steps");
  }
  CHECK_FALSE(load(dir.file("all.ssdb")).calibrated);
}

TEST_CASE("a GPU profile's calibration takes the extra time from the host gaps only", "[sim][calibration]") {
  ss::test::TempDir dir;
  // Kernels cover half of each range: the GPU waits for the host the rest of the step, and the
  // 2 ms come out of those gaps, not out of the kernels.
  write_profile(dir.file("g.ssdb"), "NVIDIA H100 80GB HBM3", {8 * ms});
  const SimInputs in = load(dir.file("g.ssdb"));
  REQUIRE(in.calibrated);
  CHECK(in.measured_idle_ns > 2 * ms);
  const SimInputs as_profiled = load(dir.file("g.ssdb"), false);
  TimeNs compute = 0, compute_as_profiled = 0;
  for (const auto& sg : in.model.segments) compute += sg.fwd_ns + sg.bwd_ns;
  for (const auto& sg : as_profiled.model.segments) compute_as_profiled += sg.fwd_ns + sg.bwd_ns;
  CHECK(compute == compute_as_profiled);
  CHECK(in.host_time_scale < 1.0);
  CHECK(std::llabs(in.replay_calibrated_ns - (in.replay_as_profiled_ns - 2 * ms)) <= 10);
}

// Memory: the replay's peak is the measured one whether the model explains less than was measured
// (a constant "other") or more (its transient bytes scaled down).
TEST_CASE("memory the model does not explain is kept as a constant", "[sim][calibration][memory]") {
  ss::test::TempDir dir;
  write_profile(dir.file("p.ssdb"), "CPU", {}, 64 << 20);
  const SimInputs in = load(dir.file("p.ssdb"));
  CHECK(in.measured_peak_bytes == 64 << 20);
  REQUIRE(in.memory_calibration_bytes > 0);
  CHECK(in.transient_memory_scale == 1.0);
  CHECK(simulate(compile_step(in.model, FsdpPlan{}, in.cluster)).peak_bytes == in.measured_peak_bytes);
}

// The most the replay holds in its passes' forwards and in their backwards.
std::pair<std::int64_t, std::int64_t> phase_bytes(const SimResult& r) {
  std::int64_t level = 0, fwd = 0, bwd = 0;
  for (const auto& e : r.memory) {
    level += e.delta;
    const bool in_backward = std::any_of(r.backward_passes.begin(), r.backward_passes.end(),
                                         [&](const auto& p) { return p.first <= e.time && e.time <= p.second; });
    if (in_backward) bwd = std::max(bwd, level);
    else if (e.time < r.backward_end_ns) fwd = std::max(fwd, level);
  }
  return {fwd, bwd};
}

TEST_CASE("memory the model does not explain is held in the phase that held it", "[sim][calibration][memory]") {
  ss::test::TempDir dir;
  // 64 MiB no module explains all along: the two phases differ by what the model itself holds
  // more in backward (its gradients), and each replays at the measured 64 MiB.
  write_profile(dir.file("c.ssdb"), "CPU", {}, 64 << 20);
  const SimInputs flat = load(dir.file("c.ssdb"));
  REQUIRE(flat.memory_calibration_forward_bytes >= 0);
  const std::int64_t own = -flat.model.other_backward_bytes;  // the model's backward over its forward
  CHECK(own >= 0);
  CHECK(own < 1 << 20);
  const SimResult f = simulate(compile_step(flat.model, FsdpPlan{}, flat.cluster));
  CHECK(phase_bytes(f) == std::pair<std::int64_t, std::int64_t>{64 << 20, 64 << 20});
  // 8 MiB more through each backward: held there only. A what-if whose peak falls in the forward
  // (parameters kept unsharded there) is not charged them; before, one constant at the step's
  // peak was held in every phase.
  write_profile(dir.file("b.ssdb"), "CPU", {}, 64 << 20, {}, 0, 8 << 20);
  const SimInputs in = load(dir.file("b.ssdb"));
  CHECK(in.measured_peak_bytes == (64 << 20) + (8 << 20));
  CHECK(in.model.other_backward_bytes == (8 << 20) - own);
  CHECK(in.memory_calibration_backward_bytes - in.memory_calibration_forward_bytes == (8 << 20) - own);
  const SimResult r = simulate(compile_step(in.model, FsdpPlan{}, in.cluster));
  CHECK(r.peak_bytes == in.measured_peak_bytes);
  CHECK(phase_bytes(r) == std::pair<std::int64_t, std::int64_t>{64 << 20, (64 << 20) + (8 << 20)});
}

// The most the replay holds while its optimizer step runs.
std::int64_t optimizer_phase_bytes(const SimResult& r) {
  TimeNs start = -1, end = -1;
  for (const auto& op : r.ops)
    if (op.kind == OpKind::Optimizer) start = op.start, end = op.end;
  std::int64_t level = 0, most = 0;
  for (const auto& e : r.memory) {
    if (e.time > end) break;
    if (e.time >= start) most = std::max(most, level);
    level += e.delta;
    if (e.time >= start) most = std::max(most, level);
  }
  return most;
}

TEST_CASE("with gradient accumulation, every pass's backward holds what the backwards held", "[sim][calibration][memory]") {
  ss::test::TempDir dir;
  // Two passes a step, 8 MiB more through each pass's backward than 64 MiB no module explains.
  // Held as one constant (before), a what-if whose peak moves into a forward (the second pass's,
  // with the first's gradients kept) was charged the backward's 8 MiB there.
  write_profile(dir.file("flat.ssdb"), "CPU", {}, 64 << 20, {}, 0, 0, 2);
  const SimInputs flat = load(dir.file("flat.ssdb"));
  REQUIRE(flat.recorded_plan.gradient_accumulation == 2);
  REQUIRE(flat.memory_calibration_forward_bytes >= 0);
  const std::int64_t own = -flat.model.other_backward_bytes;  // the model's backward over its forwards
  CHECK(own >= 0);
  CHECK(own < 1 << 20);
  write_profile(dir.file("acc.ssdb"), "CPU", {}, 64 << 20, {}, 0, 8 << 20, 2);
  const SimInputs in = load(dir.file("acc.ssdb"));
  REQUIRE(in.recorded_plan.gradient_accumulation == 2);
  CHECK(in.measured_peak_bytes == (64 << 20) + (8 << 20));
  CHECK(in.model.other_backward_bytes == (8 << 20) - own);
  const SimResult r = simulate(compile_step(in.model, in.recorded_plan, in.cluster));
  REQUIRE(r.backward_passes.size() == 2);
  CHECK(r.peak_bytes == in.measured_peak_bytes);
  CHECK(phase_bytes(r) == std::pair<std::int64_t, std::int64_t>{64 << 20, (64 << 20) + (8 << 20)});
}

TEST_CASE("the optimizer step holds in the replay what it held in the profile", "[sim][calibration][memory]") {
  ss::test::TempDir dir;
  // 64 MiB no module explains, 32 MiB of activations in forward and backward, and 16 MiB of
  // temporaries inside each step's optimizer range (not its zero_grad at the start).
  write_profile(dir.file("o.ssdb"), "CPU", {}, 64 << 20, {}, 16 << 20);
  const SimInputs in = load(dir.file("o.ssdb"));
  CHECK(in.measured_peak_bytes == (64 << 20) + (32 << 20));
  CHECK(in.measured_optimizer_peak_bytes == (64 << 20) + (16 << 20));
  CHECK(in.model.optimizer_temp_bytes > 0);
  const SimResult r = simulate(compile_step(in.model, FsdpPlan{}, in.cluster));
  CHECK(optimizer_phase_bytes(r) == in.measured_optimizer_peak_bytes);
  CHECK(r.peak_bytes == in.measured_peak_bytes);
  // A plan that holds less elsewhere (every unit checkpointed) keeps the optimizer's memory: its
  // peak cannot go below it.
  FsdpPlan ckpt;
  ckpt.checkpoint["*"] = "full";
  const SimResult c = simulate(compile_step(in.model, ckpt, in.cluster));
  CHECK(optimizer_phase_bytes(c) == in.measured_optimizer_peak_bytes);
  CHECK(c.peak_bytes >= in.measured_optimizer_peak_bytes);
  // Without optimizer ranges nothing is fitted.
  write_profile(dir.file("n.ssdb"), "CPU", {}, 64 << 20);
  const SimInputs none = load(dir.file("n.ssdb"));
  CHECK(none.measured_optimizer_peak_bytes == 0);
  CHECK(none.model.optimizer_temp_bytes == 0);
}

TEST_CASE("a model that explains more than was measured has its transients scaled (real recordings)",
          "[sim][calibration][memory]") {
  auto inputs = [](const char* sample) {
    SimInputRequest req;
    req.profile_path = ss::test::source_dir() + "/resources/samples/" + sample;
    return load_sim_inputs(req);
  };
  auto peak = [](const SimInputs& in, const FsdpPlan& plan) { return simulate(compile_step(in.model, plan, in.cluster)).peak_bytes; };
  for (const char* sample : {"cpu-fsdp2-llama-2rank.ssdb", "h100-fsdp2-decoder-1gpu.ssdb"}) {
    INFO(sample);
    const SimInputs in = inputs(sample);
    REQUIRE(in.measured_peak_bytes > 0);
    CHECK(in.memory_calibration_bytes < 0);
    CHECK(in.transient_memory_scale > 0.5);
    CHECK(in.transient_memory_scale < 1.0);
    const std::int64_t replay = peak(in, FsdpPlan{});
    CHECK(replay <= in.measured_peak_bytes);
    CHECK(double(in.measured_peak_bytes - replay) <= 1e-6 * double(in.measured_peak_bytes));
    CHECK(in.model.other_memory_bytes >= 0);  // nothing negative is added
    // A plan still moves the peak by what the (scaled) model predicts: checkpointing every unit
    // keeps less, down to what the optimizer step holds, which it does not change (the CPU
    // sample's step peaks in its optimizer step, the H100 sample's at the loss).
    FsdpPlan ckpt;
    ckpt.checkpoint["*"] = "full";
    REQUIRE(in.measured_optimizer_peak_bytes > 0);
    CHECK(peak(in, ckpt) <= replay);
    CHECK(peak(in, ckpt) >= in.measured_optimizer_peak_bytes);
    if (in.measured_optimizer_peak_bytes < in.measured_peak_bytes) CHECK(peak(in, ckpt) < replay);
  }
  {
    INFO("synthetic profile: its memory events miss the parameters, so nothing transient can explain the gap");
    const SimInputs in = inputs("synthetic-fsdp-4rank.ssdb");
    CHECK(in.memory_calibration_bytes < 0);
    CHECK(in.transient_memory_scale == 1.0);
  }
}
