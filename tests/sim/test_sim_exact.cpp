// Exact timelines and memory on small hand-computed cases. Cluster: collectives cost
// S·(n−1)/n / bw with bw = 1 byte/ns and n = 2, no latency; so an all-gather of a unit with P
// parameters (bf16: 2P bytes) takes P ns and its reduce-scatter (fp32: 4P bytes) 2P ns.
// Copies are free (hbm_bytes_per_ns = 0) and there is no compute slowdown.
#include <catch2/catch.hpp>

#include "profiler/sim/step_simulator.h"
#include "tests/sim/sim_fixtures.h"

using namespace ss;
using namespace ss::sim;

namespace {
using test::find_op;
}  // namespace

TEST_CASE("two units, communication-bound: FIFO all-gather/reduce-scatter queue", "[sim][exact]") {
  // u0, u1: P = 2000 -> AG 2000 ns, RS 4000 ns; forward 500 ns, backward 1000 ns each.
  SimModel m = test::chain_model(2, 2000, 500, 1000);
  const ClusterModel c = test::linear_cluster(2);
  CompiledStep s = compile_step(m, FsdpPlan{}, c);
  SimResult r = simulate(s);
  // Forward: AG(u0) [0,2000]; u0 waits -> fwd [2000,2500]; AG(u1) is issued after u0's copy-out
  //   (2000) -> [2000,4000]; u1 fwd waits -> [4000,4500].
  CHECK(find_op(r, OpKind::AllGather, s, "u0", Phase::Forward)->start == 0);
  CHECK(find_op(r, OpKind::AllGather, s, "u1", Phase::Forward)->start == 2000);
  CHECK(find_op(r, OpKind::Compute, s, "u0", Phase::Forward)->start == 2000);
  CHECK(find_op(r, OpKind::Compute, s, "u1", Phase::Forward)->start == 4000);
  // Backward (issued when forward ends at 4500): AG(u1) [4500,6500], prefetch AG(u0) [6500,8500];
  //   u1 bwd [6500,7500]; RS(u1) queues behind AG(u0): [8500,12500];
  //   u0 bwd [8500,9500]; its RS copy-in waits for RS(u1) (12500); RS(u0) [12500,16500].
  CHECK(find_op(r, OpKind::AllGather, s, "u1", Phase::Backward)->start == 4500);
  CHECK(find_op(r, OpKind::AllGather, s, "u0", Phase::Backward)->start == 6500);
  CHECK(find_op(r, OpKind::Compute, s, "u1", Phase::Backward)->start == 6500);
  CHECK(find_op(r, OpKind::ReduceScatter, s, "u1", Phase::Backward)->start == 8500);
  CHECK(find_op(r, OpKind::Compute, s, "u0", Phase::Backward)->start == 8500);
  CHECK(find_op(r, OpKind::ReduceScatter, s, "u0", Phase::Backward)->start == 12500);
  // End of backward waits for every RS: 16500; optimizer 0 ns.
  CHECK(r.step_ns == 16500);
  CHECK(r.compute_busy_ns == 3000);        // 2 x 500 + 2 x 1000
  CHECK(r.exposed_comm_ns == 16500 - 3000);
  CHECK(r.all_gathers == 4);
  CHECK(r.reduce_scatters == 2);

  // Keeping u1 unsharded removes its backward AG: AG(u0) [4500,6500]; u1 bwd [4500,5500];
  // RS(u1) [6500,10500]; u0 bwd [6500,7500]; RS(u0) waits for RS(u1): [10500,14500].
  FsdpPlan keep;
  keep.unsharded = {"u1"};
  SimResult k = simulate(compile_step(m, keep, c));
  CHECK(k.step_ns == 14500);
  CHECK(k.all_gathers == 3);
}

TEST_CASE("one unit: memory by category over the step", "[sim][exact][memory]") {
  // P = 1000, world 2: sharded params 1000*4/2 = 2000 B, AdamW states 1000*8/2 = 4000 B,
  // unsharded params / AG buffer / unsharded grads 2000 B, RS buffer 4000 B, sharded grads 2000 B,
  // saved activations 600 B. AG 1000 ns, RS 2000 ns, forward 100 ns, backward 200 ns.
  SimModel m = test::chain_model(1, 1000, 100, 200, 600);
  m.optimizer_ns = 300;
  m.optimizer_reference_world = 2;
  const ClusterModel c = test::linear_cluster(2);
  CompiledStep s = compile_step(m, FsdpPlan{}, c);
  SimResult r = simulate(s, true);
  // t=0: 6000 persistent + AG buffer 2000 = 8000. t=1000: copy-out +2000, activations +600 -> 10600
  // (the peak, in u0's forward). t=1100: reshard -2000, AG buffer -2000, backward AG +2000 -> 8600.
  // t=2100 (backward AG done): copy-out +2000, buffer -2000, unsharded grads +2000 -> 10600, equal
  // to the forward peak, not higher, so the first peak stays.
  // t=2300: activations -600, params -2000, grads -2000, RS buffer +4000 -> 10000.
  // t=4300: RS buffer -4000, sharded grads +2000 -> 8000. Optimizer [4300,4600]; grads -2000 -> 6000.
  CHECK(r.step_ns == 4600);
  CHECK(r.peak_bytes == 10600);
  CHECK(r.peak_time == 1000);
  CHECK(r.peak_phase == Phase::Forward);
  REQUIRE(r.peak_exec >= 0);
  CHECK(s.units[static_cast<std::size_t>(r.peak_exec)].name == "u0");
  CHECK(r.peak_by_category[static_cast<int>(MemCat::ShardedParam)] == 2000);
  CHECK(r.peak_by_category[static_cast<int>(MemCat::OptimizerState)] == 4000);
  CHECK(r.peak_by_category[static_cast<int>(MemCat::AllGatherBuffer)] == 2000);
  CHECK(r.peak_by_category[static_cast<int>(MemCat::UnshardedParam)] == 2000);
  CHECK(r.peak_by_category[static_cast<int>(MemCat::Activation)] == 600);
  // After the step everything transient is gone: 6000 persistent bytes remain.
  std::int64_t end = 0;
  for (const auto& e : r.memory) end += e.delta;
  CHECK(end == 6000);
  CHECK(r.min_bytes >= 0);
  // Per-module breakdown: u0 owns everything here, so its own peak is the rank's peak.
  CHECK(r.unit_memory[static_cast<std::size_t>(s.exec_of_unit[1])].own_peak == 10600);
}

TEST_CASE("reshard_after_forward=False keeps parameters from forward to post-backward", "[sim][exact][memory]") {
  SimModel m = test::chain_model(1, 1000, 100, 200, 0);
  const ClusterModel c = test::linear_cluster(2);
  FsdpPlan p;
  p.unsharded = {"u0"};
  SimResult r = simulate(compile_step(m, p, c));
  // Forward: AG [0,1000], copy-out at 1000 (+2000 params), fwd [1000,1100]; no reshard.
  // Backward: no AG; bwd [1100,1300]; RS copy-in at 1300, RS [1300,3300]. Step 3300.
  CHECK(r.step_ns == 3300);
  CHECK(r.all_gathers == 1);
  // Peak at 1100..1300: persistent 6000 + params 2000 + unsharded grads 2000 = 10000; the AG buffer
  // (2000) was freed at the end of forward (1100) before the grads are allocated at 1100.
  CHECK(r.peak_bytes == 10000);
}

TEST_CASE("ZeRO-2 keeps every unit's parameters; a plan can reshard one again", "[sim][exact]") {
  SimModel m = test::chain_model(2, 2000, 500, 1000);
  const ClusterModel c = test::linear_cluster(2);
  FsdpPlan z2;
  z2.zero_stage = 2;
  SimResult r = simulate(compile_step(m, z2, c));
  CHECK(r.all_gathers == 2);  // forward only
  // Same as keeping both units: AG(u0) [0,2000], AG(u1) [2000,4000], u0 [2000,2500], u1 [4000,4500],
  // u1 bwd [4500,5500], RS(u1) [5500,9500], u0 bwd [5500,6500], RS(u0) waits: [9500,13500].
  CHECK(r.step_ns == 13500);
  z2.resharded = {"u0"};
  CHECK(simulate(compile_step(m, z2, c)).all_gathers == 3);
}

TEST_CASE("reshard_after_forward=k gathers backward over k ranks and keeps a 1/k slice", "[sim][exact]") {
  SimModel m = test::chain_model(1, 8000, 100, 200, 0);
  ClusterModel c = test::linear_cluster(8);
  FsdpPlan p;
  p.reshard_degree["u0"] = 2;
  CompiledStep s = compile_step(m, p, c);
  // Forward AG over 8 ranks: 16000 B * 7/8 = 14000 ns. Backward AG over 2 ranks: 16000 * 1/2 = 8000 ns.
  const ExecUnit& u0 = s.units[static_cast<std::size_t>(s.exec_of_unit[1])];
  CHECK(u0.ag_ns == 14000);
  CHECK(u0.ag_bwd_ns == 8000);
  SimResult r = simulate(s);
  const SimOp* bag = nullptr;
  for (const auto& o : r.ops)
    if (o.kind == OpKind::AllGather && o.phase == Phase::Backward) bag = &o;
  REQUIRE(bag);
  CHECK(bag->end - bag->start == 8000);
  // A degree that does not divide the shard group is refused.
  p.reshard_degree["u0"] = 3;
  CHECK_THROWS_WITH(compile_step(m, p, c), Catch::Contains("must divide the shard group size 8"));
}

TEST_CASE("separate reduce-scatter group lets the next all-gather pass a reduce-scatter", "[sim][exact]") {
  SimModel m = test::chain_model(2, 2000, 500, 1000);
  const ClusterModel c = test::linear_cluster(2);
  FsdpPlan p;
  p.separate_reduce_scatter_group = true;
  SimResult r = simulate(compile_step(m, p, c));
  // As in the first case up to u1's backward [6500,7500]; RS(u1) now starts at 7500 on its own queue
  // [7500,11500]; u0 bwd [8500,9500]; RS(u0) waits for RS(u1): [11500,15500].
  CHECK(r.step_ns == 15500);
}

TEST_CASE("buckets share one all-gather; bucket caps group consecutive units", "[sim][exact]") {
  SimModel m = test::chain_model(4, 1000, 100, 200);
  const ClusterModel c = test::linear_cluster(2);
  FsdpPlan p;
  p.buckets = {{"u0", "u1"}};
  CompiledStep s = compile_step(m, p, c);
  REQUIRE(s.units.size() == 4);  // u0+u1, u2, u3, root (no compute: last)
  CHECK(s.units[0].name == "u0+u1");
  CHECK(s.units[0].ag_bytes == 4000);
  // Caps in MiB: each unit is 2000 B; a cap of 0.004 MiB (4194 B) fits two units per bucket,
  // bucket 1's cap of 0.002 MiB (2097 B) fits one.
  FsdpPlan caps;
  caps.bucket_cap_mb = {{"default", 0.004}, {"1", 0.002}};
  CompiledStep s2 = compile_step(m, caps, c);
  std::vector<std::string> names;
  for (const auto& e : s2.units) names.push_back(e.name);
  CHECK(names == std::vector<std::string>{"u0+u1", "u2", "u3", ""});
  // Two all-gathers per bucket and pass, one reduce-scatter per bucket: 3 buckets.
  SimResult r = simulate(s2);
  CHECK(r.all_gathers == 6);
  CHECK(r.reduce_scatters == 3);
}

TEST_CASE("gradient accumulation and HSDP", "[sim][exact]") {
  SimModel m = test::chain_model(2, 1000, 100, 200);
  ClusterModel c = test::linear_cluster(4);
  FsdpPlan p;
  p.gradient_accumulation = 3;
  SimResult r = simulate(compile_step(m, p, c));
  CHECK(r.all_gathers == 2 * 2 * 3);
  CHECK(r.reduce_scatters == 2 * 3);
  p.sync_every_microbatch = false;
  r = simulate(compile_step(m, p, c));
  CHECK(r.reduce_scatters == 2);  // only the last micro-batch reduces
  FsdpPlan h;
  h.hsdp_replicate = 2;  // shard group 2, replicate 2
  CompiledStep s = compile_step(m, h, c);
  CHECK(s.shard == 2);
  // All-reduce of the 2-rank shard (4000 B / 2 = 2000 B) over 2 replicas: 2000 * 2 * 1/2 = 2000 ns.
  CHECK(s.units[0].ar_ns == 2000);
  r = simulate(s);
  CHECK(r.all_reduces == 2);
  h.hsdp_replicate = 3;
  CHECK_THROWS_WITH(compile_step(m, h, c), Catch::Contains("does not divide the world size 4"));
}

TEST_CASE("explicit prefetch lists replace the implicit order", "[sim][exact]") {
  SimModel m = test::chain_model(3, 1000, 5000, 5000);
  const ClusterModel c = test::linear_cluster(2);
  FsdpPlan p;
  p.forward_prefetch["u0"] = {"u1", "u2"};
  SimResult r = simulate(compile_step(m, p, c));
  // AG(u0) [0,1000]; u0's copy-out ends at 1000, then AG(u1) [1000,2000] and AG(u2) [2000,3000]
  // are both issued from u0 (without the list AG(u2) would wait for u1's copy-out at 6000).
  std::vector<TimeNs> fwd_ag;
  for (const auto& o : r.ops)
    if (o.kind == OpKind::AllGather && o.phase == Phase::Forward) fwd_ag.push_back(o.start);
  CHECK(fwd_ag == std::vector<TimeNs>{0, 1000, 2000});
  FsdpPlan bad;
  bad.forward_prefetch["u0"] = {"nope"};
  CHECK_THROWS_WITH(compile_step(m, bad, c), Catch::Contains("'nope' is not an FSDP unit"));
}

TEST_CASE("compute overlapping NCCL is slowed by the cluster's factor", "[sim][exact]") {
  SimModel m = test::chain_model(2, 2000, 4000, 0);
  ClusterModel c = test::linear_cluster(2);
  c.overlap_slowdown = 1.0;  // half speed under a collective
  SimResult r = simulate(compile_step(m, FsdpPlan{}, c));
  // u0 fwd starts at 2000 while AG(u1) runs [2000,4000]: 2000 ns at half speed = 1000 ns of work,
  // then 3000 ns alone -> ends at 7000 instead of 6000.
  const SimOp* f0 = nullptr;
  for (const auto& o : r.ops)
    if (o.kind == OpKind::Compute && o.phase == Phase::Forward && o.exec >= 0 && o.start == 2000) f0 = &o;
  REQUIRE(f0);
  CHECK(f0->end == 7000);
}

TEST_CASE("measured non-FSDP collectives and idle are replayed on the critical path", "[sim][exact][replay]") {
  // u0, u1: P = 1000 -> AG 1000 ns, RS 2000 ns; forward 500 ns, backward 1000 ns each.
  // u0's forward also waited 300 ns for an all-to-all and 700 ns for the host (idle); u1's
  // backward 400 ns for a send/recv and 100 ns idle. Measured at world 2, replayed at world 2.
  SimModel m = test::chain_model(2, 1000, 500, 1000);
  m.segments[0].fwd_extra = {300, 2, 0, 700};
  m.segments[1].bwd_extra = {400, 1, 0, 100};
  m.other_comm_world = 2;
  const ClusterModel c = test::linear_cluster(2);
  const CompiledStep s = compile_step(m, FsdpPlan{}, c);
  const SimResult r = simulate(s);
  // Forward: AG(u0) [0,1000]; u0 fwd [1000,1500], all-to-all [1500,1800], idle [1800,2500];
  //   AG(u1) (issued at u0's copy-out, 1000) [1000,2000] is done before u1 can start:
  //   u1 fwd [2500,3000]. (Without the extras u1 would wait for AG(u1) only: [2000,2500].)
  CHECK(find_op(r, OpKind::OtherComm, s, "u0", Phase::Forward)->start == 1500);
  CHECK(find_op(r, OpKind::Idle, s, "u0", Phase::Forward)->start == 1800);
  CHECK(find_op(r, OpKind::Compute, s, "u1", Phase::Forward)->start == 2500);
  // Backward (issued at 3000): AG(u1) [3000,4000], AG(u0) [4000,5000]; u1 bwd [4000,5000],
  //   send/recv [5000,5400], idle [5400,5500]; RS(u1) [5500,7500]; u0 bwd [5500,6500];
  //   RS(u0) waits for RS(u1): [7500,9500]. Step 9500 (8500 without the extras: +500 in forward,
  //   +500 in backward).
  CHECK(find_op(r, OpKind::OtherComm, s, "u1", Phase::Backward)->start == 5000);
  CHECK(find_op(r, OpKind::ReduceScatter, s, "u1", Phase::Backward)->start == 5500);
  CHECK(find_op(r, OpKind::Compute, s, "u0", Phase::Backward)->start == 5500);
  CHECK(find_op(r, OpKind::ReduceScatter, s, "u0", Phase::Backward)->start == 7500);
  CHECK(r.step_ns == 9500);
  CHECK(r.compute_busy_ns == 3000);  // 2 x 500 + 2 x 1000
  CHECK(r.other_comm_ns == 700);     // 300 + 400
  CHECK(r.idle_ns == 800);           // 700 + 100
  CHECK(r.exposed_comm_ns == 9500 - 3000 - 700 - 800);
  CHECK(r.all_gathers == 4);  // the measured collectives are not FSDP's
  SimModel plain = test::chain_model(2, 1000, 500, 1000);
  CHECK(simulate(compile_step(plain, FsdpPlan{}, c)).step_ns == 8500);
}

TEST_CASE("measured non-FSDP collectives scale with the world size only when their sizes are known", "[sim][exact][replay]") {
  // One all-to-all of 8000 B measured at 2 ranks for 1000 ns. Linear cluster: cost(S, n) =
  // S (n-1)/n ns -> 4000 ns at 2, 7000 ns at 8: at world 8 it replays 1000 x 7000 / 4000 = 1750 ns.
  SimModel m = test::chain_model(1, 0, 500, 1000);
  m.segments[0].fwd_extra = {1000, 1, 8000, 50};
  m.other_comm_world = 2;
  CHECK(compile_step(m, FsdpPlan{}, test::linear_cluster(2)).segments[0].fwd_other_ns == 1000);
  const CompiledStep at8 = compile_step(m, FsdpPlan{}, test::linear_cluster(8));
  CHECK(at8.segments[0].fwd_other_ns == 1750);
  CHECK(at8.segments[0].fwd_idle_ns == 50);  // host time does not depend on the world size
  m.other_comm_world = 0;  // sizes unknown (nsys exports): replayed as measured
  CHECK(compile_step(m, FsdpPlan{}, test::linear_cluster(8)).segments[0].fwd_other_ns == 1000);
}

TEST_CASE("the loss runs between the root's post-forward and its pre-backward", "[sim][exact][memory]") {
  // Root head + u0 + root tail (norm, output head and loss). What the loss saved (loss_saved_bytes,
  // a part of the tail's saved activations) is freed by the loss's backward before the backward's
  // first all-gather and gradients, and u0's forward all-gather buffer is gone before the tail's
  // forward (the root's post-forward released it), as in an FSDP2 job (docs/simulator.md).
  auto model = [](std::int64_t loss_saved) {
    SimModel m = test::chain_model(1, 1000, 100, 200, 600);
    m.segments.insert(m.segments.begin(), SimSegment{0, 10, 10, 0, 0});
    SimSegment tail{0, 50, 100, 5000, 0};
    tail.loss_saved_bytes = loss_saved;
    m.segments.push_back(tail);
    return m;
  };
  const ClusterModel c = test::linear_cluster(2);
  const SimResult without = simulate(compile_step(model(0), FsdpPlan{}, c), true);
  const SimResult with = simulate(compile_step(model(4000), FsdpPlan{}, c), true);
  // Persistent 6000; u0's saved 600 and the tail's 5000 at the forward's end, u0's parameters
  // resharded and its all-gather buffer released before the tail: 11600, the peak either way.
  CHECK(with.peak_bytes == 11600);
  CHECK(with.peak_phase == Phase::Forward);
  CHECK(with.peak_by_category[static_cast<int>(MemCat::AllGatherBuffer)] == 0);
  // At the backward's start u0's all-gather buffer (2000) arrives: without the loss's backward
  // first, on top of everything the forward left (13600, the peak); with it, 4000 lower.
  CHECK(without.peak_bytes == 13600);
  CHECK(without.peak_phase == Phase::Backward);
  // Step time and the order of work are unchanged: only memory moves.
  CHECK(with.step_ns == without.step_ns);
  CHECK(with.ops.size() == without.ops.size());
  std::int64_t end = 0;
  for (const auto& e : with.memory) end += e.delta;
  CHECK(end == 6000);
  CHECK(with.min_bytes >= 0);
}
