// Exact timelines and memory for the parallelism around FSDP (issue 15): tensor parallelism with and
// without sequence parallelism, context parallelism (Ulysses and ring), expert parallelism, and the
// pipeline schedules (1F1B, GPipe, interleaved) with the root split over the first and last stage.
// Conventions as test_sim_exact.cpp: collectives cost S·f(n) / bw with bw = 1 byte/ns and no
// latency, f = (n−1)/n for all-gather / reduce-scatter / all-to-all and 2(n−1)/n for all-reduce;
// a point-to-point send costs bytes / bw; copies are free (hbm 0); 8 GPUs per node, so every
// group is inside one node. Every number below is worked out by hand in the comments.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "profiler/sim/step_simulator.h"
#include "storage/errors.h"
#include "tests/sim/sim_fixtures.h"

using namespace ss;
using namespace ss::sim;

namespace {

constexpr int kActivation = static_cast<int>(MemCat::Activation);

// Ops of one kind on one exec unit in one phase, in issue order.
std::vector<SimOp> ops_of(const SimResult& r, OpKind k, int exec, Phase ph) {
  std::vector<SimOp> out;
  for (const auto& o : r.ops)
    if (o.kind == k && o.exec == exec && o.phase == ph) out.push_back(o);
  return out;
}
const SimOp* first_op(const SimResult& r, OpKind k, int exec, Phase ph, int micro = 0) {
  for (const auto& o : r.ops)
    if (o.kind == k && o.exec == exec && o.phase == ph && o.micro == micro) return &o;
  return nullptr;
}

// Root (no parameters) with a head and a tail segment (vocab-parallel embedding: one forward
// all-reduce; column-parallel head: one backward all-reduce) around two blocks u0, u1 of 420
// parameters, 20 of them norm weights TP replicates. Block: fwd 10000, bwd 20000, 10000 B saved of
// which 2000 B are norm inputs TP without SP keeps whole; 2 column->row pairs; TP buffer 1000 B.
SimModel tp_model() {
  SimModel m;
  m.has_parallel_shapes = true;
  m.units.push_back({"", "", "Root", 0, true});
  for (int i = 0; i < 2; ++i) {
    m.units.push_back({"u" + std::to_string(i), "", "Block", 420, false});
    m.units.back().tp_replicated_params = 20;
  }
  SimSegment head{0, 1000, 2000, 0, 0};
  head.parallel.tp_fwd_only = 1;
  head.parallel.tp_bytes = 1000;
  m.segments.push_back(head);
  for (int u = 1; u <= 2; ++u) {
    SimSegment b{u, 10000, 20000, 10000, 0};
    b.input_bytes = 1000;
    b.parallel.tp_pairs = 2;
    b.parallel.tp_bytes = 1000;
    b.parallel.tp_replicated_saved = 2000;
    m.segments.push_back(b);
  }
  SimSegment tail{0, 2000, 4000, 0, 0};
  tail.parallel.tp_bwd_only = 1;
  tail.parallel.tp_bytes = 1000;
  m.segments.push_back(tail);
  return m;
}

// Root without compute (exec 2) + two blocks of 400 parameters, fwd 10000, bwd 20000, 10000 B
// saved; each block has one attention: q,k,v 3000 B, output 1000 B, k,v 2000 B, score work `core`.
SimModel cp_model(TimeNs core) {
  SimModel m = test::chain_model(2, 400, 10000, 20000, 10000);
  m.has_parallel_shapes = true;
  for (auto& sg : m.segments) {
    sg.parallel.attentions = 1;
    sg.parallel.cp_qkv_bytes = 3000;
    sg.parallel.cp_out_bytes = 1000;
    sg.parallel.cp_kv_bytes = 2000;
    sg.parallel.attention_core_ns = core;
  }
  // chain_model puts the root first among the units but it has no segment: exec units are
  // u0 = 0, u1 = 1, root = 2.
  return m;
}

FsdpPlan with(const Parallelism& par, int micro_batches = 1) {
  FsdpPlan p;
  p.parallel = par;
  p.gradient_accumulation = micro_batches;
  return p;
}

}  // namespace

TEST_CASE("tp=2 without SP: halved compute and parameters, TP all-reduces blocking the compute stream", "[sim][exact][parallel][tp]") {
  // World 4 = dp 2 x tp 2: FSDP shards over dp = 2. Per TP rank a block holds (420 − 20)/2 + 20 =
  // 220 parameters: all-gather 440 B -> 220 ns, reduce-scatter 880 B (fp32) -> 440 ns. Compute
  // halves: head 500/1000, blocks 5000/10000, tail 1000/2000. A TP all-reduce of 1000 B over 2
  // ranks: 1000 · 2·(1/2) = 1000 ns. Saved per block: (10000 − 2000)/2 + 2000 = 6000 B.
  const SimModel m = tp_model();
  const ClusterModel c = test::linear_cluster(4);
  Parallelism par;
  par.tp = 2;
  const CompiledStep s = compile_step(m, with(par), c);
  REQUIRE(s.units.size() == 3);  // exec 0 root, 1 u0, 2 u1 (forward order)
  CHECK(s.dp == 2);
  CHECK(s.shard == 2);
  CHECK(s.units[1].params == 220);
  CHECK(s.units[1].ag_bytes == 440);
  CHECK(s.units[1].ag_ns == 220);
  CHECK(s.units[1].rs_ns == 440);
  CHECK(s.segments[1].fwd_ns == 5000);
  CHECK(s.segments[1].bwd_ns == 10000);
  CHECK(s.segments[1].saved_bytes == 6000);
  CHECK(s.segments[0].fwd_ns == 500);
  CHECK(s.segments[3].bwd_ns == 2000);
  const SimResult r = simulate(s);

  // Forward. Root pre-forward (no parameters) prefetches AG(u0) [0,220]. Head [0,500], its
  // embedding all-reduce [500,1500]. u0: copy-out at 1500 (after the all-reduce, the compute
  // stream's next op), AG(u1) prefetched [1500,1720]; u0 [1500,6500], all-reduces [6500,7500],
  // [7500,8500]. u1 [8500,13500], all-reduces [13500,14500], [14500,15500]. Tail [15500,16500]:
  // its all-reduce is backward only.
  CHECK(first_op(r, OpKind::AllGather, 1, Phase::Forward)->end == 220);
  const auto head_ar = ops_of(r, OpKind::TpAllReduce, 0, Phase::Forward);
  REQUIRE(head_ar.size() == 1);
  CHECK(head_ar[0].lane == Lane::ModelParallel);
  CHECK(head_ar[0].start == 500);
  CHECK(head_ar[0].end == 1500);
  CHECK(head_ar[0].bytes == 1000);
  CHECK(first_op(r, OpKind::Compute, 1, Phase::Forward)->start == 1500);  // waits for the all-reduce
  const auto u0_ar = ops_of(r, OpKind::TpAllReduce, 1, Phase::Forward);
  REQUIRE(u0_ar.size() == 2);
  CHECK(u0_ar[0].start == 6500);
  CHECK(u0_ar[0].end == 7500);
  CHECK(u0_ar[1].start == 7500);
  CHECK(u0_ar[1].end == 8500);
  CHECK(first_op(r, OpKind::Compute, 2, Phase::Forward)->start == 8500);
  CHECK(ops_of(r, OpKind::TpAllReduce, 2, Phase::Forward).back().end == 15500);
  CHECK(r.forward_end_ns == 16500);

  // Backward, issued at 16500: the root holds its (empty) parameters, prefetches AG(u1)
  // [16500,16720]; AG(u0) [16720,16940] at u1's pre-backward. Tail bwd [16500,18500], head
  // all-reduce of the input gradient [18500,19500]. u1 bwd [19500,29500], its two all-reduces
  // in reverse order [29500,31500]; RS(u1) [31500,31940]. u0 bwd [31500,41500], all-reduces
  // [41500,43500]; RS(u0) [43500,43940]. Head bwd [43500,44500] (no all-reduce in backward);
  // the compute stream then waits for RS(u0) (done) and the optimizer (0 ns) ends the step.
  const auto tail_ar = ops_of(r, OpKind::TpAllReduce, 0, Phase::Backward);
  REQUIRE(tail_ar.size() == 1);
  CHECK(tail_ar[0].start == 18500);
  CHECK(first_op(r, OpKind::Compute, 2, Phase::Backward)->start == 19500);
  CHECK(ops_of(r, OpKind::TpAllReduce, 2, Phase::Backward).back().end == 31500);
  CHECK(first_op(r, OpKind::ReduceScatter, 2, Phase::Backward)->start == 31500);
  CHECK(first_op(r, OpKind::Compute, 1, Phase::Backward)->start == 31500);
  CHECK(first_op(r, OpKind::ReduceScatter, 1, Phase::Backward)->start == 43500);
  CHECK(r.step_ns == 44500);
  // 2 pairs x 2 blocks x 2 passes + the embedding's + the head's = 10 all-reduces of 1000 B.
  CHECK(r.tp_collectives == 10);
  CHECK(r.tp_bytes == 10000);
  CHECK(r.model_parallel_ns == 10000);
  CHECK(r.model_parallel_exposed_ns == 10000);  // each blocks the compute stream whole
  CHECK(r.compute_busy_ns == 11500 + 23000);
  CHECK(r.exposed_comm_ns == 0);  // FSDP's collectives all hide; TP's are reported apart
  CHECK(r.cp_collectives == 0);
  CHECK(r.ep_collectives == 0);

  // Memory. Persistent: per block 220·4/2 = 440 sharded + 220·8/2 = 880 AdamW -> 2640. Peak
  // 15520: both blocks' activations 2 x 6000, an all-gather buffer 440 and u1's unsharded
  // parameters 440. First at 8500, u1's forward (its own buffer, freed at the next unit's wait),
  // and again at 19500 when u1's backward starts (u0's prefetched buffer). u1's gradients are
  // made at the end of its backward, as its activations go, so they never stack on them.
  CHECK(r.peak_bytes == 15520);
  CHECK(r.peak_time == 8500);
  CHECK(r.peak_by_category[kActivation] == 12000);
  CHECK(r.peak_exec == 2);
  CHECK(r.peak_phase == Phase::Forward);
  CHECK(r.min_bytes >= 0);
}

TEST_CASE("tp=2 with SP: all-gather + reduce-scatter pairs, reversed in backward; norm inputs split", "[sim][exact][parallel][tp]") {
  // As above, but each pair issues an all-gather (before the column-parallel matmul) and a
  // reduce-scatter (after the row-parallel one), 1000 B over 2 ranks: 500 ns each, so a block's
  // collectives take 4 x 500 = 2000 ns as the two all-reduces did and the timeline is unchanged.
  // Saved per block: 8000/2 + 2000/2 = 5000 B (SP splits the norm inputs' sequence too).
  const SimModel m = tp_model();
  const ClusterModel c = test::linear_cluster(4);
  Parallelism par;
  par.tp = 2;
  par.sequence_parallel = true;
  const CompiledStep s = compile_step(m, with(par), c);
  CHECK(s.segments[1].saved_bytes == 5000);
  const SimResult r = simulate(s);
  // With SP the embedding reduce-scatters its output into sequence shards (1000 B: 500 ns, not the
  // all-reduce's 1000): head [0,500], RS [500,1000]; so u0 forward is [1000,6000] and
  // AG [6000,6500], RS [6500,7000], AG [7000,7500], RS [7500,8000].
  std::vector<SimOp> fwd, bwd;
  for (const auto& o : r.ops)
    if (o.exec == 1 && is_model_parallel(o.kind)) (o.phase == Phase::Forward ? fwd : bwd).push_back(o);
  REQUIRE(fwd.size() == 4);
  const OpKind ag = OpKind::TpAllGather, rs = OpKind::TpReduceScatter;
  CHECK((fwd[0].kind == ag && fwd[1].kind == rs && fwd[2].kind == ag && fwd[3].kind == rs));
  CHECK(fwd[0].start == 6000);
  CHECK(fwd[0].end == 6500);
  CHECK(fwd[1].start == 6500);
  CHECK(fwd[3].end == 8000);
  CHECK(fwd[0].bytes == 1000);
  // The head all-gathers its input in forward (+500 ns) and reduce-scatters its input gradient in
  // backward (500 ns, not 1000): backward runs 500 ns earlier than without SP. Backward issues the
  // adjoints in reverse order: u0 bwd [31000,41000]: AG [41000,41500], RS, AG, RS [42500,43000].
  REQUIRE(bwd.size() == 4);
  CHECK((bwd[0].kind == ag && bwd[1].kind == rs && bwd[2].kind == ag && bwd[3].kind == rs));
  CHECK(bwd[0].start == 41000);
  CHECK(bwd[3].end == 43000);
  // The root: embedding RS (forward) and AG (backward), head AG (forward) and RS (backward).
  CHECK(ops_of(r, OpKind::TpAllReduce, 0, Phase::Forward).empty());
  CHECK(ops_of(r, OpKind::TpReduceScatter, 0, Phase::Forward).size() == 1);
  CHECK(ops_of(r, OpKind::TpAllGather, 0, Phase::Forward).size() == 1);
  CHECK(ops_of(r, OpKind::TpReduceScatter, 0, Phase::Backward).size() == 1);
  CHECK(ops_of(r, OpKind::TpAllGather, 0, Phase::Backward).size() == 1);
  // Head backward [43000,44000], then the embedding's all-gather [44000,44500].
  CHECK(r.step_ns == 44500);
  // 4 per block and pass x 2 blocks x 2 passes + 2 (embedding) + 2 (head) = 20 of 1000 B.
  CHECK(r.tp_collectives == 20);
  CHECK(r.tp_bytes == 20000);
  // Peak 2 x 1000 B of norm inputs below the run without SP: 2640 + 2 x 5000 + 2 x 440, first in
  // u1's forward (8000: its buffer and parameters) and again when u1's backward starts (19000).
  CHECK(r.peak_bytes == 13520);
  CHECK(r.peak_time == 8000);
  CHECK(r.peak_by_category[kActivation] == 10000);
}

TEST_CASE("cp=2 Ulysses: two all-to-alls per attention and pass, FSDP over dp x cp", "[sim][exact][parallel][cp]") {
  // World 4 = dp 2 x cp 2; FSDP shards over dp x cp = 4: all-gather 800 B -> 800·3/4 = 600 ns,
  // reduce-scatter 1600 B -> 1200 ns. Compute halves (5000 / 10000), saved 10000/2 = 5000 B.
  // Ulysses per attention: q,k,v 3000/(tp·cp) = 1500 B -> 750 ns; output 500 B -> 250 ns.
  const SimModel m = cp_model(4000);
  const ClusterModel c = test::linear_cluster(4);
  Parallelism par;
  par.cp = 2;
  const CompiledStep s = compile_step(m, with(par), c);
  CHECK(s.shard == 4);
  CHECK(s.units[0].params == 400);  // tp = 1: nothing split
  CHECK(s.units[0].ag_ns == 600);
  CHECK(s.units[0].rs_ns == 1200);
  CHECK(s.segments[0].fwd_ns == 5000);
  CHECK(s.segments[0].saved_bytes == 5000);
  const SimResult r = simulate(s);
  // Forward: AG(u0) [0,600], u0 [600,5600], all-to-all q,k,v [5600,6350], output [6350,6600];
  // AG(u1) [600,1200]; u1 [6600,11600], [11600,12350], [12350,12600]. Backward issued at 12600:
  // AG(u1) [12600,13200], AG(u0) [13200,13800]; u1 bwd [13200,23200], output gradient back first
  // [23200,23450], then q,k,v [23450,24200]; RS(u1) [24200,25400]; u0 bwd [24200,34200],
  // all-to-alls [34200,35200]; RS(u0) [35200,36400]; optimizer 0 ns.
  const auto f = ops_of(r, OpKind::CpAllToAll, 0, Phase::Forward);
  REQUIRE(f.size() == 2);
  CHECK(f[0].start == 5600);
  CHECK(f[0].end == 6350);
  CHECK(f[0].bytes == 1500);
  CHECK(f[1].end == 6600);
  CHECK(f[1].bytes == 500);
  const auto b = ops_of(r, OpKind::CpAllToAll, 1, Phase::Backward);
  REQUIRE(b.size() == 2);
  CHECK(b[0].start == 23200);
  CHECK(b[0].bytes == 500);  // reverse order: the output's gradient first
  CHECK(b[1].end == 24200);
  CHECK(first_op(r, OpKind::ReduceScatter, 0, Phase::Backward)->start == 35200);
  CHECK(r.step_ns == 36400);
  CHECK(r.cp_collectives == 8);
  CHECK(r.cp_bytes == 4 * 2000);
  CHECK(r.model_parallel_exposed_ns == 4000);
  CHECK(r.compute_busy_ns == 30000);
  CHECK(r.exposed_comm_ns == 36400 - 30000 - 4000);  // AG(u0) 600 + AG(u1) in backward 600 + RS(u0) 1200
  CHECK(r.tp_collectives == 0);
  // Persistent 2 x (400·4/4 + 400·8/4) = 2400. Peak 14000: 2 x 5000 activations, an all-gather
  // buffer 800 and u1's parameters 800, first at 6600 in u1's forward (its own buffer) and again
  // at 13200 when u1's backward starts (u0's prefetched buffer).
  CHECK(r.peak_bytes == 14000);
  CHECK(r.peak_time == 6600);
}

TEST_CASE("cp=2 ring: K/V exchanges beside the score work, only max(0, ring - core) exposed", "[sim][exact][parallel][cp]") {
  // Ring: cp − 1 = 1 exchange per attention of k,v 2000/(tp·cp) = 1000 B: 1000 ns forward; the
  // backward sends k,v and their gradients, 2000 B: 2000 ns.
  const ClusterModel c = test::linear_cluster(4);
  Parallelism par;
  par.cp = 2;
  par.cp_kind = "ring";
  {
    // Score work 4000 ns -> 2000 per CP rank forward, 4000 backward: the ring hides entirely and
    // the step is FSDP's alone: AG(u0) [0,600], u0 [600,5600], u1 [5600,10600]; backward at
    // 10600: AG(u1) [10600,11200], AG(u0) [11200,11800]; u1 bwd [11200,21200], RS(u1)
    // [21200,22400]; u0 bwd [21200,31200], RS(u0) [31200,32400].
    const CompiledStep s = compile_step(cp_model(4000), with(par), c);
    CHECK(s.segments[0].ring_fwd_ns == 1000);
    CHECK(s.segments[0].ring_bwd_ns == 2000);
    CHECK(s.segments[0].ring_core_fwd_ns == 2000);
    CHECK(s.segments[0].ring_core_bwd_ns == 4000);
    const SimResult r = simulate(s);
    const auto ring = ops_of(r, OpKind::CpRing, 0, Phase::Forward);
    REQUIRE(ring.size() == 1);
    CHECK(ring[0].lane == Lane::ModelParallel);
    CHECK(ring[0].start == 600);  // beside u0's compute
    CHECK(ring[0].end == 1600);
    CHECK(r.model_parallel_exposed_ns == 0);
    CHECK(r.step_ns == 32400);
    CHECK(r.cp_collectives == 4);
    CHECK(r.cp_bytes == 2 * 1000 + 2 * 2000);
    CHECK(r.model_parallel_ns == 6000);
  }
  {
    // Score work 1000 ns -> 500 forward, 1000 backward: 500 and 1000 ns exposed per block.
    // u0 [600,5600] + 500 -> 6100; u1 [6100,11100] + 500 -> 11600; backward at 11600: AG(u1)
    // [11600,12200], AG(u0) [12200,12800]; u1 bwd [12200,22200] + 1000 -> 23200, RS(u1)
    // [23200,24400]; u0 bwd [23200,33200] + 1000 -> 34200, RS(u0) [34200,35400].
    const SimResult r = simulate(compile_step(cp_model(1000), with(par), c));
    CHECK(first_op(r, OpKind::Compute, 1, Phase::Forward)->start == 6100);
    CHECK(first_op(r, OpKind::CpRing, 1, Phase::Backward)->start == 12200);
    CHECK(first_op(r, OpKind::Compute, 0, Phase::Backward)->start == 23200);
    CHECK(r.model_parallel_exposed_ns == 2 * 500 + 2 * 1000);
    CHECK(r.step_ns == 35400);
  }
}

TEST_CASE("ep=2 on an expert unit: parameters / ep, FSDP over the group / ep, dispatch + combine", "[sim][exact][parallel][ep]") {
  // u0 dense (400 parameters), u1 routed experts (800 parameters, one MoE layer, 2000 B routed
  // tokens). World 4 = dp 4: u0 shards over 4 (AG 800 B -> 600 ns, RS 1600 B -> 1200 ns); an EP
  // rank holds 800/2 = 400 expert parameters sharded over 4/2 = 2 (AG 800 B -> 400 ns, RS 1600 B
  // -> 800 ns). Dispatch and combine: all-to-all of 2000 B over 2 = 1000 ns each.
  SimModel m = test::chain_model(2, 400, 10000, 20000, 0);
  m.has_parallel_shapes = true;
  m.units[2].param_count = 800;
  m.units[2].expert = true;
  m.segments[1].parallel.moe_layers = 1;
  m.segments[1].parallel.ep_bytes = 2000;
  const ClusterModel c = test::linear_cluster(4);
  Parallelism par;
  par.ep = 2;
  const CompiledStep s = compile_step(m, with(par), c);
  CHECK(s.units[0].shard == 4);
  CHECK(s.units[0].ag_ns == 600);
  CHECK(s.units[1].params == 400);
  CHECK(s.units[1].shard == 2);
  CHECK(s.units[1].ag_bytes == 800);
  CHECK(s.units[1].ag_ns == 400);
  CHECK(s.units[1].rs_ns == 800);
  const SimResult r = simulate(s);
  // Forward: AG(u0) [0,600], u0 [600,10600], AG(u1) [600,1000]; u1 [10600,20600], dispatch
  // [20600,21600], combine [21600,22600]. Backward at 22600: AG(u1) [22600,23000], AG(u0)
  // [23000,23600]; u1 bwd [23000,43000], all-to-alls [43000,45000]; RS(u1) [45000,45800]; u0 bwd
  // [45000,65000]; RS(u0) [65000,66200].
  const auto f = ops_of(r, OpKind::EpAllToAll, 1, Phase::Forward);
  REQUIRE(f.size() == 2);
  CHECK(f[0].start == 20600);
  CHECK(f[1].end == 22600);
  CHECK(f[0].bytes == 2000);
  CHECK(ops_of(r, OpKind::EpAllToAll, 0, Phase::Forward).empty());  // the dense block has none
  CHECK(first_op(r, OpKind::AllGather, 1, Phase::Backward)->end == 23000);
  CHECK(first_op(r, OpKind::ReduceScatter, 1, Phase::Backward)->start == 45000);
  CHECK(first_op(r, OpKind::ReduceScatter, 0, Phase::Backward)->start == 65000);
  CHECK(r.step_ns == 66200);
  CHECK(r.ep_collectives == 4);
  CHECK(r.ep_bytes == 8000);
  CHECK(r.model_parallel_exposed_ns == 4000);
  // Persistent: u0 400·4/4 + 400·8/4 = 1200, u1 400·4/2 + 400·8/2 = 2400. Peak 6800 at 45800:
  // u1's RS input 1600 (400·4, held until u0's post-backward), its sharded gradients 800 (made
  // when the reduce-scatter ends) and u0's parameters 800 on 3600. (u0's gradients are made at
  // the end of its backward, 65000.)
  CHECK(r.peak_bytes == 6800);
  CHECK(r.peak_time == 45800);
  // ep must divide the FSDP group.
  par.ep = 3;
  CHECK_THROWS_WITH(compile_step(m, with(par), test::linear_cluster(4)), Catch::Contains("ep 3 must divide the FSDP group"));
}

namespace {

// pp = 2 on the two-block chain: world 4 = pp 2 x dp 2, blocks of 400 parameters: AG 800 B over 2
// -> 400 ns, RS 1600 B -> 800 ns. Optimizer 2000 ns at world 1 -> 1000 over the shard of 2, half
// of it per stage (its share of the parameters): 500. A stage's input is 1000 B: send 1000 ns.
// One micro-batch of one stage alone: AG [0,400], fwd [400,10400]; backward AG [10400,10800], bwd
// [10800,30800], RS [30800,31600]; so F = 10400, B = 21200, optimizer 500.
SimModel pp_model(int blocks) {
  SimModel m = test::chain_model(blocks, 400, 10000, 20000, 10000);
  for (auto& sg : m.segments) sg.input_bytes = 1000;
  m.optimizer_ns = 2000;
  m.optimizer_reference_world = 1;
  return m;
}

// The hand-computed schedules below run every micro-batch with all of FSDP's rules (gather,
// reshard after backward, reduce-scatter): pp_fsdp_every_microbatch. torch pipelining's holding
// of parameters and gradients has its own test at the end.
Parallelism pipeline(int pp, const char* schedule, int v = 1) {
  Parallelism par;
  par.pp = pp;
  par.pp_schedule = schedule;
  par.pp_virtual = v;
  par.pp_fsdp_every_microbatch = true;
  return par;
}

// Starts of the shown stage's forward / backward compute ops on `exec`, by micro-batch.
std::vector<TimeNs> compute_starts(const SimResult& r, int exec, Phase ph, int m) {
  std::vector<TimeNs> out(static_cast<std::size_t>(m), -1);
  for (const auto& o : r.ops)
    if (o.kind == OpKind::Compute && o.exec == exec && o.phase == ph) out[static_cast<std::size_t>(o.micro)] = o.start;
  return out;
}

}  // namespace

TEST_CASE("pp=2 1F1B, 4 micro-batches: schedule, sends, in-flight micro-batches and stage memory", "[sim][exact][parallel][pp]") {
  const SimModel m = pp_model(2);
  const ClusterModel c = test::linear_cluster(4);
  const CompiledStep s = compile_step(m, with(pipeline(2, "1f1b"), 4), c);
  REQUIRE(s.stages.size() == 2);
  CHECK(s.stages[0].first_seg == 0);
  CHECK(s.stages[0].last_seg == 0);
  CHECK(s.stages[0].send_bytes == 1000);
  CHECK(s.stages[0].send_ns == 1000);
  CHECK(s.units[0].ag_ns == 400);
  CHECK(s.optimizer_ns == 1000);
  const SimResult r = simulate(s);
  REQUIRE(r.stages.size() == 2);
  for (const auto& st : r.stages) {
    CHECK(st.fwd_ns == 10400);
    CHECK(st.bwd_ns == 21200);
  }
  // Stage 0 runs F0 F1 B0 F2 B1 F3 B2 B3, stage 1 F0 B0 F1 B1 F2 B2 F3 B3 (F = 10400, B = 21200,
  // a send 1000 between the stages each way):
  //   stage 0 F0 [0,10400]   F1 [10400,20800]
  //   stage 1 F0 [11400,21800] B0 [21800,43000] F1 [43000,53400] B1 [53400,74600]
  //   stage 0 B0 [44000,65200] F2 [65200,75600] B1 [75600,96800] F3 [96800,107200]
  //   stage 1 F2 [76600,87000] B2 [87000,108200] F3 [108200,118600] B3 [118600,139800]
  //   stage 0 B2 [109200,130400] B3 [140800,162000], optimizer [162000,162500]
  // Stage 1 ends at 139800 + 500 = 140300; the step is the slowest stage's end.
  CHECK(r.stages[0].end_ns == 162500);
  CHECK(r.stages[1].end_ns == 140300);
  CHECK(r.step_ns == 162500);
  CHECK(r.stages[0].max_in_flight == 2);
  CHECK(r.stages[1].max_in_flight == 1);
  // Stage memory. Persistent 400·4/2 + 400·8/2 = 2400 per stage. Stage 0 peaks when F2 (or F3)
  // has gathered its parameters while the previous micro-batch's activations wait for its
  // backward: 2 x 10000 activations, sharded gradients 800 (since B0), AG buffer 800 and
  // unsharded parameters 800 -> 24800 (first at 65600). Stage 1 never holds more than one
  // micro-batch: 2400 + 10000 + 800 + 800 + 800 (sharded gradients from B0 on) + 1000, the
  // micro-batch's input received from stage 0, held to its backward = 15800.
  CHECK(r.stages[0].peak_bytes == 24800);
  CHECK(r.stages[1].peak_bytes == 15800);
  REQUIRE(r.shown_stage == 0);  // the stage a memory budget must fit
  CHECK(r.peak_bytes == 24800);
  CHECK(r.peak_time == 65600);
  // The shown stage's ops: compute starts 400 after each slot (its all-gather), by micro-batch.
  CHECK(compute_starts(r, 0, Phase::Forward, 4) == std::vector<TimeNs>{400, 10800, 65600, 97200});
  CHECK(compute_starts(r, 0, Phase::Backward, 4) == std::vector<TimeNs>{44400, 76000, 109600, 141200});
  // Its sends: the forward activations, on the pipeline lane right after each forward.
  std::vector<TimeNs> sends;
  for (const auto& o : r.ops)
    if (o.kind == OpKind::PpSend) {
      CHECK(o.lane == Lane::PipelineP2P);
      CHECK(o.phase == Phase::Forward);
      CHECK(o.bytes == 1000);
      CHECK(o.end == o.start + 1000);
      sends.push_back(o.start);
    }
  CHECK(sends == std::vector<TimeNs>{10400, 20800, 75600, 107200});
  CHECK(r.p2p_sends == 4);
  CHECK(r.p2p_bytes == 4000);
  // Busy 4 x (10400 + 21200) + 500 = 126900 of 162500: the bubble is the rest.
  CHECK(r.stages[0].busy_ns == 126900);
  CHECK(r.bubble_ns == 162500 - 126900);
  // Per micro-batch FSDP collectives: 4 x (2 all-gathers + 1 reduce-scatter) on the shown stage.
  CHECK(r.all_gathers == 8);
  CHECK(r.reduce_scatters == 4);
}

TEST_CASE("pp=2 GPipe and interleaved (v=2) schedules, 4 micro-batches", "[sim][exact][parallel][pp]") {
  const ClusterModel c = test::linear_cluster(4);
  SECTION("GPipe: all forwards, then all backwards") {
    // Stage 0 F0..F3 [0,41600]; stage 1 F0 [11400,21800], F1 [21800,32200], F2 [32200,42600],
    // F3 [42600,53000], B0 [53000,74200], B1 [74200,95400], B2 [95400,116600], B3 [116600,137800];
    // stage 0 B0 [75200,96400], B1 [96400,117600], B2 [117600,138800], B3 [138800,160000]; + 500.
    const SimResult r = simulate(compile_step(pp_model(2), with(pipeline(2, "gpipe"), 4), c));
    REQUIRE(r.stages.size() == 2);
    CHECK(r.stages[0].end_ns == 160500);
    CHECK(r.stages[1].end_ns == 138300);
    CHECK(r.step_ns == 160500);
    CHECK(r.stages[0].max_in_flight == 4);
    CHECK(r.stages[1].max_in_flight == 4);
    // Stage 0 holds all four micro-batches' activations: 2400 + 4 x 10000 + 800 + 800 = 44000
    // when F3 has gathered (no sharded gradients yet: the first backward comes after). Stage 1
    // holds as much and the four inputs it received (4 x 1000): 48000, from F3's gather (43000).
    CHECK(r.stages[0].peak_bytes == 44000);
    CHECK(r.stages[1].peak_bytes == 48000);
    REQUIRE(r.shown_stage == 1);
    CHECK(r.peak_time == 43000);
    CHECK(compute_starts(r, 1, Phase::Forward, 4) == std::vector<TimeNs>{11800, 22200, 32600, 43000});
    CHECK(compute_starts(r, 1, Phase::Backward, 4) == std::vector<TimeNs>{53400, 74600, 95800, 117000});
  }
  SECTION("interleaved 1F1B: two model chunks per stage") {
    // Four blocks, virtual stages u0 | u1 | u2 | u3; rank 0 runs chunks u0 and u2, rank 1 u1 and
    // u3. Every chunk: F = 10400, B = 21200; optimizer 2000 / 2 x 1/4 = 250 per chunk.
    // Rank 0 (warm-up (2−0−1)·2 + (2−1)·2 = 4 forwards):
    //   F(u0,0) F(u0,1) F(u2,0) F(u2,1) F(u0,2) B(u2,0) F(u0,3) B(u2,1) F(u2,2) B(u0,0) F(u2,3)
    //   B(u0,1) B(u2,2) B(u2,3) B(u0,2) B(u0,3)
    // Rank 1 (warm-up 2): F(u1,0) F(u1,1) F(u3,0) B(u3,0) F(u3,1) B(u3,1) F(u1,2) B(u1,0) F(u1,3)
    //   B(u1,1) F(u3,2) B(u3,2) F(u3,3) B(u3,3) B(u1,2) B(u1,3)
    // Times (a forward waits for the previous chunk's forward + 1000, a backward for the next
    // chunk's backward + 1000):
    //   r0 F(u0,0) 0, F(u0,1) 10400; r1 F(u1,0) 11400, F(u1,1) 21800; r0 F(u2,0) 22800,
    //   F(u2,1) 33200, F(u0,2) 43600; r1 F(u3,0) 34200, B(u3,0) 44600, F(u3,1) 65800, B(u3,1)
    //   76200, F(u1,2) 97400; r0 B(u2,0) 66800, F(u0,3) 88000, B(u2,1) 98400, F(u2,2) 119600;
    //   r1 B(u1,0) 107800, F(u1,3) 129000, B(u1,1) 139400, F(u3,2) 160600, B(u3,2) 171000;
    //   r0 B(u0,0) 130000, F(u2,3) 151200, B(u0,1) 161600, B(u2,2) 193200; r1 F(u3,3) 192200,
    //   B(u3,3) 202600, B(u1,2) 223800; r0 B(u2,3) 224800, B(u0,2) 246000; r1 B(u1,3) 247000
    //   [-> 268200]; r0 B(u0,3) 269200 [-> 290400].
    // Ends: rank 0 290400 + 2 x 250 = 290900; rank 1 268200 + 500 = 268700.
    const CompiledStep s = compile_step(pp_model(4), with(pipeline(2, "interleaved", 2), 4), c);
    REQUIRE(s.stages.size() == 4);
    const SimResult r = simulate(s);
    REQUIRE(r.stages.size() == 2);
    CHECK(r.stages[0].end_ns == 290900);
    CHECK(r.stages[1].end_ns == 268700);
    CHECK(r.step_ns == 290900);
    CHECK(r.stages[0].max_in_flight == 5);  // 4 warm-up forwards + 1
    CHECK(r.stages[1].max_in_flight == 3);
    CHECK(r.stages[0].units == "u0 .. u2");
    REQUIRE(r.shown_stage == 0);
    // Rank 0's memory: persistent 2 x (800 + 1600) = 4800; five chunk micro-batches' activations
    // at most. Highest when F(u2,3) has gathered (151600): u0's m1..m3 and u2's m2, m3 saved
    // (5 x 10000), u2's inputs for m2 and m3 received from u1 (2 x 1000), both chunks' sharded
    // gradients (2 x 800, since B(u2,0) and B(u0,0)), AG buffer 800 and unsharded parameters 800
    // -> 60000.
    CHECK(r.stages[0].peak_bytes == 60000);
    CHECK(r.peak_time == 151600);
    // Rank 0's compute, in time order, as (unit, micro-batch, pass).
    std::vector<std::string> order;
    for (const auto& o : r.ops)
      if (o.kind == OpKind::Compute)
        order.push_back(s.units[static_cast<std::size_t>(o.exec)].name + ":" + std::to_string(o.micro) + (o.phase == Phase::Forward ? "F" : "B"));
    CHECK(order == std::vector<std::string>{"u0:0F", "u0:1F", "u2:0F", "u2:1F", "u0:2F", "u2:0B", "u0:3F", "u2:1B", "u2:2F", "u0:0B",
                                            "u2:3F", "u0:1B", "u2:2B", "u2:3B", "u0:2B", "u0:3B"});
    CHECK(first_op(r, OpKind::Compute, 2, Phase::Backward, 0)->start == 66800 + 400);
    CHECK(first_op(r, OpKind::Compute, 0, Phase::Backward, 3)->start == 269200 + 400);
  }
}

TEST_CASE("pp=2: the root's head stays with the first stage, its tail (tail_params) goes to the last, whose hooks span the stage", "[sim][exact][parallel][pp]") {
  // Root of 1000 parameters, 400 of them the tail (norm + head): head segment fwd 1000 bwd 2000,
  // tail fwd 2000 bwd 4000, around blocks u0, u1 (400 parameters, 10000 / 20000, 10000 B saved).
  // Balanced split by fwd + bwd: prefix 3000 | 33000 | 63000 of 69000; target 34500 -> stage 1
  // starts at u1. Stage 0 holds the head's 600 parameters (AG 1200 B -> 600 ns, RS 2400 B -> 1200
  // ns), stage 1 the tail's 400 (AG 400 ns, RS 800 ns). The root keeps its parameters (FSDP2).
  SimModel m = test::chain_model(2, 400, 10000, 20000, 10000);
  m.units[0].param_count = 1000;
  m.units[0].tail_params = 400;
  for (auto& sg : m.segments) sg.input_bytes = 1000;
  m.segments.insert(m.segments.begin(), SimSegment{0, 1000, 2000, 0, 0});
  m.segments.push_back(SimSegment{0, 2000, 4000, 0, 0});
  const ClusterModel c = test::linear_cluster(4);
  const CompiledStep s = compile_step(m, with(pipeline(2, "1f1b"), 1), c);
  REQUIRE(s.stages.size() == 2);
  CHECK(s.stages[0].last_seg == 1);
  CHECK(s.stages[1].first_seg == 2);
  REQUIRE(s.stages[0].has_root_part);
  REQUIRE(s.stages[1].has_root_part);
  CHECK(s.stages[0].root_part.params == 600);
  CHECK(s.stages[1].root_part.params == 400);
  CHECK(s.stages[0].root_part.ag_ns == 600);
  CHECK(s.stages[1].root_part.rs_ns == 800);
  const SimResult r = simulate(s);
  // Stage 0 alone: AG(root) [0,600], head [600,1600], AG(u0) [600,1000], u0 [1600,11600] -> F =
  // 11600; backward AG(u0) [11600,12000], u0 bwd [12000,32000], RS(u0) [32000,32800], head bwd
  // [32000,34000], RS(root part) [34000,35200] -> B = 23600.
  // Stage 1 alone: the stage module is its FSDP root, so the root part is gathered at the stage's
  // pre-forward and reduced after the last layer's backward: AG(root) [0,400], AG(u1) [400,800],
  // u1 [800,10800], tail [10800,12800] -> F = 12800; backward AG(u1) [12800,13200], tail bwd
  // [12800,16800], u1 bwd [16800,36800], RS(u1) [36800,37600], RS(root) [37600,38400] -> B = 25600.
  CHECK(r.stages[0].fwd_ns == 11600);
  CHECK(r.stages[0].bwd_ns == 23600);
  CHECK(r.stages[1].fwd_ns == 12800);
  CHECK(r.stages[1].bwd_ns == 25600);
  // One micro-batch: F0 [0,11600], send, F1 [12600,25400], B1 [25400,51000], send, B0
  // [52000,75600]; optimizer 0.
  CHECK(r.step_ns == 75600);
  // Stage 0: persistent (600 + 400)·4/2 + (600 + 400)·8/2 = 6000; peak 18800 at 1600 (u0 starts):
  // root parameters 1200, AG(u0) 800, u0 parameters 800, 10000 activations.
  // Stage 1: persistent (400 + 400)·12/2 = 4800; peak 18200 in u1's backward: 10000 activations,
  // the input received from stage 0 1000, the root part's parameters and gradients 1600 (held
  // until the stage's backward ends, as FSDPMemTracker shows on a real pp 2 x dp 2 job's last
  // stage), u1's parameters 800.
  CHECK(r.stages[0].peak_bytes == 18800);
  CHECK(r.stages[1].peak_bytes == 18200);
  CHECK(r.shown_stage == 0);
  CHECK(r.peak_by_category[static_cast<int>(MemCat::ShardedParam)] == 2000);

  // Without tail_params the root splits by the head's and tail's forward time: 1000 : 2000.
  m.units[0].tail_params = -1;
  const CompiledStep t = compile_step(m, with(pipeline(2, "1f1b"), 1), c);
  CHECK(t.stages[0].root_part.params == 333);
  CHECK(t.stages[1].root_part.params == 667);
}

TEST_CASE("tp=2 with full checkpointing: the rerun issues the forward's all-reduces again, inside the backward", "[sim][exact][parallel][tp][checkpoint]") {
  // As the tp=2 case, with u0 and u1 fully checkpointed: each keeps its input (1000 B, TP
  // replicates it) and rebuilds 6000 − 1000 = 5000 B in backward by rerunning its forward (5000 ns)
  // and, as Megatron does, the forward's two all-reduces. Forward unchanged (ends 16500). Backward:
  // tail [16500,18500] + all-reduce [18500,19500]; u1: recompute [19500,24500], rerun all-reduces
  // [24500,26500], bwd [26500,36500], all-reduces [36500,38500], RS(u1) [38500,38940]; u0:
  // recompute [38500,43500], all-reduces [43500,45500], bwd [45500,55500], all-reduces
  // [55500,57500], RS(u0) [57500,57940]; head bwd [57500,58500].
  const SimModel m = tp_model();
  const ClusterModel c = test::linear_cluster(4);
  Parallelism par;
  par.tp = 2;
  FsdpPlan p = with(par);
  p.checkpoint["*"] = "full";
  const CompiledStep s = compile_step(m, p, c);
  CHECK(s.segments[1].saved_bytes == 1000);
  CHECK(s.segments[1].recompute_bytes == 5000);
  const SimResult r = simulate(s);
  CHECK(r.step_ns == 58500);
  CHECK(r.tp_collectives == 14);  // 10 + the two blocks' reruns of 2
  CHECK(r.recomputes == 2);
  // The rerun's collectives run in the backward pass and are labelled so (a pipeline replays a
  // backward slot's ops by phase): u1's four backward all-reduces start at 24500, 25500, 36500, 37500.
  const auto u1_bwd = ops_of(r, OpKind::TpAllReduce, 2, Phase::Backward);
  REQUIRE(u1_bwd.size() == 4);
  CHECK(u1_bwd[0].start == 24500);
  CHECK(u1_bwd[1].start == 25500);
  CHECK(u1_bwd[2].start == 36500);
  CHECK(u1_bwd[3].start == 37500);
  CHECK(ops_of(r, OpKind::TpAllReduce, 2, Phase::Forward).size() == 2);
  for (const auto& o : r.ops)
    if (o.phase == Phase::Forward) CHECK(o.end <= r.forward_end_ns);
  // Peak 10520 at 19500: 2640 + 2 x 1000 inputs + AG(u0) 440 + u1's parameters 440 + u1's
  // rebuilt 5000 (its gradients come at the end of its backward, as the rebuilt activations go).
  CHECK(r.peak_bytes == 10520);
  CHECK(r.peak_time == 19500);

  // Pipelined (pp = 2 on world 8, 2 micro-batches): the shown stage's forward ops all lie inside
  // its forward slots, i.e. no rerun collective is replayed with a forward's shift.
  Parallelism pipe = par;
  pipe.pp = 2;
  FsdpPlan pp = with(pipe, 2);
  pp.checkpoint["*"] = "full";
  const SimResult rp = simulate(compile_step(m, pp, test::linear_cluster(8)));
  std::vector<TimeNs> fwd_end(2, 0);  // per micro-batch: the end of its forward compute on the stage
  for (const auto& o : rp.ops)
    if (o.lane == Lane::Compute && o.phase == Phase::Forward) fwd_end[static_cast<std::size_t>(o.micro)] = std::max(fwd_end[static_cast<std::size_t>(o.micro)], o.end);
  int tp_fwd = 0;
  for (const auto& o : rp.ops)
    if (o.kind == OpKind::TpAllReduce && o.phase == Phase::Forward) {
      ++tp_fwd;
      CHECK(o.end <= fwd_end[static_cast<std::size_t>(o.micro)] + 1000 * 2);  // its own collectives follow the compute
    }
  // Per micro-batch the stage's forward issues one all-reduce per pair of its one block (+ the
  // embedding on the first stage): 2 or 3, never the rerun's.
  CHECK((tp_fwd == 2 * 2 || tp_fwd == 2 * 3));
}

TEST_CASE("pp: a stage boundary never cuts a non-root unit (a bucket of u0 and u2 stays on one stage)", "[sim][exact][parallel][pp]") {
  // Four blocks, u0 and u2 bucketed: forward order b(u0) u1 b(u2) u3. Cutting after u0 or u1
  // would put the bucket whole on both stages; only the cut before u3 keeps it on one.
  SimModel m = pp_model(4);
  FsdpPlan p = with(pipeline(2, "1f1b"), 2);
  p.buckets = {{"u0", "u2"}};
  const ClusterModel c = test::linear_cluster(4);
  const CompiledStep s = compile_step(m, p, c);
  REQUIRE(s.stages.size() == 2);
  CHECK(s.stages[0].last_seg == 2);
  CHECK(s.stages[1].first_seg == 3);
  // Stage 0 holds the bucket (800 parameters) and u1, stage 1 u3: persistent 1200·12/2 = 7200 and
  // 400·12/2 = 2400, each at most once.
  const SimResult r = simulate(s);
  CHECK(r.stages[0].units == "u0+u2 .. u1");  // the first and the last unit it starts
  REQUIRE(r.shown_stage == 0);
  CHECK(r.peak_by_category[static_cast<int>(MemCat::ShardedParam)] + r.peak_by_category[static_cast<int>(MemCat::OptimizerState)] == 7200);
  // Three stages would need a second cut, and there is none.
  p.parallel.pp = 3;
  CHECK_THROWS_WITH(compile_step(m, p, test::linear_cluster(6)), Catch::Contains("splits into at most 2 stages"));
}

TEST_CASE("pp under torch pipelining: gathered in backward, held to the last backward, reduced once", "[sim][exact][parallel][pp]") {
  // Two blocks of 400 parameters on two stages (world 4: dp 2), 1F1B with 4 micro-batches; the
  // root has no parameters. Stage 0 runs F0 F1 B0 F2 B1 F3 B2 B3. u0 reshards after each forward
  // (FSDP2 default), so F0..F3 gather it; B0 gathers it again and keeps it (reshard after backward
  // off until the last micro-batch), so F2, B1, F3, B2, B3 find it gathered: 4 + 1 = 5
  // all-gathers. Gradients are reduce-scattered only in B3: 1. Every micro-batch run with all of
  // FSDP's rules (pp_fsdp_every_microbatch) gathers in each forward and backward and reduces each
  // backward: 8 and 4.
  const SimModel m = pp_model(2);
  Parallelism torch_pp;
  torch_pp.pp = 2;
  const ClusterModel c = test::linear_cluster(4);
  FsdpPlan p = with(torch_pp, 4);
  const CompiledStep s = compile_step(m, p, c);
  const SimResult r = simulate(s);
  const int shown_exec = s.segments[static_cast<std::size_t>(s.stages[static_cast<std::size_t>(r.shown_stage)].first_seg)].exec;
  auto count = [&](const SimResult& x, OpKind k) {
    return std::count_if(x.ops.begin(), x.ops.end(), [&](const SimOp& o) { return o.kind == k && o.exec == shown_exec; });
  };
  // Stage 1 runs F0 B0 F1 B1 ...: its forwards after B0 find u1 gathered: F0 and B0 gather, 2.
  CHECK(count(r, OpKind::AllGather) == (r.shown_stage == 0 ? 5 : 2));
  CHECK(count(r, OpKind::ReduceScatter) == 1);
  CHECK(r.reduce_scatters == 1);
  p.parallel.pp_fsdp_every_microbatch = true;
  const SimResult every = simulate(compile_step(m, p, c));
  const int every_exec = s.segments[static_cast<std::size_t>(s.stages[static_cast<std::size_t>(every.shown_stage)].first_seg)].exec;
  CHECK(std::count_if(every.ops.begin(), every.ops.end(), [&](const SimOp& o) { return o.kind == OpKind::AllGather && o.exec == every_exec; }) == 8);
  CHECK(every.reduce_scatters == 4);
  // Holding costs memory (the unsharded parameters and gradients stay) and saves time.
  CHECK(r.step_ns <= every.step_ns);
}
