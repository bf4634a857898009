// Profiles in and out: extracting a SimModel from a (synthetic) profile, writing the simulated
// profile, and reading that back to the same prediction.
#include <catch2/catch.hpp>

#include <algorithm>

#include "profiler/sim/profile_extract.h"
#include "profiler/sim/simulated_profile.h"
#include "profiler/sim/step_simulator.h"
#include "profiler/synthetic/synthetic_profile.h"
#include "storage/errors.h"
#include "storage/interval_union.h"
#include "storage/profile_reader.h"
#include "storage/profile_writer.h"
#include "storage/sqlite_handle.h"
#include "tests/support/test_paths.h"

using namespace ss;
using namespace ss::sim;

namespace {

// Busy time of every compute-category kernel of rank 0 inside [a, b) (kernels do not overlap on
// the synthetic profile's single compute stream).
TimeNs compute_in(const Profile& p, TimeNs a, TimeNs b) {
  TimeNs t = 0;
  for (std::int32_t ti : p.ranks.front().stream_tracks) {
    const auto& tr = p.stream_tracks[static_cast<std::size_t>(ti)];
    if (tr.kind != StreamKind::Compute) continue;
    for (const auto& k : tr.events)
      if (k.start >= a && k.end <= b) t += k.end - k.start;
  }
  return t;
}

// A synthetic profile of `layers` blocks written to dir/in.ssdb, read back as simulator input
// (activations included).
ProfileInput synthetic_input(const ss::test::TempDir& dir, int layers) {
  SyntheticSpec spec;
  spec.layers = layers;
  write_synthetic_profile(dir.file("in.ssdb"), spec);
  ProfileInput in = extract_profile(load_profile(dir.file("in.ssdb")));
  add_activations_from_profile(in, dir.file("in.ssdb"));
  return in;
}

}  // namespace

TEST_CASE("unit sizes come from parameter counts, not from the stored tensors' bytes", "[sim][profile]") {
  // Under mixed precision the recorded bytes are the fp32 master weights' (4 B per parameter)
  // while the all-gathers move bf16; counting bytes / 2 would double every unit.
  ss::test::TempDir dir;
  SyntheticSpec spec;
  spec.layers = 2;
  write_synthetic_profile(dir.file("in.ssdb"), spec);
  const ProfileInput bf16 = extract_profile(load_profile(dir.file("in.ssdb")));
  {
    sql::Db db(dir.file("in.ssdb"), SQLITE_OPEN_READWRITE);
    db.exec("UPDATE modules SET param_bytes = 4 * param_count");
  }
  const ProfileInput fp32 = extract_profile(load_profile(dir.file("in.ssdb")));
  REQUIRE(fp32.model.units.size() == bf16.model.units.size());
  for (std::size_t u = 0; u < fp32.model.units.size(); ++u) CHECK(fp32.model.units[u].param_count == bf16.model.units[u].param_count);
  CHECK(fp32.model.units[static_cast<std::size_t>(fp32.model.find_unit("layers.1"))].param_count == 218'112'000);
}

TEST_CASE("a synthetic profile becomes units, compute segments and collectives", "[sim][profile]") {
  ss::test::TempDir dir;
  SyntheticSpec spec;
  spec.layers = 6;
  spec.steps = 3;
  spec.ranks = 2;
  write_synthetic_profile(dir.file("in.ssdb"), spec);
  const Profile p = load_profile(dir.file("in.ssdb"));
  const ProfileInput in = extract_profile(p);
  const SimModel& m = in.model;
  CHECK(in.world_size == 2);
  CHECK(in.steps_used == 2);  // the first of three is skipped as warm-up
  REQUIRE(m.units.size() == 7);  // root + layers.0..5
  CHECK(m.units[0].is_root);
  // The generator's layer: 218,112,000 parameters (attention 41,943,040 + feed-forward 176,160,768).
  const int l0 = m.find_unit("layers.0");
  REQUIRE(l0 >= 0);
  CHECK(m.units[static_cast<std::size_t>(l0)].param_count == 218'112'000);
  // Root's own parameters: embedding 525,336,576 + norm 4,096 + output 525,336,576.
  CHECK(m.units[0].param_count == 525'336'576LL * 2 + 4'096);
  // Segments: root head, 6 layers in forward order, root tail.
  REQUIRE(m.segments.size() == 8);
  for (int l = 0; l < 6; ++l) CHECK(m.units[static_cast<std::size_t>(m.segments[static_cast<std::size_t>(l + 1)].unit)].name == "layers." + std::to_string(l));
  // Everything the compute stream did in the averaged steps is accounted for exactly once.
  TimeNs kernels = 0;
  for (std::size_t s = 1; s < p.ranks.front().steps.size(); ++s)
    kernels += compute_in(p, p.ranks.front().steps[s].start, p.ranks.front().steps[s].end);
  TimeNs modelled = m.optimizer_ns;
  for (const auto& s : m.segments) modelled += s.fwd_ns + s.bwd_ns;
  CHECK(std::abs(double(modelled) * 2 - double(kernels)) <= 16);  // per-step averages, rounded
  // Collectives: 6 forward AG + 6 backward AG + 6 RS per step on rank 0, three steps.
  CHECK(in.collectives.size() == 18 * 2);  // fit samples come from the steps compared (the warm-up step is skipped)
  CHECK(in.measured_step_ns > 0);
  // Activations: the generator allocates 64 MiB per sub-module (attention, feed-forward) per layer
  // forward, all attributed to the layer's unit.
  ProfileInput with_act = in;
  CHECK(add_activations_from_profile(with_act, dir.file("in.ssdb")) == 6 * 2 * (64LL << 20));
  CHECK(with_act.model.segments[1].saved_activation_bytes == 2 * (64LL << 20));
  CHECK(with_act.model.segments[0].saved_activation_bytes == 0);
}

TEST_CASE("simulated profile round trip: write, read back, re-simulate", "[sim][profile]") {
  ss::test::TempDir dir;
  const ProfileInput in = synthetic_input(dir, 5);
  ClusterModel c;
  c.world_size = 2;
  const CompiledStep s = compile_step(in.model, FsdpPlan{}, c);
  const SimResult r = simulate(s, true);
  write_simulated_profile(dir.file("sim.ssdb"), in.model, s, r, {"in.ssdb", "NVIDIA H100 80GB HBM3", "{\"plan\": {}}"});

  const Profile sim = load_profile(dir.file("sim.ssdb"));
  CHECK(sim.origin.kind == OriginKind::Simulated);
  CHECK(sim.origin.parameters_json == "{\"plan\": {}}");
  REQUIRE(sim.ranks.size() == 1);
  CHECK(sim.ranks.front().info.world_size == 2);
  // Every op is a kernel except measured idle, which stays a gap on the timeline.
  const auto idle_ops = std::count_if(r.ops.begin(), r.ops.end(), [](const SimOp& o) { return o.kind == OpKind::Idle; });
  CHECK(idle_ops > 0);  // the generator leaves 2 us launch gaps between kernels
  CHECK(static_cast<std::size_t>(sim.kernel_count) == r.ops.size() - static_cast<std::size_t>(idle_ops));
  std::size_t ag = 0, rs = 0;
  for (const auto& col : sim.collectives) {
    ag += col.type == CollectiveType::AllGather;
    rs += col.type == CollectiveType::ReduceScatter;
  }
  CHECK(ag == static_cast<std::size_t>(r.all_gathers));
  CHECK(rs == static_cast<std::size_t>(r.reduce_scatters));
  CHECK(sim.memory_event_count == static_cast<std::int64_t>(r.memory.size()));
  // The memory counter peaks where the simulator says.
  std::int64_t peak = 0;
  for (const auto& pt : sim.ranks.front().memory) peak = std::max(peak, pt.value);
  CHECK(peak == r.peak_bytes);
  // Reading the simulated profile gives back the same model and the same step time.
  ProfileInput again = extract_profile(sim);
  add_activations_from_profile(again, dir.file("sim.ssdb"));
  CHECK(again.measured_step_ns == r.step_ns);
  const SimResult r2 = simulate(compile_step(again.model, FsdpPlan{}, c));
  CHECK(r2.step_ns == r.step_ns);
  CHECK(r2.peak_bytes - r.peak_bytes == 0);
}

TEST_CASE("a shard group of one calls no FSDP collective, as FSDP2 skips them", "[sim][profile]") {
  // FSDP2 at world size 1 reuses the local shard instead of an all-gather and copies instead of a
  // reduce-scatter (_fsdp_param_group.py, _fsdp_collectives.py); an H200 recording of it has none.
  ss::test::TempDir dir;
  const ProfileInput in = synthetic_input(dir, 3);
  ClusterModel c;
  c.world_size = 1;
  const CompiledStep s = compile_step(in.model, FsdpPlan{}, c);
  const SimResult r = simulate(s, true);
  CHECK(r.all_gathers == 0);
  CHECK(r.reduce_scatters == 0);
  const auto fsdp_ops = std::count_if(r.ops.begin(), r.ops.end(), [](const SimOp& o) {
    return o.kind == OpKind::AllGather || o.kind == OpKind::ReduceScatter;
  });
  CHECK(fsdp_ops > 0);  // still scheduled (zero time), so the unsharded buffers keep their lifetimes
  write_simulated_profile(dir.file("sim.ssdb"), in.model, s, r, {"in.ssdb", "NVIDIA H200", "{\"plan\": {}}"});
  const Profile sim = load_profile(dir.file("sim.ssdb"));
  CHECK(sim.collectives.empty());
  const auto idle_ops = std::count_if(r.ops.begin(), r.ops.end(), [](const SimOp& o) { return o.kind == OpKind::Idle; });
  CHECK(sim.kernel_count == static_cast<std::int64_t>(r.ops.size()) - idle_ops - fsdp_ops);
  CHECK(sim.memory_event_count == static_cast<std::int64_t>(r.memory.size()));
}

TEST_CASE("profiles that cannot be simulated are refused with a reason", "[sim][profile]") {
  ss::test::TempDir dir;
  {
    Origin o;
    ProfileWriter w(dir.file("nounits.ssdb"), o);
    w.add_rank({});
    w.add_module({kNoRow, "", "Model", 10, 20, false, kNoRow, ""});
    w.finish();
  }
  CHECK_THROWS_WITH(extract_profile(load_profile(dir.file("nounits.ssdb"))), Catch::Contains("no module is marked as an FSDP unit"));
  {
    Origin o;
    ProfileWriter w(dir.file("noranges.ssdb"), o);
    w.add_rank({});
    w.add_module({kNoRow, "", "Model", 10, 20, true, kNoRow, "false"});
    w.finish();
  }
  CHECK_THROWS_WITH(extract_profile(load_profile(dir.file("noranges.ssdb"))), Catch::Contains("no forward/backward module ranges"));
}

TEST_CASE("the root's tail keeps what it saved itself, so the backward frees it first (real recording)", "[sim][profile]") {
  const std::string path = ss::test::source_dir() + "/resources/samples/cpu-fsdp2-llama-2rank.ssdb";
  ProfileInput in = extract_profile(load_profile(path));
  const std::int64_t total = add_activations_from_profile(in, path);
  const SimModel& m = in.model;
  int root = -1;
  for (std::size_t u = 0; u < m.units.size(); ++u)
    if (m.units[u].is_root) root = static_cast<int>(u);
  REQUIRE(root >= 0);
  std::vector<const SimSegment*> root_segments;
  std::int64_t sum = 0;
  for (const auto& seg : m.segments) {
    sum += seg.saved_activation_bytes;
    if (seg.unit == root) root_segments.push_back(&seg);
  }
  REQUIRE(root_segments.size() == 2);  // the head (embedding) and the tail (norm, output, loss)
  // The norm's and output head's activations and the loss's saved tensors (made after the last
  // layer's forward) stay with the tail; the embedding's and the batch's with the head.
  CHECK(root_segments.back()->saved_activation_bytes > 0);
  CHECK(root_segments.front()->saved_activation_bytes > 0);
  // Nothing is lost or counted twice (per-step averages, rounded per segment).
  CHECK(std::abs(double(sum - total)) <= double(m.segments.size()));
}

namespace {
// Compute of rank `rank`'s non-collective operators inside [a, b] (top-level operators of a CPU
// profile do not overlap).
TimeNs ops_in(sql::Db& db, int rank, TimeNs a, TimeNs b) {
  sql::Stmt st(db.get(), "SELECT COALESCE(SUM(duration_ns), 0) FROM kernels WHERE rank = ?1 AND category != ?2 "
                         "AND start_ns >= ?3 AND start_ns + duration_ns <= ?4");
  st.bind(1, rank);
  st.bind(2, static_cast<int>(KernelCategory::Collective));
  st.bind(3, a);
  st.bind(4, b);
  st.step();
  return st.col_int(0);
}
// [start, end] of the forward range named `name` (module or FSDP) that starts inside [a, b].
std::pair<TimeNs, TimeNs> forward_range(sql::Db& db, int rank, const std::string& name, TimeNs a, TimeNs b) {
  sql::Stmt st(db.get(), "SELECT r.start_ns, r.start_ns + r.duration_ns FROM ranges r JOIN strings s ON s.id = r.name_id "
                         "WHERE r.rank = ?1 AND s.value = ?2 AND r.phase = ?3 AND r.start_ns BETWEEN ?4 AND ?5");
  st.bind(1, rank);
  st.bind(2, name);
  st.bind(3, static_cast<int>(RangePhase::Forward));
  st.bind(4, a);
  st.bind(5, b);
  REQUIRE(st.step());
  return {st.col_int(0), st.col_int(1)};
}
}  // namespace

TEST_CASE("a checkpointing rerun stops after the last tensor its unit's backward needs (real recording)", "[sim][profile]") {
  // A llama block (attention, then w2(silu(w1 x) * w3 x) and a residual add) saves nothing after
  // the product that w2 consumes: PyTorch's checkpoint reruns it up to that product and stops, so
  // the rerun is the block's forward less FSDP's pre-forward, the w2 projection and the residual
  // add after it. Measured on the recording's own operators, step by step.
  const std::string path = ss::test::source_dir() + "/resources/samples/cpu-fsdp2-llama-2rank.ssdb";
  ProfileInput in = extract_profile(load_profile(path));
  add_rerun_share_from_profile(in, path);
  sql::Db db = open_profile_readonly(path);
  int blocks = 0;
  for (const auto& seg : in.model.segments) {
    const SimUnit& u = in.model.units[static_cast<std::size_t>(seg.unit)];
    if (u.is_root) {
      CHECK(seg.rerun_share == 1.0);  // never checkpointed: not measured
      continue;
    }
    ++blocks;
    double forward = 0, expected = 0;
    for (const auto& [a, b] : in.step_windows) {
      const auto block = forward_range(db, in.rank, u.name, a, b);
      const auto pre = forward_range(db, in.rank, "FSDP::pre_forward (" + u.name + ")", block.first, block.second);
      const auto w2 = forward_range(db, in.rank, u.name + ".feed_forward.w2", block.first, block.second);
      const TimeNs f = ops_in(db, in.rank, block.first, block.second);
      forward += double(f);
      // Everything from the pre-forward's end up to w2's start: w2 and the add after it are left out.
      expected += double(ops_in(db, in.rank, pre.second, w2.first));
      CHECK(ops_in(db, in.rank, w2.first, block.second) > 0);
    }
    INFO(u.name << ": share " << seg.rerun_share << ", expected " << expected / forward);
    CHECK(seg.rerun_share > 0.5);
    CHECK(seg.rerun_share < 1.0);
    CHECK(seg.rerun_share == Approx(expected / forward).epsilon(1e-9));
  }
  CHECK(blocks == 4);
}

TEST_CASE("on a GPU recording the rerun runs from the block's first sub-module to w2 (real H100 recording)", "[sim][profile]") {
  // No launch time ties a host allocation to a kernel: the rerun stops at the first kernel of the
  // sub-module whose forward starts after the last saved allocation (the product w2 consumes is
  // made in feed_forward's own code; w2 starts after it), and starts at the first sub-module's
  // first kernel (FSDP's copy-out kernels before it are the pre-forward's).
  const std::string path = ss::test::source_dir() + "/resources/samples/h100-fsdp2-decoder-1gpu.ssdb";
  ProfileInput in = extract_profile(load_profile(path));
  add_rerun_share_from_profile(in, path);
  sql::Db db = open_profile_readonly(path);
  std::vector<TimeInterval> ops;
  {
    sql::Stmt k(db.get(), "SELECT start_ns, start_ns + duration_ns FROM kernels WHERE rank = ?1 AND category != ?2");
    k.bind(1, in.rank);
    k.bind(2, static_cast<int>(KernelCategory::Collective));
    while (k.step()) ops.emplace_back(k.col_int(0), k.col_int(1));
  }
  const std::vector<TimeInterval> busy = interval_union(ops);
  // The first start of a kernel whose module's name is LIKE `like`, inside [a, b).
  auto first_kernel = [&](const std::string& like, TimeNs a, TimeNs b) {
    sql::Stmt k(db.get(), "SELECT MIN(k.start_ns) FROM kernels k JOIN modules m ON m.id = k.module_id WHERE k.rank = ?1 "
                          "AND m.fqn LIKE ?2 AND k.start_ns >= ?3 AND k.start_ns < ?4");
    k.bind(1, in.rank);
    k.bind(2, like);
    k.bind(3, a);
    k.bind(4, b);
    REQUIRE(k.step());
    REQUIRE(!k.col_null(0));
    return k.col_int(0);
  };
  int blocks = 0;
  for (const auto& seg : in.model.segments) {
    const SimUnit& u = in.model.units[static_cast<std::size_t>(seg.unit)];
    if (u.is_root) continue;
    ++blocks;
    double rerun = 0, forward = 0;
    for (const auto& [a, b] : in.step_windows) {
      const TimeNs fwd = forward_range(db, in.rank, u.name, a, b).first;
      sql::Stmt r(db.get(), "SELECT MIN(r.start_ns) FROM ranges r JOIN strings s ON s.id = r.name_id WHERE r.rank = ?1 "
                            "AND s.value = ?2 AND r.phase = ?3 AND r.start_ns BETWEEN ?4 AND ?5");
      r.bind(1, in.rank);
      r.bind(2, u.name);
      r.bind(3, static_cast<int>(RangePhase::Backward));
      r.bind(4, a);
      r.bind(5, b);
      REQUIRE(r.step());
      const TimeNs bwd = r.col_int(0);
      sql::Stmt span(db.get(), "SELECT MIN(k.start_ns), MAX(k.start_ns + k.duration_ns) FROM kernels k JOIN modules m ON "
                               "m.id = k.module_id WHERE k.rank = ?1 AND k.category != ?2 AND (m.fqn = ?3 OR m.fqn LIKE ?4) "
                               "AND k.start_ns >= ?5 AND k.start_ns < ?6");
      span.bind(1, in.rank);
      span.bind(2, static_cast<int>(KernelCategory::Collective));
      span.bind(3, u.name);
      span.bind(4, u.name + ".%");
      span.bind(5, fwd);
      span.bind(6, bwd);
      REQUIRE(span.step());
      forward += double(busy_in(busy, span.col_int(0), span.col_int(1)));
      rerun += double(busy_in(busy, first_kernel(u.name + ".%", fwd, bwd), first_kernel(u.name + ".feed_forward.w2", fwd, bwd)));
    }
    INFO(u.name << ": share " << seg.rerun_share << ", expected " << rerun / forward);
    CHECK(seg.rerun_share > 0.5);
    CHECK(seg.rerun_share < 1.0);
    CHECK(seg.rerun_share == Approx(rerun / forward).epsilon(1e-9));
  }
  CHECK(blocks == 16);
}

TEST_CASE("a CPU profile's fit samples are the time each collective held the training thread (real recording)", "[sim][profile]") {
  // gloo's worker runs on the other core while the training thread computes; that part of a
  // collective is already the segments' compute, and the CPU replay holds the compute lane for a
  // collective's whole modelled time, so the fit gets each collective's time less the compute
  // under it. The training thread still inside the c10d call that issued the collective is not
  // computing: that part is the collective's.
  const std::string path = ss::test::source_dir() + "/resources/samples/cpu-fsdp2-llama-2rank.ssdb";
  const Profile p = load_profile(path);
  const ProfileInput in = extract_profile(p);
  std::vector<TimeInterval> ops, calls;
  for (const auto& rk : p.ranks)
    if (rk.info.rank == in.rank)
      for (std::int32_t ti : rk.stream_tracks)
        for (const auto& k : p.stream_tracks[static_cast<std::size_t>(ti)].events) {
          if (k.category == KernelCategory::Collective) continue;
          ops.emplace_back(k.start, k.end);
          if (p.strings[k.name].rfind("c10d::", 0) == 0) calls.emplace_back(k.start, k.end);
        }
  std::vector<TimeInterval> issuing;  // each call's overlap with the collective that started inside it
  for (const auto& c : p.collectives)
    for (const auto& k : calls)
      if (c.rank == in.rank && k.first <= c.start && c.start < k.second) issuing.emplace_back(c.start, std::min(c.end, k.second));
  issuing = interval_union(issuing);
  std::vector<TimeInterval> computing;
  for (const auto& op : interval_union(ops))
    for (const auto& part : interval_difference(op, issuing)) computing.push_back(part);
  double held = 0, whole = 0, samples = 0, in_call = 0;
  int n = 0;
  for (const auto& c : p.collectives) {
    if (c.rank != in.rank || c.end <= c.start || interval_holding(in.step_windows, c.start) < 0) continue;
    ++n;
    whole += double(c.end - c.start);
    held += double(c.end - c.start - busy_in(computing, c.start, c.end));
    in_call += double(busy_in(issuing, c.start, c.end));
  }
  for (const auto& s : in.collectives) {
    CHECK(s.duration >= 0);
    samples += double(s.duration);
  }
  CHECK(static_cast<int>(in.collectives.size()) == n);
  CHECK(samples == held);
  // On this recording a fifth of gloo's time had the training thread in the issuing call (once
  // taken for compute under the collective), and no other operator ran under a collective.
  CHECK(in_call > 0.15 * whole);
  CHECK(held == Approx(whole).epsilon(1e-3));
}
