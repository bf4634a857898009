// Whether the replay issues the FSDP collectives the profiled steps did (sim::CollectiveCheck),
// and what the extraction counts for it: a unit reduced in several reduce-scatters a pass
// (torchtitan's chunked loss: the output head's gradients apart from the norm's), an optimizer
// step between two backward passes (a GAN), the optimizer's own collectives (Muon). Hand-made
// CPU-style profiles with FSDP2's own ranges, as in test_sim_repeated_calls.
#include <catch2/catch.hpp>

#include <string>
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
constexpr TimeNs kStepUs = 10'000;

struct Loop {
  // blocks.1's gradients reduced in two reduce-scatters a pass: 3960 B then 40 B (a split), or
  // 4000 B twice (the unit reduced again, as a GAN's discriminator is).
  bool split = false, repeated = false;
  // A range of the optimizer's phase between blocks.1's and blocks.0's backward: a step
  // ("Optimizer.step#AdamW.step", a GAN's discriminator stepped) or a zero_grad.
  const char* between_backwards = nullptr;
  int optimizer_gathers = 0;  // all-gathers inside the optimizer's range (Muon's), outside FSDP's
  // Tensor parallelism beside FSDP (the hooks' "model_parallel" meta, e.g. "tp=2"): each block's
  // forward all-gathers and its backward reduce-scatters its sequence-parallel activations (2048 B)
  // inside its module range, outside FSDP's.
  const char* model_parallel = nullptr;
  // With it, FSDP's process group named by the hooks (meta "fsdp_group", and "model_parallel_ranks"
  // 2, TP's ranks beside FSDP's): rank 0 of dp 2 x tp 2,
  // FSDP's collectives on "1" (ranks 0, 2), the sequence-parallel ones on "3" (ranks 0, 1). The
  // modules table counts each DTensor whole (twice each unit's), the hooks' param_groups what FSDP
  // gathers on the rank.
  const char* fsdp_group = nullptr;
  // With it: FSDP over one rank (tp 2 on 2 ranks, torchtitan's TP-only run), which issues no
  // collective; the hooks' "fsdp_dtype_bytes" meta, when given, says what it gathers in.
  bool fsdp_over_one_rank = false;
  const char* fsdp_dtype_bytes = nullptr;
};

// Rank 0 of two on a CPU: a root (100 parameters, kept unsharded) over blocks.0 and blocks.1 (1000
// each), 4 steps. Each block gathered in forward and backward inside FSDP's all-gather range, each
// unit reduced inside FSDP's post_backward_reduce range; the optimizer's range at the step's end.
void write_profile(const std::string& path, const Loop& loop) {
  ProfileWriter w(path, Origin{});
  const bool dp_tp = loop.fsdp_group != nullptr;
  ss::test::CpuTraceWriter t(w, dp_tp && !loop.fsdp_over_one_rank ? 4 : 2);
  if (loop.fsdp_dtype_bytes != nullptr) w.set_meta("rank0.fsdp_dtype_bytes", loop.fsdp_dtype_bytes);
  if (loop.model_parallel != nullptr) w.set_meta("rank0.model_parallel", loop.model_parallel);
  RowId fsdp_pg = kNoRow, tp_pg = kNoRow;
  if (dp_tp) {
    w.set_meta("rank0.fsdp_group", loop.fsdp_group);
    w.set_meta("rank0.model_parallel_ranks", "2");
    const std::string mesh = loop.fsdp_over_one_rank ? "@1" : "@2";
    w.set_meta("rank0.param_groups.", "100" + mesh);
    w.set_meta("rank0.param_groups.blocks.0", "1000" + mesh);
    w.set_meta("rank0.param_groups.blocks.1", "1000" + mesh);
    fsdp_pg = w.add_process_group({"1", "mesh_dp", "[0,2]", 2, "gloo"});
    tp_pg = w.add_process_group({"3", "mesh_tp", "[0,1]", 2, "gloo"});
  }
  const int whole = dp_tp ? 2 : 1;  // the modules table's count of a TP-sharded parameter
  const RowId root = w.add_module({kNoRow, "", "Model", 2100 * whole, 8400 * whole, true, kNoRow, "false"});
  const std::vector<RowId> blocks{w.add_module({root, "blocks.0", "Block", 1000 * whole, 4000 * whole, true, kNoRow, "true"}),
                                  w.add_module({root, "blocks.1", "Block", 1000 * whole, 4000 * whole, true, kNoRow, "true"})};
  auto range = [&](RowId m, TimeNs s, TimeNs e, RangePhase ph) { t.module_range(m, s, e, ph, m != root); };
  auto coll = [&](RowId m, TimeNs at, CollectiveType type, std::int64_t bytes) {
    if (!loop.fsdp_over_one_rank) t.collective(m, at, type, bytes, fsdp_pg);
  };
  auto tp_coll = [&](RowId m, TimeNs at, CollectiveType type) { t.collective(m, at, type, 2048, tp_pg); };
  auto fsdp = [&](RowId m, const std::string& what, TimeNs at, RangePhase ph) {
    const std::string unit = m == root ? "" : m == blocks[0] ? "blocks.0" : "blocks.1";
    t.fsdp_range(what + " (" + unit + ")", m, at, ph);
  };
  auto gather = [&](int i, TimeNs at, RangePhase ph) {
    fsdp(blocks[static_cast<std::size_t>(i)], "all_gather", at, ph);
    coll(blocks[static_cast<std::size_t>(i)], at + 2 * us, CollectiveType::AllGather, 4000);
  };
  auto reduce = [&](RowId m, TimeNs at, std::int64_t bytes) {
    fsdp(m, "post_backward_reduce", at, RangePhase::Backward);
    coll(m, at + 2 * us, CollectiveType::ReduceScatter, bytes);
  };
  for (int step = 0; step < 4; ++step) {
    const TimeNs t0 = step * kStepUs * us;
    w.add_step({0, step, t0, t0 + kStepUs * us});
    range(root, t0 + 100 * us, t0 + 1000 * us, RangePhase::Forward);
    coll(root, t0 + 105 * us, CollectiveType::AllGather, 400);
    for (int i = 0; i < 2; ++i) {
      const TimeNs f = t0 + (150 + 420 * i) * us;
      range(blocks[static_cast<std::size_t>(i)], f, f + 400 * us, RangePhase::Forward);
      gather(i, f + 5 * us, RangePhase::Forward);
      if (loop.model_parallel != nullptr) tp_coll(blocks[static_cast<std::size_t>(i)], f + 200 * us, CollectiveType::AllGather);
    }
    const TimeNs b0 = t0 + 1200 * us;
    range(root, b0, b0 + 3000 * us, RangePhase::Backward);
    for (int k = 0; k < 2; ++k) {
      const int i = 1 - k;
      const TimeNs b = b0 + (50 + 1400 * k) * us;
      range(blocks[static_cast<std::size_t>(i)], b, b + 800 * us, RangePhase::Backward);
      gather(i, b + 5 * us, RangePhase::Backward);
      if (loop.model_parallel != nullptr) tp_coll(blocks[static_cast<std::size_t>(i)], b + 300 * us, CollectiveType::ReduceScatter);
      if (i == 1 && (loop.split || loop.repeated)) {
        reduce(blocks[1], b + 700 * us, loop.split ? 3960 : 4000);
        reduce(blocks[1], b + 750 * us, loop.split ? 40 : 4000);
      } else {
        reduce(blocks[static_cast<std::size_t>(i)], b + 700 * us, 4000);
      }
      if (i == 1 && loop.between_backwards != nullptr)
        w.add_range({0, t.lanes.thread, kNoRow, b + 1000 * us, b + 1300 * us, w.intern(loop.between_backwards), RangeKind::Annotation,
                     RangePhase::Optimizer, kNoRow, kNoRow, 0});
    }
    reduce(root, b0 + 2900 * us, 400);
    const TimeNs o = t0 + 9000 * us;
    w.add_range({0, t.lanes.thread, kNoRow, o, o + 500 * us, w.intern("ss:opt:" + std::to_string(step)), RangeKind::Annotation,
                 RangePhase::Optimizer, kNoRow, kNoRow, 0});
    for (int g = 0; g < loop.optimizer_gathers; ++g) coll(kNoRow, o + (50 + 20 * g) * us, CollectiveType::AllGather, 8000);
  }
  w.finish();
}

struct Replayed {
  SimInputs in;
  SimResult result;
  CompiledStep step;
  int exec(const char* unit) const { return step.exec_of_unit[static_cast<std::size_t>(in.model.find_unit(unit))]; }
};

Replayed replay(const std::string& path) {
  SimInputRequest req;
  req.profile_path = path;
  Replayed r{load_sim_inputs(req), {}, {}};
  r.step = compile_step(r.in.model, r.in.recorded_plan, r.in.cluster);
  r.result = simulate(r.step);
  return r;
}

std::vector<std::int64_t> reductions_of(const Replayed& r, int exec) {
  std::vector<std::int64_t> bytes;
  for (const auto& op : r.result.ops)
    if (op.kind == OpKind::ReduceScatter && op.exec == exec) bytes.push_back(op.bytes);
  return bytes;
}

}  // namespace

TEST_CASE("a unit reduced in two parts a pass is replayed with both, each its share of the bytes", "[sim][replay]") {
  ss::test::TempDir dir;
  write_profile(dir.file("split.ssdb"), Loop{true});
  const Replayed r = replay(dir.file("split.ssdb"));
  const auto& split = r.in.model.units[static_cast<std::size_t>(r.in.model.find_unit("blocks.1"))].reduce_split;
  REQUIRE(split.size() == 2);
  CHECK(split[0] == Approx(0.99));
  CHECK(split[1] == Approx(0.01));
  CHECK(reductions_of(r, r.exec("blocks.1")) == std::vector<std::int64_t>{3960, 40});
  CHECK(reductions_of(r, r.exec("blocks.0")) == std::vector<std::int64_t>{4000});
  // The two collectives one after the other, each paying its own latency: longer than one.
  const ExecUnit& u = r.step.units[static_cast<std::size_t>(r.exec("blocks.1"))];
  CHECK(u.rs_split_ns.size() == 2);
  CHECK(u.rs_ns == u.rs_split_ns[0] + u.rs_split_ns[1]);
  CHECK(u.rs_ns > r.step.units[static_cast<std::size_t>(r.exec("blocks.0"))].rs_ns);
  // Per step: 5 all-gathers (the root once, each block twice) and 4 reduce-scatters, as measured.
  CHECK(r.in.fsdp_collectives_per_step == std::vector<StepCollectives>(3, StepCollectives{5, 4}));
  const CollectiveCheck c = check_replay(r.in, r.result, true).collectives;
  CHECK(c.checked);
  CHECK(c.match);
  CHECK(c.replay == StepCollectives{5, 4});
}

TEST_CASE("a unit reduced again with the same bytes is no split, and the check says the replay differs", "[sim][replay]") {
  ss::test::TempDir dir;
  write_profile(dir.file("again.ssdb"), Loop{false, true});
  const Replayed r = replay(dir.file("again.ssdb"));
  CHECK(r.in.model.units[static_cast<std::size_t>(r.in.model.find_unit("blocks.1"))].reduce_split.empty());
  CHECK(reductions_of(r, r.exec("blocks.1")) == std::vector<std::int64_t>{4000});
  const CollectiveCheck c = check_replay(r.in, r.result, true).collectives;
  CHECK_FALSE(c.match);
  CHECK(c.most == StepCollectives{5, 4});
  CHECK(c.replay == StepCollectives{5, 3});
  CHECK(c.warning.find("does not model this loop") != std::string::npos);
}

TEST_CASE("a run with tensor parallelism beside FSDP is said to be one", "[sim][replay]") {
  // torchtitan with --parallelism.tensor-parallel-degree 2 on 2 ranks: its sequence-parallel
  // all-gathers and reduce-scatters were counted as FSDP's (38 + 38 a step against a replay of 38 +
  // 8) and the check said only that the loop was not modelled; now it names the parallelism.
  ss::test::TempDir dir;
  Loop tp;
  tp.model_parallel = "tp=2";
  write_profile(dir.file("tp.ssdb"), tp);
  const Replayed r = replay(dir.file("tp.ssdb"));
  CHECK(r.in.model_parallel == "tp=2");
  const CollectiveCheck c = check_replay(r.in, r.result, true).collectives;
  CHECK_FALSE(c.match);
  CHECK(c.most == StepCollectives{7, 5});
  CHECK(c.warning.find("(tp=2: tensor, context or expert parallelism beside FSDP)") != std::string::npos);
  CHECK(c.warning.find("simulate --model") != std::string::npos);
  write_profile(dir.file("plain.ssdb"), Loop{});
  CHECK(replay(dir.file("plain.ssdb")).in.model_parallel.empty());
}

TEST_CASE("tensor parallelism beside FSDP, FSDP's group named, is replayed with FSDP's collectives over its group", "[sim][replay]") {
  // dp 2 x tp 2 (scripts/fsdp_tp_train.py --tp 2 --sequence-parallel on 4 ranks): FSDP's
  // collectives are those on its group; the sequence-parallel ones, of the same kinds, are replayed
  // as measured. FSDP shards over 2 of the 4 ranks, each unit what FSDP gathers (its TP shard).
  ss::test::TempDir dir;
  Loop tp;
  tp.model_parallel = "tp=2";
  tp.fsdp_group = "1";
  write_profile(dir.file("tp.ssdb"), tp);
  const Replayed r = replay(dir.file("tp.ssdb"));
  CHECK(r.in.model.recorded_model_parallel == 2);
  CHECK(r.step.world == 4);
  CHECK(r.step.shard == 2);
  CHECK(r.in.model.units[static_cast<std::size_t>(r.in.model.find_unit("blocks.0"))].param_count == 1000);
  CHECK(r.in.model.units[static_cast<std::size_t>(r.in.model.find_unit(""))].param_count == 100);
  CHECK(r.in.model.master_dtype_bytes == 4);
  CHECK(r.in.other_collectives == 12);  // 2 all-gathers and 2 reduce-scatters a step, 3 steps used
  const CollectiveCheck c = check_replay(r.in, r.result, true).collectives;
  CHECK(c.match);
  CHECK(c.most == StepCollectives{5, 3});
  CHECK(c.warning.empty());
  // Each block's gather: its 1000 parameters in fp32; its shard on this rank half of them.
  for (const auto& op : r.result.ops)
    if (op.kind == OpKind::AllGather && op.exec == r.exec("blocks.0")) CHECK(op.bytes == 4000);
  CHECK(r.result.peak_by_category[static_cast<std::size_t>(MemCat::ShardedParam)] == (100 + 2 * 1000) * 4 / 2);
  // Named, but none of the rank's collectives on it (a profile whose collectives name no group):
  // FSDP's collectives cannot be told apart, and the replay models FSDP alone, as before.
  tp.fsdp_group = "9";
  write_profile(dir.file("unnamed.ssdb"), tp);
  const Replayed u = replay(dir.file("unnamed.ssdb"));
  CHECK(u.in.model.recorded_model_parallel == 1);
  CHECK(u.step.shard == 4);
}

TEST_CASE("FSDP over one rank beside tensor parallelism: no FSDP collective, the dtypes from the hooks", "[sim][replay]") {
  // torchtitan's --parallelism.tensor-parallel-degree 2 on 2 ranks: FSDP over a mesh of one rank
  // issues nothing, so no collective tells the dtype FSDP gathers in; a CPU run of fp32 parameters
  // had been replayed gathering bf16 (its unsharded units half their bytes).
  ss::test::TempDir dir;
  Loop tp;
  tp.model_parallel = "tp=2";
  tp.fsdp_group = "1";
  tp.fsdp_over_one_rank = true;
  tp.fsdp_dtype_bytes = "4 4";
  write_profile(dir.file("tp.ssdb"), tp);
  const Replayed r = replay(dir.file("tp.ssdb"));
  CHECK(r.step.world == 2);
  CHECK(r.step.shard == 1);
  CHECK(r.in.model.param_dtype_bytes == 4);
  CHECK(r.in.model.reduce_dtype_bytes == 4);
  const CollectiveCheck c = check_replay(r.in, r.result, true).collectives;
  CHECK(c.match);
  CHECK(c.replay == StepCollectives{0, 0});
  CHECK(r.result.peak_by_category[static_cast<std::size_t>(MemCat::ShardedParam)] == (100 + 2 * 1000) * 4);
  // Without the hooks' dtypes: the simulator's default (bf16 gathers).
  tp.fsdp_dtype_bytes = nullptr;
  write_profile(dir.file("unknown.ssdb"), tp);
  CHECK(replay(dir.file("unknown.ssdb")).in.model.param_dtype_bytes == 2);
}

TEST_CASE("an optimizer step between two backward ranges is counted; a zero_grad there is not", "[sim][replay]") {
  ss::test::TempDir dir;
  write_profile(dir.file("gan.ssdb"), Loop{false, true, "Optimizer.step#AdamW.step"});
  const Replayed gan = replay(dir.file("gan.ssdb"));
  CHECK(gan.in.steps_with_optimizer_between_backwards == 3);
  CHECK(check_replay(gan.in, gan.result, true).collectives.warning.find("a GAN") != std::string::npos);
  write_profile(dir.file("zero.ssdb"), Loop{false, false, "Optimizer.zero_grad#AdamW.zero_grad"});
  const Replayed zero = replay(dir.file("zero.ssdb"));
  CHECK(zero.in.steps_with_optimizer_between_backwards == 0);
  CHECK(check_replay(zero.in, zero.result, true).collectives.match);
  write_profile(dir.file("plain.ssdb"), Loop{});
  CHECK(replay(dir.file("plain.ssdb")).in.steps_with_optimizer_between_backwards == 0);
}

TEST_CASE("the optimizer's own all-gathers are not FSDP's: replayed as measured, not counted", "[sim][replay]") {
  // Muon gathers each matrix whole in its step (on a CPU trace: inside the optimizer's range,
  // outside FSDP's and the modules'). Counted as FSDP's, the check had found 9 all-gathers a step
  // for the replay's 5.
  ss::test::TempDir dir;
  write_profile(dir.file("muon.ssdb"), Loop{false, false, nullptr, 4});
  const Replayed r = replay(dir.file("muon.ssdb"));
  CHECK(r.in.fsdp_collectives_per_step == std::vector<StepCollectives>(3, StepCollectives{5, 3}));
  CHECK(r.in.other_collectives == 3 * 4);
  CHECK(check_replay(r.in, r.result, true).collectives.match);
}
