// Exact timelines and memory for the plan knobs of issue 15: activation checkpointing (full and
// selective) and offload (CPU offload with prefetch depth, optimizer-state offload, pipelined CPU
// optimizer). Same conventions as test_sim_exact.cpp: collectives cost S·(n−1)/n / bw with
// bw = 1 byte/ns, n = 2, no latency; copies free. Every unit has P = 200 parameters: all-gather
// (bf16, 400 B) 200 ns, reduce-scatter (fp32, 800 B) 400 ns. Host link 0.5 B/ns: a 400 B shard
// (fp32, P/2) moves in 800 ns each way; CPU optimizer 1e8 params/s: 100 params in 1000 ns.
#include <catch2/catch.hpp>

#include "profiler/sim/step_simulator.h"
#include "storage/errors.h"
#include "tests/sim/sim_fixtures.h"

using namespace ss;
using namespace ss::sim;

namespace {
using test::find_op;
const SimOp* find_kind(const SimResult& r, OpKind k, int exec) {
  for (const auto& o : r.ops)
    if (o.kind == k && o.exec == exec) return &o;
  return nullptr;
}
SimModel compute_bound(std::int64_t act, TimeNs fwd = 5000) {
  SimModel m = test::chain_model(2, 200, fwd, 10000, act);
  for (auto& sg : m.segments) sg.input_bytes = 1000;
  return m;
}
ClusterModel host_cluster() {
  ClusterModel c = test::linear_cluster(2);
  c.host_link_GBps = 0.5;
  c.host_optimizer_params_per_s = 1e8;
  return c;
}
}  // namespace

TEST_CASE("full activation checkpointing: recompute before backward, only the input saved", "[sim][exact][checkpoint]") {
  // Saved activations 10000 B per unit, input 1000 B. Forward (both plans): AG(u0) [0,200],
  // u0 fwd [200,5200], AG(u1) [200,400], u1 fwd [5200,10200]. Backward issued at 10200:
  // AG(u1) [10200,10400], AG(u0) [10400,10600].
  const SimModel m = compute_bound(10000);
  const ClusterModel c = host_cluster();
  const SimResult base = simulate(compile_step(m, FsdpPlan{}, c));
  // No checkpointing: u1 bwd [10400,20400], RS(u1) [20400,20800], u0 bwd [20400,30400], RS(u0) [30400,30800].
  CHECK(base.step_ns == 30800);
  CHECK(base.recomputes == 0);
  // Peak at 10400 (u1's backward starts): states 2400 (params 2 x 400, AdamW 2 x 800) + activations
  // 20000 + AG buffer of u0 400 + unsharded params of u1 400. u1's unsharded grads are made at the
  // end of its backward compute (20400), as its activations go, and copied into the reduce-scatter
  // input at once (copies are free here): they never stack on the activations.
  CHECK(base.peak_bytes == 23200);

  FsdpPlan p;
  p.checkpoint["*"] = "full";
  const CompiledStep s = compile_step(m, p, c);
  const SimResult r = simulate(s);
  // u1: recompute [10400,15400] (its forward), bwd [15400,25400]; RS(u1) [25400,25800].
  // u0: copy-out at 25400, recompute [25400,30400], bwd [30400,40400]; RS(u0) [40400,40800].
  CHECK(find_op(r, OpKind::Recompute, s, "u1", Phase::Backward)->start == 10400);
  CHECK(find_op(r, OpKind::Compute, s, "u1", Phase::Backward)->start == 15400);
  CHECK(find_op(r, OpKind::Recompute, s, "u0", Phase::Backward)->start == 25400);
  CHECK(find_op(r, OpKind::Compute, s, "u0", Phase::Backward)->start == 30400);
  CHECK(find_op(r, OpKind::ReduceScatter, s, "u0", Phase::Backward)->start == 40400);
  CHECK(r.step_ns == 40800);
  CHECK(r.recomputes == 2);
  CHECK(r.recompute_ns == 10000);
  CHECK(r.compute_busy_ns == 40000);
  // Peak still at 10400: states 2400 + saved inputs 2 x 1000 + AG(u0) 400 + u1's params 400 + u1's
  // rebuilt activations 10000 - 1000. (At 25400, u0's recompute: 2400 + 1000 + 400 + 9000 and
  // u1's reduce-scatter input 800, held to u0's post-backward = 13600.)
  CHECK(r.peak_bytes == 14200);
  CHECK(r.peak_time == 10400);
  CHECK(r.peak_by_category[static_cast<int>(MemCat::Activation)] == 2000 + 9000);
  CHECK(r.min_bytes >= 0);
}

TEST_CASE("a full checkpointing rerun repeats only its measured share of the forward", "[sim][exact][checkpoint]") {
  // As above, but each unit's rerun stops at 40 % of its forward (PyTorch's early stop, measured
  // on a profile): recompute 2000 ns instead of 5000. u1: recompute [10400,12400], bwd
  // [12400,22400], RS(u1) [22400,22800]; u0: recompute [22400,24400], bwd [24400,34400], RS(u0)
  // [34400,34800]. Memory does not change: the rerun rebuilds the same saved tensors.
  SimModel m = compute_bound(10000);
  for (auto& sg : m.segments) sg.rerun_share = 0.4;
  FsdpPlan p;
  p.checkpoint["*"] = "full";
  const CompiledStep s = compile_step(m, p, host_cluster());
  const SimResult r = simulate(s);
  CHECK(find_op(r, OpKind::Recompute, s, "u1", Phase::Backward)->start == 10400);
  CHECK(find_op(r, OpKind::Compute, s, "u1", Phase::Backward)->start == 12400);
  CHECK(find_op(r, OpKind::Recompute, s, "u0", Phase::Backward)->start == 22400);
  CHECK(r.recompute_ns == 4000);
  CHECK(r.step_ns == 34800);
  CHECK(r.peak_bytes == 14200);
  // The share does not touch a plan without checkpointing (the forward itself runs in full).
  CHECK(simulate(compile_step(m, FsdpPlan{}, host_cluster())).step_ns == 30800);

  // The rerun runs the forward's host gaps again too: 1000 ns of measured idle after each
  // forward. Forward: u0 [200,5200] + idle [5200,6200], u1 [6200,11200] + idle [11200,12200];
  // backward issued at 12200: AG(u1) [12200,12400], AG(u0) [12400,12600]. u1: recompute
  // (5000 + 1000) x 0.4 = 2400 [12400,14800], bwd [14800,24800], RS(u1) [24800,25200]; u0:
  // recompute [24800,27200], bwd [27200,37200], RS(u0) [37200,37600].
  for (auto& sg : m.segments) sg.fwd_extra.idle_ns = 1000;
  const CompiledStep s2 = compile_step(m, p, host_cluster());
  const SimResult r2 = simulate(s2);
  CHECK(find_op(r2, OpKind::Recompute, s2, "u1", Phase::Backward)->start == 12400);
  CHECK(find_op(r2, OpKind::Compute, s2, "u1", Phase::Backward)->start == 14800);
  CHECK(r2.recompute_ns == 4800);
  CHECK(r2.step_ns == 37600);
}

TEST_CASE("selective checkpointing: only the matching sub-module reruns", "[sim][exact][checkpoint]") {
  // Each block: attention (fwd 3000 ns of 5000, 6000 B of the 10000 B saved) + feed_forward.
  SimModel m = compute_bound(10000);
  for (auto& sg : m.segments) sg.parts = {{"attention", 3000, 6000}, {"feed_forward", 2000, 4000}};
  const ClusterModel c = host_cluster();
  FsdpPlan p;
  p.checkpoint["*"] = "att*";  // a glob over the sub-module names
  const CompiledStep s = compile_step(m, p, c);
  const SimResult r = simulate(s);
  // Saved: 10000 - (6000 - 1000 input) = 5000 per unit; rebuilt 5000; recompute 3000 ns.
  // u1 recompute [10400,13400], bwd [13400,23400]; RS(u1) [23400,23800]; u0 recompute
  // [23400,26400], bwd [26400,36400]; RS(u0) [36400,36800].
  CHECK(find_op(r, OpKind::Recompute, s, "u1", Phase::Backward)->end == 13400);
  CHECK(find_op(r, OpKind::Recompute, s, "u0", Phase::Backward)->start == 23400);
  CHECK(r.step_ns == 36800);
  CHECK(r.recompute_ns == 6000);
  // Peak at 10400: 2400 + 2 x 5000 saved + AG(u0) 400 + u1's params 400 + 5000 rebuilt.
  CHECK(r.peak_bytes == 18200);

  // A pattern that matches nothing is refused with the sub-modules it could have named.
  FsdpPlan bad;
  bad.checkpoint["u0"] = "mlp";
  CHECK_THROWS_WITH(compile_step(m, bad, c), Catch::Contains("'mlp' matches no sub-module of 'u0'") && Catch::Contains("'attention'"));
  // The root cannot be checkpointed; an unknown unit is named.
  FsdpPlan root;
  root.checkpoint[""] = "full";
  CHECK_THROWS_WITH(compile_step(m, root, c), Catch::Contains("root cannot be checkpointed"));
  FsdpPlan unknown;
  unknown.checkpoint["u9"] = "full";
  CHECK_THROWS_WITH(compile_step(m, unknown, c), Catch::Contains("'u9' is not an FSDP unit"));
}

TEST_CASE("CPU offload: shards up before each all-gather, grads down, optimizer on the CPU", "[sim][exact][offload]") {
  const SimModel m = compute_bound(0);
  const ClusterModel c = host_cluster();
  FsdpPlan p;
  p.offload = "cpu";
  const CompiledStep s = compile_step(m, p, c);
  const SimResult r = simulate(s);
  // Forward: H2D(u0) [0,800], AG(u0) [800,1000], u0 fwd [1000,6000]; H2D(u1) issued with u1's
  // prefetch at 1000: [1000,1800], AG(u1) [1800,2000]; u1 fwd [6000,11000].
  CHECK(find_op(r, OpKind::HostToDevice, s, "u0", Phase::Forward)->start == 0);
  CHECK(find_op(r, OpKind::AllGather, s, "u0", Phase::Forward)->start == 800);
  CHECK(find_op(r, OpKind::HostToDevice, s, "u1", Phase::Forward)->start == 1000);
  CHECK(find_op(r, OpKind::AllGather, s, "u1", Phase::Forward)->start == 1800);
  CHECK(find_op(r, OpKind::Compute, s, "u1", Phase::Forward)->start == 6000);
  // Backward issued at 11000: H2D(u1) [11000,11800], AG(u1) [11800,12000]; u0's prefetch once
  // u1's copy-out is done (FSDP2's pre_backward prefetches after its wait): H2D(u0)
  // [12000,12800], AG(u0) [12800,13000]; u1 bwd [12000,22000], RS(u1) [22000,22400], D2H(u1)
  // [22400,23200]; u0 bwd [22000,32000], RS(u0) [32000,32400], D2H(u0) [32400,33200]; CPU AdamW
  // [33200,35200].
  CHECK(find_op(r, OpKind::HostToDevice, s, "u0", Phase::Backward)->start == 12000);
  CHECK(find_op(r, OpKind::AllGather, s, "u0", Phase::Backward)->start == 12800);
  CHECK(find_op(r, OpKind::Compute, s, "u1", Phase::Backward)->start == 12000);
  CHECK(find_op(r, OpKind::DeviceToHost, s, "u1", Phase::Backward)->start == 22400);
  CHECK(find_op(r, OpKind::DeviceToHost, s, "u0", Phase::Backward)->start == 32400);
  const SimOp* opt = find_kind(r, OpKind::CpuOptimizer, -1);
  REQUIRE(opt);
  CHECK(opt->lane == Lane::CpuOptimizer);
  CHECK(opt->start == 33200);
  CHECK(opt->end == 35200);
  CHECK(find_kind(r, OpKind::Optimizer, -1) == nullptr);  // no GPU optimizer step
  CHECK(r.step_ns == 35200);
  CHECK(r.host_copy_ns == 6 * 800);
  CHECK(r.host_copy_bytes == 6 * 400);
  CHECK(r.cpu_optimizer_ns == 2000);
  // Device memory: no resident shards or states. Peak 1600 at 1800: AG buffer of u0 400, its
  // unsharded params 400, u1's shard copied up 400, AG buffer of u1 400.
  CHECK(r.peak_bytes == 1600);
  CHECK(r.peak_time == 1800);
  CHECK(r.peak_by_category[static_cast<int>(MemCat::OptimizerState)] == 0);
  CHECK(r.min_bytes == 0);
  std::int64_t end = 0;
  for (const auto& e : r.memory) end += e.delta;
  CHECK(end == 0);  // every shard copy and every sharded grad left the device

  // Pipelined: the CPU updates u1 [23200,24200] as soon as its grads are down, u0 [33200,34200].
  p.pipelined_optimizer = true;
  const SimResult pr = simulate(compile_step(m, p, c));
  CHECK(pr.step_ns == 34200);
  CHECK(pr.cpu_optimizer_ns == 2000);
}

TEST_CASE("CPU offload prefetch depth 2 copies the next shard with this one", "[sim][exact][offload]") {
  // Short forwards (100 ns) put the host copies on the critical path.
  const SimModel m = compute_bound(0, 100);
  const ClusterModel c = host_cluster();
  FsdpPlan p;
  p.offload = "cpu";
  const CompiledStep s1 = compile_step(m, p, c);
  const SimResult k1 = simulate(s1);
  // Depth 1: H2D(u0) [0,800], AG(u0) [800,1000], u0 fwd [1000,1100], H2D(u1) [1000,1800], AG(u1)
  // [1800,2000], u1 fwd [2000,2100]; backward from 2100 as in the test above: u1 bwd
  // [3100,13100], u0 bwd [13100,23100], RS(u0) [23100,23500], D2H(u0) [23500,24300], CPU [24300,26300].
  CHECK(find_op(k1, OpKind::Compute, s1, "u1", Phase::Forward)->start == 2000);
  CHECK(k1.step_ns == 26300);
  p.offload_prefetch_depth = 2;
  const CompiledStep s2 = compile_step(m, p, c);
  const SimResult k2 = simulate(s2);
  // Depth 2: H2D(u1) goes with H2D(u0): [800,1600]; AG(u1) [1600,1800]; u1 fwd [1800,1900].
  CHECK(find_op(k2, OpKind::HostToDevice, s2, "u1", Phase::Forward)->start == 800);
  CHECK(find_op(k2, OpKind::AllGather, s2, "u1", Phase::Forward)->start == 1600);
  CHECK(find_op(k2, OpKind::Compute, s2, "u1", Phase::Forward)->start == 1800);
  CHECK(k2.step_ns == 26100);
  // Two shards are up at once in forward: peak 400 (AG u0) + 400 (u0's shard) + 400 (u1's shard) at 800..1000.
  CHECK(k2.peak_bytes == 1600);
}

TEST_CASE("optimizer-state offload: states leave the device, grads down, update, params up", "[sim][exact][offload]") {
  const SimModel m = compute_bound(0);
  const ClusterModel c = host_cluster();
  const SimResult base = simulate(compile_step(m, FsdpPlan{}, c));
  FsdpPlan p;
  p.offload = "optimizer";
  const CompiledStep s = compile_step(m, p, c);
  const SimResult r = simulate(s);
  // Backward as without offload (ends 30800), then D2H of all grads [30800,32400], CPU AdamW
  // [32400,34400], H2D of all params [34400,36000].
  const SimOp* d = find_kind(r, OpKind::DeviceToHost, -1);
  const SimOp* h = find_kind(r, OpKind::HostToDevice, -1);
  REQUIRE(d);
  REQUIRE(h);
  CHECK(d->start == 30800);
  CHECK(find_kind(r, OpKind::CpuOptimizer, -1)->start == 32400);
  CHECK(h->start == 34400);
  CHECK(r.step_ns == 36000);
  // The same memory curve minus the AdamW states (2 x 800 B).
  CHECK(r.peak_bytes == base.peak_bytes - 1600);
  CHECK(r.peak_by_category[static_cast<int>(MemCat::OptimizerState)] == 0);

  // Pipelined: u1's D2H [20800,21600], CPU [21600,22600], H2D [22600,23400] while u0 computes;
  // u0's D2H [30800,31600], CPU [31600,32600], H2D [32600,33400].
  p.pipelined_optimizer = true;
  const CompiledStep sp = compile_step(m, p, c);
  const SimResult rp = simulate(sp);
  CHECK(find_op(rp, OpKind::DeviceToHost, sp, "u1", Phase::Backward)->start == 20800);
  CHECK(find_op(rp, OpKind::HostToDevice, sp, "u1", Phase::Optimizer)->end == 23400);
  CHECK(rp.step_ns == 33400);
}
