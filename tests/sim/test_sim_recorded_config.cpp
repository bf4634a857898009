// A replay of a recorded run reproduces that run's configuration (issue "ShardScope on the trainers
// people use", item 6): the units' recorded reshard_after_forward, a unit of several modules
// (fully_shard([norm, head])), the trainer's extra forward all-gathers (FSDP's own ranges, or the
// collectives without them, where a prefetch is not one), and activation checkpointing's recompute
// allocations. Hand-made CPU-style profiles, counted exactly.
#include <catch2/catch.hpp>

#include <array>
#include <cstdlib>
#include <map>

#include <fstream>

#include "profiler/sim/profile_extract.h"
#include "profiler/sim/sim_inputs.h"
#include "profiler/sim/step_simulator.h"
#include "storage/profile_reader.h"
#include "storage/profile_writer.h"
#include "tests/support/test_paths.h"

using namespace ss;
using namespace ss::sim;

namespace {

constexpr TimeNs us = 1000;

// Rank 0 of two, on a CPU; returns its training thread.
RowId add_cpu_rank(ProfileWriter& w) {
  RankInfo ri;
  ri.world_size = 2;
  ri.gpu_name = "CPU";
  w.add_rank(ri);
  return w.add_thread({0, 1, "main"});
}

// What a profile's memory events show besides its ranges (write_profile).
enum class Events {
  None,
  // blocks.1 checkpointed the way torchtitan's selective checkpointing runs: its forward saves
  // 1000 B; its rerun in backward makes 5000 B it keeps to its backward's end and 3000 B it frees
  // before the rerun ends, and frees the 1000 B it consumed. And a chunked loss: the loss's 700 B
  // are made outside every module after the head's forward, the head runs again for a chunk
  // inside the backward, and the loss's backward frees them.
  CheckpointedChunkedLoss,
  // torchtitan's chunked loss as it runs: the head's forward and then its backward once a chunk
  // (two chunks), before the backward of the rest: forward and backward ranges of the head
  // alternate, and each chunk's loss runs between them, in no module range.
  ChunkedLossBackwardPerChunk,
  GradsKept,   // the sharded gradients (6200 B) made in the first step's backward, never freed
  GradsFreed,  // made in each step's backward and freed after its optimizer step
  GradsFreedBeforeBackward,  // made in each step's backward, freed in the next step after its forward
  // The loss's 700 B as in CheckpointedChunkedLoss, and 400 B of output made outside every module
  // before it (`logits = model(x).float()`) that the loop holds: freed in the next step, after
  // its head's forward; the last step's never. And 200 B more the loop frees after the backward
  // (`del out` after loss.backward()), before the optimizer step.
  HeldOutput,
  // blocks.1's backward (6000-6800 us) in the order a real one has: handed a 600 B gradient made in
  // blocks.2's backward, it frees its first saved tensor (1000 B), makes 2500 B of temporaries
  // and an 800 B weight gradient, frees the gradient it was handed and its temporaries, then its
  // last saved tensor (3000 B); its post-backward takes the weight gradient. At its highest it is
  // 2500 + 800 - 1000 = 2300 above its start, its temporaries alone 2500.
  BackwardOrder,
  // The same, blocks.1 checkpointed: its forward saves nothing, a rerun (6000-6100 us) rebuilds
  // the two tensors and makes and frees 500 B more; the backward follows from 6100 us.
  BackwardOrderCheckpointed,
  // BackwardOrder with a unit nested in blocks.1 ("blocks.1.fc", 100 parameters; FSDP2 on a
  // block's Linear as well as on the block): its backward (6400-6600 us) makes 8000 B of
  // temporaries and a 900 B weight gradient, frees the temporaries, hands blocks.1 a 300 B gradient
  // that blocks.1 frees at 6700, and its post-backward (6600-6610) takes its weight gradient.
  NestedBackward,
};

// One rank of two: a root unit holding only units, blocks.0..2 (each 1000 parameters), and a unit
// of two modules, norm (10 parameters, the unit) and head (90, pointing to norm). Module ranges in
// forward and backward for every unit; blocks.2 recorded with `policy2`. `meta`: the profile's
// meta rows besides (the hooks' per-unit entries).
void write_profile(const std::string& path, const std::string& policy2, int extra_norm_gathers, Events events,
                   const std::map<std::string, std::string>& meta = {}) {
  ProfileWriter w(path, Origin{});
  for (const auto& [k, v] : meta) w.set_meta(k, v);
  const RowId thread = add_cpu_rank(w);
  const RowId root = w.add_module({kNoRow, "", "Model", 3100, 12400, true, kNoRow, "false"});
  std::vector<RowId> mods;
  for (int i = 0; i < 3; ++i)
    mods.push_back(w.add_module({root, "blocks." + std::to_string(i), "Block", 1000, 4000, true, kNoRow,
                                 i == 2 ? policy2 : "true"}));
  const RowId norm = w.add_module({root, "norm", "Norm", 10, 40, true, kNoRow, "true"});
  const RowId head = w.add_module({root, "head", "Linear", 90, 360, false, norm, "true"});
  mods.push_back(norm);
  mods.push_back(head);
  const RowId fc = events == Events::NestedBackward
                       ? w.add_module({mods[1], "blocks.1.fc", "Linear", 100, 400, true, kNoRow, "true"})
                       : kNoRow;
  for (int step = 0; step < 2; ++step) {
    const TimeNs t0 = step * 10'000 * us;
    w.add_step({0, step, t0, t0 + 10'000 * us});
    auto range = [&](RowId m, TimeNs a, TimeNs b, RangePhase ph, RangeKind kind = RangeKind::Module,
                     const char* name = "m") {
      w.add_range({0, thread, kNoRow, t0 + a * us, t0 + b * us, w.intern(name), kind, ph, m, kNoRow, 0});
    };
    auto memory = [&](TimeNs at, std::int64_t address, std::int64_t bytes, MemoryCategory c, RowId m) {
      w.add_memory_event({0, t0 + at * us, address, bytes, c, m, kNoRow});
    };
    // Forward: blocks 0-2, norm, head; backward in reverse.
    for (int i = 0; i < 5; ++i) range(mods[static_cast<std::size_t>(i)], 100 + i * 500, 500 + i * 500, RangePhase::Forward);
    for (int i = 0; i < 5; ++i) range(mods[static_cast<std::size_t>(4 - i)], 3000 + i * 1000, 3800 + i * 1000, RangePhase::Backward);
    for (int k = 0; k < 1 + extra_norm_gathers; ++k)
      range(norm, 2100 + k * 100, 2150 + k * 100, RangePhase::Forward, RangeKind::Fsdp, "FSDP::all_gather (norm, head)");
    constexpr auto act = MemoryCategory::Activation;
    if (events == Events::CheckpointedChunkedLoss) {
      memory(700, 0x3000, 1000, act, mods[1]);  // saved in blocks.1's forward
      range(mods[1], 6000, 6200, RangePhase::Recompute);
      memory(6100, 0x1000, 5000, act, mods[1]);
      memory(6110, 0x2000, 3000, act, mods[1]);
      memory(6150, 0x2000, -3000, act, mods[1]);
      memory(6160, 0x3000, -1000, act, mods[1]);
      memory(6700, 0x1000, -5000, act, mods[1]);
      memory(2600, 0x4000, 700, act, kNoRow);  // the loss, after the head's forward
      range(head, 3050, 3100, RangePhase::Forward);  // the head again, for a chunk of the loss
      memory(3200, 0x4000, -700, act, kNoRow);
    }
    if (events == Events::HeldOutput) {
      if (step > 0) memory(2560, 0x6000, -400, act, kNoRow);  // the previous step's output
      memory(2550, 0x6000 + step, 400, act, kNoRow);
      memory(2570, 0x7000, 200, act, kNoRow);
      memory(9000, 0x7000, -200, act, kNoRow);  // the backward ended at 7800
      memory(2600, 0x4000, 700, act, kNoRow);
      memory(3200, 0x4000, -700, act, kNoRow);
    }
    if (events == Events::NestedBackward) {
      range(fc, 700, 800, RangePhase::Forward);
      range(fc, 6400, 6600, RangePhase::Backward);
      memory(6450, 0x9000, 8000, MemoryCategory::Temporary, fc);
      memory(6460, 0x9100, 900, MemoryCategory::Gradient, fc);
      memory(6500, 0x9000, -8000, MemoryCategory::Temporary, fc);
      memory(6550, 0x9200, 300, MemoryCategory::Temporary, fc);  // the gradient it hands blocks.1
      range(fc, 6600, 6610, RangePhase::Backward, RangeKind::Fsdp, "FSDP::post_backward_reduce (blocks.1.fc)");
      memory(6605, 0x9100, -900, MemoryCategory::Gradient, fc);
      memory(6700, 0x9200, -300, MemoryCategory::Temporary, mods[1]);
    }
    if (events == Events::BackwardOrder || events == Events::BackwardOrderCheckpointed ||
        events == Events::NestedBackward) {
      const bool rerun = events == Events::BackwardOrderCheckpointed;
      const TimeNs b = rerun ? 6100 : 6000;  // where blocks.1's own backward work starts
      if (rerun) {
        range(mods[1], 6000, 6100, RangePhase::Recompute);
        memory(6010, 0x8000, 1000, act, mods[1]);
        memory(6020, 0x8100, 3000, act, mods[1]);
        memory(6030, 0x8500, 500, act, mods[1]);
        memory(6040, 0x8500, -500, act, mods[1]);
      } else {
        memory(700, 0x8000, 1000, act, mods[1]);
        memory(800, 0x8100, 3000, act, mods[1]);
      }
      memory(5500, 0x8200, 600, MemoryCategory::Temporary, mods[2]);  // blocks.2's input gradient
      memory(b + 50, 0x8000, -1000, act, mods[1]);
      memory(b + 100, 0x8300, 2500, MemoryCategory::Temporary, mods[1]);
      memory(b + 150, 0x8400, 800, MemoryCategory::Gradient, mods[1]);
      memory(b + 200, 0x8200, -600, MemoryCategory::Temporary, mods[1]);
      memory(b + 250, 0x8300, -2500, MemoryCategory::Temporary, mods[1]);
      memory(b + 300, 0x8100, -3000, act, mods[1]);
      range(mods[1], 6750, 6760, RangePhase::Backward, RangeKind::Fsdp, "FSDP::post_backward_reduce (blocks.1)");
      memory(6755, 0x8400, -800, MemoryCategory::Gradient, mods[1]);
      memory(6756, 0x8600, 400, MemoryCategory::Gradient, kNoRow);  // its sharded gradient, after the post-backward
    }
    if (events == Events::ChunkedLossBackwardPerChunk) {
      range(head, 2600, 2700, RangePhase::Backward);  // the first chunk's; the loss in [2500, 2600]
      range(head, 2800, 2900, RangePhase::Forward);   // the second chunk's head; its loss in [2900, 3000]
    }
    if ((events == Events::GradsKept && step == 0) || events == Events::GradsFreed)
      memory(5000, 0x5000, 6200, MemoryCategory::Gradient, kNoRow);
    if (events == Events::GradsFreed) memory(9900, 0x5000, -6200, MemoryCategory::Gradient, kNoRow);
    if (events == Events::GradsFreedBeforeBackward) {
      if (step > 0) memory(2900, 0x5000, -6200, MemoryCategory::Gradient, kNoRow);
      memory(5000, 0x5000, 6200, MemoryCategory::Gradient, kNoRow);
    }
  }
  w.finish();
}

SimResult replay(const std::string& path, ProfileInput* out = nullptr) {
  ProfileInput in = extract_profile(load_profile(path));
  add_activations_from_profile(in, path);
  ClusterModel c;
  c.world_size = 2;
  const SimResult r = simulate(compile_step(in.model, FsdpPlan{}, c));
  if (out) *out = in;
  return r;
}

}  // namespace

TEST_CASE("the recorded reshard_after_forward is the replay's baseline; a plan still changes it", "[sim][replay]") {
  ss::test::TempDir dir;
  write_profile(dir.file("true.ssdb"), "true", 0, Events::None);
  write_profile(dir.file("false.ssdb"), "false", 0, Events::None);
  // blocks 0-2 and the norm+head unit: 4 gathers in forward, 4 again in backward; the root holds
  // no parameters of its own and gathers nothing.
  CHECK(replay(dir.file("true.ssdb")).all_gathers == 8);
  CHECK(replay(dir.file("true.ssdb")).reduce_scatters == 4);
  // blocks.2 recorded unsharded after forward: no backward re-gather for it.
  ProfileInput in;
  CHECK(replay(dir.file("false.ssdb"), &in).all_gathers == 7);
  FsdpPlan resharded;
  resharded.resharded = {"blocks.2"};
  ClusterModel c;
  c.world_size = 2;
  CHECK(simulate(compile_step(in.model, resharded, c)).all_gathers == 8);
}

TEST_CASE("the job's explicit prefetch lists are the replay's baseline; a plan still sets its own", "[sim][replay]") {
  ss::test::TempDir dir;
  // PyTorch's FSDP2 example's lists, two ahead (hooks.py, fsdp2_prefetch_lists): each block
  // prefetches the next two in forward and the two before it in backward. blocks.2's forward list
  // names a module that is not a unit of the model: dropped whole, as is a list of an unknown unit.
  write_profile(dir.file("lists.ssdb"), "true", 0, Events::None,
                {{"rank0.forward_prefetch.blocks.0", "blocks.1 blocks.2"},
                 {"rank0.forward_prefetch.blocks.1", "blocks.2 norm"},
                 {"rank0.forward_prefetch.blocks.2", "norm head"},
                 {"rank0.forward_prefetch.blocks.9", "norm"},
                 {"rank0.backward_prefetch.norm", "blocks.2 blocks.1"},
                 {"rank0.backward_prefetch.blocks.2", "blocks.1 blocks.0"},
                 {"rank1.backward_prefetch.blocks.1", "blocks.0"}});  // another rank's
  using Lists = std::map<std::string, std::vector<std::string>>;
  const Lists fwd{{"blocks.0", {"blocks.1", "blocks.2"}}, {"blocks.1", {"blocks.2", "norm"}}};
  const Lists bwd{{"norm", {"blocks.2", "blocks.1"}}, {"blocks.2", {"blocks.1", "blocks.0"}}};
  const ProfileInput pi = extract_profile(load_profile(dir.file("lists.ssdb")));
  CHECK(pi.forward_prefetch == fwd);
  CHECK(pi.backward_prefetch == bwd);
  SimInputRequest req;
  req.profile_path = dir.file("lists.ssdb");
  const SimInputs in = load_sim_inputs(req);
  CHECK(in.recorded_plan.forward_prefetch == fwd);
  CHECK(in.plan.forward_prefetch == fwd);
  CHECK(in.plan.backward_prefetch == bwd);
  // The replay issues them so: blocks.0's pre-forward prefetches blocks.1 and blocks.2.
  const CompiledStep step = compile_step(in.model, in.plan, in.cluster);
  const auto exec_of = [&](const std::string& unit) {
    return step.units[static_cast<std::size_t>(step.exec_of_unit[static_cast<std::size_t>(in.model.find_unit(unit))])];
  };
  std::vector<std::string> targets;
  for (int e : exec_of("blocks.0").fwd_prefetch) targets.push_back(step.units[static_cast<std::size_t>(e)].name);
  CHECK(targets == std::vector<std::string>{"blocks.1", "blocks.2"});
  CHECK(exec_of("blocks.2").has_bwd_list);
  CHECK(!exec_of("blocks.0").has_bwd_list);  // FSDP2's own: the next unit in backward order
  // A plan that sets a phase's lists replaces the job's for that phase; the other stays the job's.
  {
    std::ofstream(dir.file("plan.json")) << R"({"forward_prefetch": {}})";
  }
  req.plan_path = dir.file("plan.json");
  const SimInputs planned = load_sim_inputs(req);
  CHECK(planned.plan.forward_prefetch.empty());
  CHECK(planned.plan.backward_prefetch == bwd);
  CHECK(planned.recorded_plan.forward_prefetch == fwd);
  // Without the hooks' entries (an import, an older recording): FSDP2's own order.
  write_profile(dir.file("none.ssdb"), "true", 0, Events::None);
  const ProfileInput none = extract_profile(load_profile(dir.file("none.ssdb")));
  CHECK(none.forward_prefetch.empty());
  CHECK(none.backward_prefetch.empty());
}

TEST_CASE("a unit of two modules is one unit with both modules' parameters", "[sim][replay]") {
  ss::test::TempDir dir;
  write_profile(dir.file("p.ssdb"), "true", 0, Events::None);
  ProfileInput in;
  replay(dir.file("p.ssdb"), &in);
  std::map<std::string, std::int64_t> params;
  for (const auto& u : in.model.units) params[u.name] = u.param_count;
  CHECK(params == std::map<std::string, std::int64_t>{{"", 0}, {"blocks.0", 1000}, {"blocks.1", 1000}, {"blocks.2", 1000}, {"norm", 100}});
}

TEST_CASE("the trainer's extra forward all-gathers of a unit are replayed", "[sim][replay]") {
  ss::test::TempDir dir;
  write_profile(dir.file("p.ssdb"), "true", 2, Events::None);  // FSDP gathered norm+head three times in forward
  ProfileInput in;
  CHECK(replay(dir.file("p.ssdb"), &in).all_gathers == 10);
  for (const auto& u : in.model.units) CHECK(u.extra_fwd_gathers == (u.name == "norm" ? 2 : 0));
}

namespace {

// The same model without FSDP2's ranges (FSDP1, SimpleFSDP, NVTX on a GPU): the all-gathers are
// counted from the collectives, by the module their kernel ran under. With `prefetched`, each
// backward gather runs under the unit that precedes it in backward (FSDP1's BACKWARD_PRE:
// blocks.1's under blocks.2, blocks.2's under norm); `regathers` more forward gathers of norm.
void write_gathers_profile(const std::string& path, bool prefetched, int regathers) {
  ProfileWriter w(path, Origin{});
  const RowId thread = add_cpu_rank(w);
  const RowId stream = w.add_stream({0, 0, 1, StreamKind::Nccl, "gloo"});
  const RowId root = w.add_module({kNoRow, "", "Model", 3100, 12400, true, kNoRow, "false"});
  std::vector<RowId> units;
  for (int i = 0; i < 3; ++i)
    units.push_back(w.add_module({root, "blocks." + std::to_string(i), "Block", 1000, 4000, true, kNoRow, "true"}));
  units.push_back(w.add_module({root, "norm", "Norm", 100, 400, true, kNoRow, "true"}));
  const std::uint32_t ag = w.intern("gloo:all_gather");
  for (int step = 0; step < 2; ++step) {
    const TimeNs t0 = step * 10'000 * us;
    w.add_step({0, step, t0, t0 + 10'000 * us});
    auto gather = [&](RowId module, TimeNs at, std::int64_t bytes) {
      const TimeNs a = t0 + at * us;
      const RowId k = w.add_kernel({0, stream, a, a + 10 * us, ag, 0, kNoRow, KernelCategory::Collective, module, 0});
      w.add_collective({0, k, CollectiveType::AllGather, bytes, 0, kNoRow, 2, -1, a, a + 10 * us});
    };
    for (int i = 0; i < 4; ++i) {
      const RowId u = units[static_cast<std::size_t>(i)];
      w.add_range({0, thread, kNoRow, t0 + (100 + i * 500) * us, t0 + (500 + i * 500) * us, w.intern("m"), RangeKind::Module,
                   RangePhase::Forward, u, kNoRow, 0});
      gather(u, 110 + i * 500, i == 3 ? 400 : 4000);
    }
    for (int k = 0; k < regathers; ++k) gather(units[3], 1700 + k * 20, 400);
    for (int i = 0; i < 4; ++i) {  // backward: norm, blocks.2, .1, .0
      const std::size_t u = static_cast<std::size_t>(3 - i);
      const TimeNs a = 3000 + i * 1000;
      w.add_range({0, thread, kNoRow, t0 + a * us, t0 + (a + 800) * us, w.intern("m"), RangeKind::Module, RangePhase::Backward,
                   units[u], kNoRow, 0});
      if (!prefetched || u == 3) gather(units[u], a + 10, u == 3 ? 400 : 4000);  // its own, under its range
      if (prefetched && u > 0) gather(units[u], a + 20, 4000);  // the next unit's, under this one's
    }
  }
  w.finish();
}

}  // namespace

TEST_CASE("a prefetch under another unit's range is not a re-gather; gathers beyond the step's are", "[sim][replay]") {
  ss::test::TempDir dir;
  auto extras = [&](const std::string& path, int* all_gathers) {
    ProfileInput in = extract_profile(load_profile(path));
    add_gathers_from_profile(in, path);
    ClusterModel c;
    c.world_size = 2;
    *all_gathers = simulate(compile_step(in.model, FsdpPlan{}, c)).all_gathers;
    std::map<std::string, int> out;
    for (const auto& u : in.model.units) out[u.name] = u.extra_fwd_gathers;
    return out;
  };
  const std::map<std::string, int> none{{"", 0}, {"blocks.0", 0}, {"blocks.1", 0}, {"blocks.2", 0}, {"norm", 0}};
  int n = 0;
  // Each unit gathered under its own range: 2 per unit (forward, backward), 8 in all.
  write_gathers_profile(dir.file("own.ssdb"), false, 0);
  CHECK(extras(dir.file("own.ssdb"), &n) == none);
  CHECK(n == 8);
  // Prefetched: norm counts 3 and blocks.0 1; the step's 8 are what the model makes. Before: an
  // extra forward gather of norm (9).
  write_gathers_profile(dir.file("prefetch.ssdb"), true, 0);
  CHECK(extras(dir.file("prefetch.ssdb"), &n) == none);
  CHECK(n == 8);
  // Two more forward gathers of norm (a chunked loss): those are the trainer's, replayed.
  write_gathers_profile(dir.file("regather.ssdb"), true, 2);
  auto with = none;
  with["norm"] = 2;
  CHECK(extras(dir.file("regather.ssdb"), &n) == with);
  CHECK(n == 10);
}

namespace {

// Rank 0 of `world` (4 by default) with two units (blocks.0, blocks.1, 1000 parameters each): per
// step each unit gathers `gathered[i]` B in forward and backward and reduce-scatters `reduced[i]`
// B (fp32 by default) over a group of 2. `after_reduce`: what follows each reduce-scatter on a
// group of 2: HSDP's all-reduce of the 2000 B shard, or a tensor-parallel all-reduce of 3000 B of
// activations. `init_gather`: an all-gather of that many bytes before the first step
// (initialisation). `groups0`: the hooks' parameter groups of blocks.0 ("" for none).
struct GroupProfile {
  int world = 4;
  std::int64_t after_reduce = 0;
  std::array<std::int64_t, 2> gathered{4000, 4000}, reduced{4000, 4000};
  std::int64_t init_gather = 0;
  std::string groups0, groups1;  // rank 0's param_groups meta of blocks.0 / blocks.1 (empty: none)
  // Per unit, a second all-gather and reduce-scatter of this size after its own: a group on a
  // mesh of its own that has more than one rank (torchtitan's experts at dp_shard / ep > 1).
  std::array<std::int64_t, 2> apart{0, 0};
  // Per step, after the backward: clip_grad_norm_'s all-reduce of this many bytes (0: none), over
  // as many ranks as the replicas' all-reduces: not FSDP's (its bytes are no shard's).
  std::int64_t norm_all_reduce = 0;
  std::map<std::string, std::string> meta;  // more profile meta, as the hooks write it (rank0.unit_input.blocks.1)
  // The root's own modules, each with a forward range per step at this offset in us (blocks.0
  // runs 100-500, blocks.1 600-1000; < 0: no range): an embedding of 600 parameters and a head
  // of 400. The root row then counts 3000 parameters, 1000 of them its own.
  bool root_modules = false;
  int embedding_at = 50, head_at = 1200;
};

void write_group_profile(const std::string& path, const GroupProfile& g) {
  ProfileWriter w(path, Origin{});
  RankInfo ri;
  ri.world_size = g.world;
  ri.gpu_name = "CPU";
  w.add_rank(ri);
  const RowId thread = w.add_thread({0, 1, "main"});
  const RowId stream = w.add_stream({0, 0, 1, StreamKind::Nccl, "gloo"});
  const RowId root = w.add_module({kNoRow, "", "Model", g.root_modules ? 3000 : 2000, g.root_modules ? 12000 : 8000, true, kNoRow, "false"});
  std::vector<std::pair<RowId, int>> own;  // the root's modules and their forward offsets
  if (g.root_modules) {
    own.emplace_back(w.add_module({root, "embedding", "Embedding", 600, 2400, false, kNoRow, ""}), g.embedding_at);
    own.emplace_back(w.add_module({root, "head", "Linear", 400, 1600, false, kNoRow, ""}), g.head_at);
  }
  std::vector<RowId> units;
  for (int i = 0; i < 2; ++i)
    units.push_back(w.add_module({root, "blocks." + std::to_string(i), "Block", 1000, 4000, true, kNoRow, "true"}));
  if (!g.groups0.empty()) w.set_meta("rank0.param_groups.blocks.0", g.groups0);
  if (!g.groups1.empty()) w.set_meta("rank0.param_groups.blocks.1", g.groups1);
  for (const auto& [key, value] : g.meta) w.set_meta(key, value);
  const std::uint32_t name = w.intern("gloo");
  auto coll = [&](RowId module, TimeNs a, CollectiveType type, std::int64_t bytes) {
    const RowId k = w.add_kernel({0, stream, a, a + 10 * us, name, 0, kNoRow, KernelCategory::Collective, module, 0});
    w.add_collective({0, k, type, bytes, 0, kNoRow, 2, -1, a, a + 10 * us});
  };
  if (g.init_gather > 0) coll(units[0], 500 * us, CollectiveType::AllGather, g.init_gather);
  for (int step = 0; step < 2; ++step) {
    const TimeNs t0 = (step + 1) * 10'000 * us;
    w.add_step({0, step, t0, t0 + 10'000 * us});
    for (const auto& [module, at] : own)
      if (at >= 0)
        w.add_range({0, thread, kNoRow, t0 + at * us, t0 + (at + 40) * us, w.intern("m"), RangeKind::Module, RangePhase::Forward, module,
                     kNoRow, 0});
    for (std::size_t i = 0; i < 2; ++i) {
      const RowId u = units[i];
      const TimeNs f = 100 + TimeNs(i) * 500, b = 3000 + (1 - TimeNs(i)) * 1000;
      w.add_range({0, thread, kNoRow, t0 + f * us, t0 + (f + 400) * us, w.intern("m"), RangeKind::Module, RangePhase::Forward, u, kNoRow, 0});
      w.add_range({0, thread, kNoRow, t0 + b * us, t0 + (b + 800) * us, w.intern("m"), RangeKind::Module, RangePhase::Backward, u, kNoRow, 0});
      coll(u, t0 + (f + 10) * us, CollectiveType::AllGather, g.gathered[i]);
      coll(u, t0 + (b + 10) * us, CollectiveType::AllGather, g.gathered[i]);
      coll(u, t0 + (b + 500) * us, CollectiveType::ReduceScatter, g.reduced[i]);
      if (g.apart[i] > 0) {
        // FSDP2's ranges of the two groups' forward gathers, named as it names them.
        for (const char* group : {"[pg=4]", "[pg=2]"}) {
          const std::string range = "FSDP::all_gather (blocks." + std::to_string(i) + ") " + group;
          w.add_range({0, thread, kNoRow, t0 + (f + 5) * us, t0 + (f + 40) * us, w.intern(range), RangeKind::Fsdp,
                       RangePhase::Forward, u, kNoRow, 0});
        }
        coll(u, t0 + (f + 30) * us, CollectiveType::AllGather, g.apart[i]);
        coll(u, t0 + (b + 30) * us, CollectiveType::AllGather, g.apart[i]);
        coll(u, t0 + (b + 520) * us, CollectiveType::ReduceScatter, g.apart[i]);
      }
      coll(u, t0 + (b + 600) * us, CollectiveType::AllReduce, g.after_reduce);
    }
    if (g.norm_all_reduce > 0) coll(kNoRow, t0 + 6000 * us, CollectiveType::AllReduce, g.norm_all_reduce);
  }
  w.finish();
}

}  // namespace

TEST_CASE("a recorded HSDP run replays as HSDP; a dp x tp run does not; a plan still decides", "[sim][replay]") {
  ss::test::TempDir dir;
  GroupProfile hsdp_run, tp_run;
  hsdp_run.after_reduce = 2000;
  hsdp_run.norm_all_reduce = 112;
  tp_run.after_reduce = 3000;
  write_group_profile(dir.file("hsdp.ssdb"), hsdp_run);
  write_group_profile(dir.file("tp.ssdb"), tp_run);
  CHECK(extract_profile(load_profile(dir.file("hsdp.ssdb"))).recorded_hsdp_replicate == 2);
  CHECK(extract_profile(load_profile(dir.file("tp.ssdb"))).recorded_hsdp_replicate == 1);
  SimInputRequest req;
  req.profile_path = dir.file("hsdp.ssdb");
  SimInputs in = load_sim_inputs(req);
  CHECK(in.plan.hsdp_replicate == 2);
  // Shard groups of 2 and their replicas' all-reduce, as recorded: one per unit and step.
  const SimResult r = simulate(compile_step(in.model, in.plan, in.cluster));
  CHECK(r.all_gathers == 4);
  CHECK(r.reduce_scatters == 2);
  CHECK(r.all_reduces == 2);
  // The gradient norm's all-reduce is the loop's, replayed as measured.
  CHECK(in.other_collectives == 1);
  CHECK(extract_profile(load_profile(dir.file("tp.ssdb"))).other_collectives == 2);  // the TP all-reduces
  {
    std::ofstream(dir.file("plain.json")) << R"({"hsdp_replicate": 1})";
  }
  req.plan_path = dir.file("plain.json");
  CHECK(load_sim_inputs(req).plan.hsdp_replicate == 1);
  // Each fit sample is timed over the group it ran on (2 ranks here), not the world (4).
  const ProfileInput hsdp = extract_profile(load_profile(dir.file("hsdp.ssdb")));
  REQUIRE(hsdp.collectives.size() == 9);  // the second step's (the first is warm-up), the norm's all-reduce too
  for (const auto& c : hsdp.collectives) CHECK(c.group_size == 2);
}

TEST_CASE("a unit's recorded forward input is what checkpointing keeps and a pipeline stage sends", "[sim][replay]") {
  // The hooks write each unit's forward input that needs a gradient (hooks.py, _write_unit_input).
  // Before, a profile had none: a checkpointing what-if kept nothing of a block, a pipeline sent 0 B.
  ss::test::TempDir dir;
  GroupProfile g;
  g.meta = {{"rank0.unit_input.blocks.1", "16384"}, {"rank0.unit_input.blocks.0", "16x"}, {"rank0.unit_input.", "512"},
            {"rank1.unit_input.blocks.0", "999"}};
  write_group_profile(dir.file("inputs.ssdb"), g);
  const ProfileInput in = extract_profile(load_profile(dir.file("inputs.ssdb")));
  std::map<std::string, std::int64_t> inputs;
  for (const auto& sg : in.model.segments) inputs[in.model.units[static_cast<std::size_t>(sg.unit)].name] = sg.input_bytes;
  // blocks.0's value is no number and rank 1's is another rank's: unknown (0), as the root's
  // input (token ids), which nothing keeps or sends.
  CHECK(inputs == std::map<std::string, std::int64_t>{{"", 0}, {"blocks.0", 0}, {"blocks.1", 16384}});
  // Two stages, the second from blocks.1 on: the first sends it that input per micro-batch.
  FsdpPlan plan = load_sim_inputs([&] {
                    SimInputRequest req;
                    req.profile_path = dir.file("inputs.ssdb");
                    return req;
                  }()).plan;
  plan.parallel.pp = 2;
  plan.parallel.pp_schedule = "1f1b";
  plan.parallel.pp_split_units = {"blocks.1"};
  plan.gradient_accumulation = 2;
  const CompiledStep step = compile_step(in.model, plan, ClusterModel{});
  REQUIRE(step.stages.size() == 2);
  CHECK(step.stages[0].send_bytes == 16384);
  CHECK(simulate(step).p2p_bytes == 2 * 16384);
}

TEST_CASE("a pipeline what-if splits a profile's root by its modules: the embedding first, the head last", "[sim][replay]") {
  ss::test::TempDir dir;
  auto tail_of = [&](const std::string& name, int embedding_at, int head_at) {
    GroupProfile g;
    g.root_modules = true;
    g.embedding_at = embedding_at, g.head_at = head_at;
    write_group_profile(dir.file(name), g);
    const ProfileInput in = extract_profile(load_profile(dir.file(name)));
    const SimUnit& root = in.model.units[static_cast<std::size_t>(in.model.find_unit(""))];
    CHECK(root.param_count == 1000);
    return root.tail_params;
  };
  // The head's forward starts after the last block's: its 400 parameters are the tail.
  CHECK(tail_of("split.ssdb", 50, 1200) == 400);
  // Both before the blocks: no tail (a model whose head is run outside it).
  CHECK(tail_of("head_first.ssdb", 50, 60) == 0);
  // A module between the blocks, or one without a range: unknown, split by forward time.
  CHECK(tail_of("between.ssdb", 50, 550) == -1);
  CHECK(tail_of("no_range.ssdb", 50, -1) == -1);
  // Two stages hold the root's parameters as its modules do (by forward time, which this profile
  // without compute kernels does not tell, each took half).
  SimInputRequest req;
  req.profile_path = dir.file("split.ssdb");
  const SimInputs in = load_sim_inputs(req);
  FsdpPlan plan = in.plan;
  plan.parallel.pp = 2;
  plan.parallel.pp_schedule = "1f1b";
  plan.parallel.pp_split_units = {"blocks.1"};
  const CompiledStep step = compile_step(in.model, plan, in.cluster);
  REQUIRE(step.stages.size() == 2);
  CHECK(step.stages[0].root_part.params == 600);
  CHECK(step.stages[1].root_part.params == 400);
}

TEST_CASE("the replay gathers and reduces in the dtypes the steps did, not the initialisation's", "[sim][replay]") {
  ss::test::TempDir dir;
  const auto dtypes = [&](const std::string& name, std::int64_t gathered, std::int64_t reduced, std::int64_t init) {
    GroupProfile g;
    g.gathered = {gathered, gathered};
    g.reduced = {reduced, reduced};
    g.init_gather = init;
    write_group_profile(dir.file(name), g);
    const ProfileInput in = extract_profile(load_profile(dir.file(name)));
    return std::pair{in.model.param_dtype_bytes, in.model.reduce_dtype_bytes};
  };
  // fp32 both ways (a CPU run without mixed precision).
  CHECK(dtypes("fp32.ssdb", 4000, 4000, 0) == std::pair{4, 4});
  // bf16 gathered, fp32 reduced, and a weight gathered in fp32 at initialisation (a DTensor's
  // full_tensor()): the step's all-gathers decide. Before: the largest of the run's, fp32.
  CHECK(dtypes("bf16.ssdb", 2000, 4000, 4000) == std::pair{2, 4});
  // reduce_dtype bf16: the reduce-scatters carry 2 bytes a parameter. Before: always 4.
  CHECK(dtypes("bf16_reduce.ssdb", 2000, 2000, 4000) == std::pair{2, 2});
  // The simulated step moves what the run moved: per unit 2000 B gathered twice, 2000 B reduced.
  SimInputRequest req;
  req.profile_path = dir.file("bf16_reduce.ssdb");
  const SimInputs in = load_sim_inputs(req);
  const CompiledStep step = compile_step(in.model, in.plan, in.cluster);
  for (const auto& e : step.units) {
    if (e.is_root) continue;  // holds no parameter of its own
    CHECK(e.ag_bytes == 2000);
    CHECK(e.params * step.reduce_bytes == 2000);
  }
}

TEST_CASE("recomputed activations live from the rerun to the backward, not from the forward", "[sim][replay]") {
  ss::test::TempDir dir;
  write_profile(dir.file("p.ssdb"), "true", 0, Events::CheckpointedChunkedLoss);
  ProfileInput in;
  replay(dir.file("p.ssdb"), &in);
  const int b1 = in.model.find_unit("blocks.1");
  int segments = 0;
  for (const auto& sg : in.model.segments) {
    if (sg.unit != b1) continue;
    ++segments;
    CHECK(sg.saved_activation_bytes == 1000);
    // What the rerun keeps: 5000 + 3000 - 3000 - 1000. Before: 8000, everything it allocated,
    // held to the backward's end (torchtitan's llama: 10 MB a block where the job held 5.3 MB).
    CHECK(sg.recompute_activation_bytes == 4000);
  }
  CHECK(segments == 1);
}

TEST_CASE("a chunked loss's activations are the root tail's, though the head runs again in backward", "[sim][replay]") {
  ss::test::TempDir dir;
  write_profile(dir.file("p.ssdb"), "true", 0, Events::CheckpointedChunkedLoss);
  ProfileInput in;
  replay(dir.file("p.ssdb"), &in);
  std::vector<const SimSegment*> root;
  for (const auto& sg : in.model.segments)
    if (in.model.units[static_cast<std::size_t>(sg.unit)].is_root) root.push_back(&sg);
  REQUIRE(root.size() == 2);
  // The loss's 700 B go with the tail, whose backward runs first. Before: the tail began where
  // the head's last forward range ended (inside the backward), and the head segment held them
  // from the step's start to its end (torchtitan's llama: 1.35 MB).
  CHECK(root.front()->saved_activation_bytes == 0);
  CHECK(root.back()->saved_activation_bytes == 700);
  CHECK(root.back()->loss_saved_bytes == 700);
}

TEST_CASE("the output the loop holds past the backward is the tail's, and not the loss's", "[sim][replay]") {
  ss::test::TempDir dir;
  write_profile(dir.file("held.ssdb"), "true", 0, Events::HeldOutput);
  ProfileInput in;
  const SimResult r = replay(dir.file("held.ssdb"), &in);
  const SimSegment& tail = in.model.segments.back();
  REQUIRE(in.model.units[static_cast<std::size_t>(tail.unit)].is_root);
  CHECK(tail.saved_activation_bytes == 1300);
  CHECK(tail.loss_saved_bytes == 700);     // before: 1300, all freed by the loss's backward
  CHECK(tail.caller_held_bytes == 400);    // step 0's freed in step 1, step 1's never
  CHECK(tail.backward_held_bytes == 200);  // freed after the backward, in the same step
  // The replay ends the step holding the 400, and the forward begins with the previous one's.
  std::int64_t end = 0, at_start = 0;
  for (const auto& e : r.memory) {
    end += e.cat == MemCat::Activation ? e.delta : 0;
    if (e.time == 0 && e.cat == MemCat::Activation) at_start += e.delta;
  }
  CHECK(end == 400);
  CHECK(at_start == 400);
  // A loss alone is not held: freed by its backward.
  write_profile(dir.file("loss.ssdb"), "true", 0, Events::CheckpointedChunkedLoss);
  ProfileInput loss;
  replay(dir.file("loss.ssdb"), &loss);
  CHECK(loss.model.segments.back().caller_held_bytes == 0);
  CHECK(loss.model.segments.back().loss_saved_bytes == 700);
}

TEST_CASE("a chunked loss run between the head's forward and backward ranges is replayed, as the root's tail",
          "[sim][replay]") {
  // A CPU profile without operator events: every stretch's compute is its span, and the replay's
  // compute (segments and optimizer) must be the step's. With the head's ranges alternating, the
  // last forward ends after the first backward starts: the loss between them had been in no
  // segment (torchtitan on 2 ranks with tensor parallelism: 47 of 564 ms a step, its loss-parallel
  // all-reduces there, the replay -8 %).
  ss::test::TempDir dir;
  for (const Events events : {Events::None, Events::ChunkedLossBackwardPerChunk}) {
    write_profile(dir.file("c.ssdb"), "true", 0, events);
    const ProfileInput in = extract_profile(load_profile(dir.file("c.ssdb")));
    CHECK(in.measured_compute_ns == 10'000 * us);  // the step used (the second)
    TimeNs replayed = in.model.optimizer_ns;
    for (const auto& sg : in.model.segments) replayed += sg.fwd_ns + sg.bwd_ns;
    for (const auto& u : in.model.units) replayed += u.bwd_unshard_host_ns;
    // Each segment's share truncated to whole nanoseconds.
    CHECK(std::abs(replayed - in.measured_compute_ns) < static_cast<TimeNs>(in.model.segments.size()));
    // The loss (300 us: forward to backward, backward to the next forward, forward to backward)
    // is the root's tail, a third of it forward.
    if (events == Events::ChunkedLossBackwardPerChunk) {
      const SimSegment& tail = in.model.segments.back();
      CHECK(in.model.units[static_cast<std::size_t>(tail.unit)].is_root);
      CHECK(tail.fwd_ns + tail.bwd_ns == 300 * us);
      CHECK(tail.fwd_ns == 100 * us);
    }
  }
}

TEST_CASE("sharded gradients kept from step to step (zero_grad without set_to_none) are found and replayed",
          "[sim][replay]") {
  ss::test::TempDir dir;
  auto kept = [&](Events events, SimResult* r) {
    write_profile(dir.file("g.ssdb"), "true", 0, events);
    ProfileInput in = extract_profile(load_profile(dir.file("g.ssdb")));
    const bool found = add_kept_grads_from_profile(in, dir.file("g.ssdb"));
    CHECK(found == in.model.grads_kept);
    ClusterModel c;
    c.world_size = 2;
    *r = simulate(compile_step(in.model, FsdpPlan{}, c));
    return found;
  };
  // The model's sharded gradients: 3100 fp32 parameters over 2 ranks, 6200 B.
  auto grad_events = [](const SimResult& r, bool freed) {
    std::int64_t n = 0;
    for (const auto& e : r.memory)
      if (e.cat == MemCat::ShardedGrad && (e.delta < 0) == freed) n += e.delta;
    return n;
  };
  SimResult r;
  // Live at the used step's first forward: kept. The replay holds them from its start, frees none.
  CHECK(kept(Events::GradsKept, &r));
  CHECK(grad_events(r, false) == 6200);
  CHECK(grad_events(r, true) == 0);
  for (const auto& e : r.memory)
    if (e.cat == MemCat::ShardedGrad) CHECK(e.time == 0);
  // Made in backward, freed after the optimizer: not kept; the replay frees them after its optimizer.
  CHECK_FALSE(kept(Events::GradsFreed, &r));
  CHECK(grad_events(r, false) == 6200);
  CHECK(grad_events(r, true) == -6200);
  CHECK_FALSE(kept(Events::None, &r));
}

TEST_CASE("sharded gradients freed by a zero_grad between forward and backward live through the forward only",
          "[sim][replay]") {
  // `out = model(x); opt.zero_grad(); loss.backward()`: the previous step's gradients are live at
  // the forward (kept, as with set_to_none=False), gone at the backward. The replay holds them
  // from the step's start, frees them where its backward starts and makes them again at the
  // reduce-scatters; held the whole step, they had stood beside the new ones in backward.
  ss::test::TempDir dir;
  write_profile(dir.file("g.ssdb"), "true", 0, Events::GradsFreedBeforeBackward);
  ProfileInput in = extract_profile(load_profile(dir.file("g.ssdb")));
  CHECK(add_kept_grads_from_profile(in, dir.file("g.ssdb")));
  CHECK(in.model.grads_freed_before_backward);
  ClusterModel c;
  c.world_size = 2;
  const SimResult r = simulate(compile_step(in.model, FsdpPlan{}, c));
  std::int64_t made = 0, freed = 0, live = 0, most_in_backward = 0;
  TimeNs freed_at = -1;
  std::vector<MemEvent> events;
  for (const auto& e : r.memory)
    if (e.cat == MemCat::ShardedGrad) events.push_back(e);
  std::stable_sort(events.begin(), events.end(), [](const MemEvent& a, const MemEvent& b) { return a.time < b.time; });
  for (const auto& e : events) {
    (e.delta > 0 ? made : freed) += e.delta;
    if (e.delta < 0) freed_at = e.time;
    live += e.delta;
    if (e.time >= r.forward_end_ns) most_in_backward = std::max(most_in_backward, live);
  }
  CHECK(made == 2 * 6200);
  CHECK(freed == -6200);
  CHECK(freed_at >= r.forward_end_ns);
  CHECK(most_in_backward == 6200);  // never the old and the new together
  // The other patterns keep their own: all step, or freed after the optimizer.
  for (const Events ev : {Events::GradsKept, Events::GradsFreed}) {
    write_profile(dir.file("o.ssdb"), "true", 0, ev);
    ProfileInput other = extract_profile(load_profile(dir.file("o.ssdb")));
    add_kept_grads_from_profile(other, dir.file("o.ssdb"));
    CHECK_FALSE(other.model.grads_freed_before_backward);
  }
}

// blocks.0 of 2 ranks holds 800 parameters on the unit's mesh (2 ranks) and 200 experts split 2
// ways by expert parallelism, 100 on this rank on a mesh of one rank, which FSDP never gathers: its
// all-gathers move 800 fp32 parameters (3200 B), blocks.1's all 1000.
namespace {
GroupProfile expert_profile(const std::string& groups) {
  GroupProfile g;
  g.world = 2;
  g.gathered = g.reduced = {3200, 4000};
  g.groups0 = groups;
  return g;
}
}  // namespace

TEST_CASE("parameters on a mesh of their own (expert parallelism) are gathered as recorded", "[sim][replay]") {
  ss::test::TempDir dir;
  write_group_profile(dir.file("ep.ssdb"), expert_profile("800@2 100@1"));
  const ProfileInput in = extract_profile(load_profile(dir.file("ep.ssdb")));
  const int b0_index = in.model.find_unit("blocks.0");
  const SimUnit& b0 = in.model.units[static_cast<std::size_t>(b0_index)];
  REQUIRE(b0.apart_groups.size() == 1);
  CHECK(b0.apart_groups[0].params == 200);  // 100 on each of the 2 expert-parallel ranks
  CHECK(b0.apart_groups[0].ep == 2);
  // fp32, from the largest unit's gathered count (1000 of blocks.1). Before: blocks.0's 3200 B
  // over its 1000 parameters fit no dtype, and the replay gathered bf16.
  CHECK(in.model.param_dtype_bytes == 4);
  CHECK(in.model.reduce_dtype_bytes == 4);
  auto compiled = [&](int world) {
    FsdpPlan plan;
    plan.world_size = world;
    ClusterModel c;
    c.world_size = 2;
    return compile_step(in.model, plan, c);
  };
  const auto unit_of = [](const CompiledStep& s, const std::string& n) {
    for (const auto& e : s.units)
      if (e.name == n) return e;
    FAIL("no unit " << n);
    return ExecUnit{};
  };
  // As recorded: blocks.0 gathers and reduces its 800, blocks.1 its 1000; each holds a half shard.
  const CompiledStep two = compiled(2);
  CHECK(unit_of(two, "blocks.0").ag_bytes == 3200);
  CHECK(unit_of(two, "blocks.0").gathered == 800);
  CHECK(unit_of(two, "blocks.0").params == 1000);
  CHECK(unit_of(two, "blocks.1").ag_bytes == 4000);
  const SimResult r = simulate(two);
  CHECK(r.all_gathers == 4);
  CHECK(r.reduce_scatters == 2);
  // FSDP2 frees a forward all-gather's buffer at the next parameter group's wait: blocks.0's own
  // experts' group, right after its copy-out (the MoE trace of docs/accuracy.md); a unit of one
  // group keeps it to the next unit's copy-out. Before, both kept it there (+3 to +5 % on that
  // run's predicted peak).
  auto buffer_freed = [&](const CompiledStep& s, const std::string& unit) {
    int e = -1;
    for (std::size_t i = 0; i < s.units.size(); ++i)
      if (s.units[i].name == unit) e = static_cast<int>(i);
    TimeNs copy_out = -1, freed = -1;
    for (const auto& op : r.ops)
      if (op.exec == e && op.kind == OpKind::CopyOut && op.phase == Phase::Forward && copy_out < 0) copy_out = op.end;
    for (const auto& m : r.memory)
      if (m.exec == e && m.cat == MemCat::AllGatherBuffer && m.delta < 0 && freed < 0) freed = m.time;
    REQUIRE(copy_out >= 0);
    return freed - copy_out;
  };
  CHECK(two.units[static_cast<std::size_t>(two.exec_of_unit[static_cast<std::size_t>(b0_index)])].later_groups);
  CHECK(buffer_freed(two, "blocks.0") == 0);
  CHECK(buffer_freed(two, "blocks.1") > 0);  // to the next unit's (the root's backward gather)
  // At 4 ranks the experts' mesh has 2 (ep stays 2): their 100 per rank are gathered too.
  CHECK(unit_of(compiled(4), "blocks.0").ag_bytes == 3600);
  // 3 ranks cannot hold a 2-way expert split.
  CHECK_THROWS_WITH(compiled(3), Catch::Contains("does not divide the FSDP group of 3 ranks"));
  // Meta that does not add up to the unit's parameters, or is not "<elements>@<mesh>", is ignored:
  // the unit is one group on its mesh, as before.
  for (const char* bad : {"800@2 150@1", "800@2 x@1", "800@2 100@0", "800@2"}) {
    write_group_profile(dir.file("bad.ssdb"), expert_profile(bad));
    const ProfileInput b = extract_profile(load_profile(dir.file("bad.ssdb")));
    CHECK(b.model.units[static_cast<std::size_t>(b.model.find_unit("blocks.0"))].apart_groups.empty());
  }
}

TEST_CASE("experts gathered over a mesh of their own: read in the run's dtype, their buffer kept to the next unit's wait",
          "[sim][replay]") {
  // 4 ranks, expert parallelism 2: each block's 800 dense parameters sharded over 4, its 100
  // experts (of 200) over the expert mesh of 2; each pass gathers 3200 B then 400 B (fp32).
  ss::test::TempDir dir;
  GroupProfile g;
  g.world = 4;
  g.groups0 = g.groups1 = "800@4 100@2";
  g.gathered = g.reduced = {3200, 3200};
  g.apart = {400, 400};
  write_group_profile(dir.file("efsdp.ssdb"), g);
  const ProfileInput in = extract_profile(load_profile(dir.file("efsdp.ssdb")));
  // The largest collective carries one group, not the unit's 900 gathered: fp32 both ways.
  // Before: 3200 B over 900 fit no dtype, and the replay gathered bf16 (half of every block).
  CHECK(in.model.param_dtype_bytes == 4);
  CHECK(in.model.reduce_dtype_bytes == 4);
  // One forward gather of each block a step, though FSDP2 ranges one per group. Before: counted
  // together, every block replayed an extra forward gather.
  for (const auto& u : in.model.units) CHECK(u.extra_fwd_gathers == 0);
  ClusterModel c;
  c.world_size = 4;
  const CompiledStep s = compile_step(in.model, FsdpPlan{}, c);
  int b0 = -1, b1 = -1;
  for (std::size_t i = 0; i < s.units.size(); ++i) {
    if (s.units[i].name == "blocks.0") b0 = static_cast<int>(i);
    if (s.units[i].name == "blocks.1") b1 = static_cast<int>(i);
  }
  REQUIRE((b0 >= 0 && b1 >= 0));
  CHECK(s.units[static_cast<std::size_t>(b0)].ag_bytes == 3600);
  CHECK(s.units[static_cast<std::size_t>(b0)].later_ag_bytes == 400);
  CHECK(s.units[static_cast<std::size_t>(b0)].later_shard == 2);
  const SimResult r = simulate(s);
  const auto op_of = [&](int e, OpKind k, Phase ph) {
    for (const auto& op : r.ops)
      if (op.exec == e && op.kind == k && op.phase == ph) return op;
    FAIL("no op");
    return SimOp{};
  };
  // Each way, the dense collective then the experts' own (over their mesh of 2), as the job ran
  // them. Before: one of 3600 B per pass over the unit's group.
  for (auto [kind, phase] : {std::pair{OpKind::AllGather, Phase::Forward}, std::pair{OpKind::AllGather, Phase::Backward},
                             std::pair{OpKind::ReduceScatter, Phase::Backward}}) {
    std::vector<std::pair<std::int64_t, bool>> seen;
    for (const auto& op : r.ops)
      if (op.exec == b0 && op.kind == kind && op.phase == phase) seen.push_back({op.bytes, op.apart});
    CHECK(seen == std::vector<std::pair<std::int64_t, bool>>{{3200, false}, {400, true}});
  }
  CHECK(r.all_gathers == 8);  // 2 blocks x 2 groups x forward and backward (the root holds none)
  CHECK(r.reduce_scatters == 4);
  // Forward: blocks.0's dense buffer goes at its experts' wait (its copy-out's end), the experts'
  // own 400 B at blocks.1's wait, as in the 4-rank torchtitan trace (docs/accuracy.md). Before,
  // all 3600 B at the copy-out.
  std::vector<std::pair<TimeNs, std::int64_t>> frees;
  for (const auto& m : r.memory)
    if (m.exec == b0 && m.cat == MemCat::AllGatherBuffer && m.delta < 0) frees.push_back({m.time, m.delta});
  REQUIRE(frees.size() >= 2);
  CHECK(frees[0] == std::pair<TimeNs, std::int64_t>{op_of(b0, OpKind::CopyOut, Phase::Forward).end, -3200});
  CHECK(frees[1].second == -400);
  CHECK(frees[1].first == op_of(b1, OpKind::CopyOut, Phase::Forward).start);  // blocks.1's wait
  // Backward: FSDP2 prefetches blocks.0 after blocks.1's wait (its copy-out, its buffer freed),
  // so the two gathered blocks' buffers are never alive together. Before, the prefetch was issued
  // first and the model held 7200 B of buffers at the turn.
  CHECK(op_of(b0, OpKind::AllGather, Phase::Backward).start >= op_of(b1, OpKind::CopyOut, Phase::Backward).end);
  const TimeNs backward = op_of(b1, OpKind::Compute, Phase::Backward).start;
  std::int64_t buffers = 0, most = 0;
  for (const auto& m : r.memory) {  // sorted by time
    if (m.cat == MemCat::AllGatherBuffer) buffers += m.delta;
    if (m.time >= backward) most = std::max(most, buffers);
  }
  CHECK(most == 3600);
}

TEST_CASE("a unit's backward: its highest above its start, and the gradient it is handed, plain or checkpointed",
          "[sim][replay][memory]") {
  ss::test::TempDir dir;
  for (const Events events : {Events::BackwardOrder, Events::BackwardOrderCheckpointed}) {
    const std::string path = dir.file(events == Events::BackwardOrder ? "plain.ssdb" : "checkpointed.ssdb");
    write_profile(path, "true", 0, events);
    ProfileInput in = extract_profile(load_profile(path));
    add_temporaries_from_profile(in, path);
    const int b1 = in.model.find_unit("blocks.1"), b2 = in.model.find_unit("blocks.2");
    auto segment_of = [&](int unit) -> const SimSegment& {
      for (const auto& sg : in.model.segments)
        if (sg.unit == unit) return sg;
      FAIL("no segment");
      return in.model.segments.front();
    };
    // Its temporaries alone: what the model stacked on every saved tensor before.
    CHECK(segment_of(b1).bwd_temp_bytes == 2500);
    add_backward_net_from_profile(in, path);
    INFO((events == Events::BackwardOrder ? "plain" : "checkpointed"));
    // 2500 + 800 - 1000, measured from the rerun's end when checkpointed (its 500 B come and go
    // before; the post-backward's gradients after are not the backward's).
    CHECK(segment_of(b1).bwd_temp_bytes == 2300);
    CHECK(segment_of(b1).bwd_incoming_bytes == 600);
    // blocks.2 made the 600 B and was handed nothing; the root keeps its temporaries as measured.
    CHECK(segment_of(b2).bwd_temp_bytes == 600);
    CHECK(segment_of(b2).bwd_incoming_bytes == 0);
  }
}

TEST_CASE("a unit's backward is measured without the backwards of units nested in it", "[sim][replay][memory]") {
  ss::test::TempDir dir;
  const std::string path = dir.file("nested.ssdb");
  write_profile(path, "true", 0, Events::NestedBackward);
  ProfileInput in = extract_profile(load_profile(path));
  const int b1 = in.model.find_unit("blocks.1"), fc = in.model.find_unit("blocks.1.fc");
  REQUIRE(b1 >= 0);
  REQUIRE(fc >= 0);
  add_temporaries_from_profile(in, path);
  add_backward_net_from_profile(in, path);
  auto last_segment_of = [&](int unit) {
    const SimSegment* last = nullptr;
    for (const auto& sg : in.model.segments)
      if (sg.unit == unit) last = &sg;
    REQUIRE(last);
    return *last;
  };
  // blocks.1 as without the nested unit: 2500 + 800 - 1000 at its own highest. Inside the nested
  // unit's window it stood at 2500 + 800 - 1000 - 600 - 2500 - 3000 + 8000 + 900 = 5100 (the measure
  // before), which the nested unit's own segment models: 8000 + 900.
  CHECK(last_segment_of(b1).bwd_temp_bytes == 2300);
  CHECK(last_segment_of(fc).bwd_temp_bytes == 8900);
  CHECK(last_segment_of(b1).bwd_incoming_bytes == 600);
}
