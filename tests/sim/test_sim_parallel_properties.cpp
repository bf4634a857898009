// Properties of the parallelism around FSDP over random small models and plans (fixed seeds, so a
// failure reproduces): degree 1 changes nothing, more TP never costs memory, a pipeline's step and
// memory bounds, TP collective counts from the shapes, no schedule deadlocks, and the refusals.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <set>
#include <string>

#include "profiler/sim/step_simulator.h"
#include "storage/errors.h"
#include "tests/sim/sim_fixtures.h"

using namespace ss;
using namespace ss::sim;

namespace {

// test::random_model plus the shapes a model description gives: TP pairs and buffers, norm
// weights and inputs TP keeps whole, one attention per block, and the root's embedding (forward
// all-reduce) and head (backward all-reduce).
SimModel random_shaped_model(std::mt19937_64& rng, int max_units = 10) {
  SimModel m = test::random_model(rng, max_units);
  m.has_parallel_shapes = true;
  std::uniform_int_distribution<std::int64_t> bytes(1 << 16, 64 << 20);
  const std::int64_t tp_bytes = bytes(rng);
  for (auto& u : m.units) u.tp_replicated_params = u.param_count / 200;  // norm weights: a sliver
  for (std::size_t i = 0; i < m.segments.size(); ++i) {
    SimSegment& sg = m.segments[i];
    ParallelShape& ps = sg.parallel;
    ps.tp_bytes = tp_bytes;
    sg.input_bytes = sg.saved_activation_bytes / 8;
    if (i == 0) {
      ps.tp_fwd_only = 1;
    } else if (i + 1 == m.segments.size()) {
      ps.tp_bwd_only = 1;
    } else {
      ps.tp_pairs = 1 + static_cast<int>(rng() % 3);
      ps.tp_replicated_saved = sg.saved_activation_bytes / 4;
      ps.attentions = 1;
      ps.cp_qkv_bytes = 3 * tp_bytes / 2;
      ps.cp_out_bytes = tp_bytes;
      ps.cp_kv_bytes = tp_bytes;
      ps.attention_core_ns = sg.fwd_ns / 3;
    }
  }
  return m;
}

// An intra-node link for everything, fast enough that the model-parallel collectives are cheap.
ClusterModel fast_cluster(int world) {
  ClusterModel c;
  c.world_size = world;
  c.gpus_per_node = 8;
  for (auto& p : c.coll) {
    p.intra = {1.0, 0.5, 4000};
    p.inter = {0, 2.0, 4000};
    p.nic_GBps = 4000;
  }
  return c;
}

void check_same(const SimResult& a, const SimResult& b) {
  CHECK(a.step_ns == b.step_ns);
  CHECK(a.peak_bytes == b.peak_bytes);
  CHECK(a.peak_time == b.peak_time);
  CHECK(a.compute_busy_ns == b.compute_busy_ns);
  CHECK(a.exposed_comm_ns == b.exposed_comm_ns);
  CHECK(a.all_gathers == b.all_gathers);
  CHECK(a.reduce_scatters == b.reduce_scatters);
  CHECK(a.peak_by_category == b.peak_by_category);
  CHECK(a.tp_collectives + a.cp_collectives + a.ep_collectives + a.p2p_sends == 0);
  CHECK(b.tp_collectives + b.cp_collectives + b.ep_collectives + b.p2p_sends == 0);
  CHECK(a.stages.empty());
  REQUIRE(a.ops.size() == b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    const SimOp &x = a.ops[i], &y = b.ops[i];
    INFO("op " << i);
    CHECK((x.start == y.start && x.end == y.end && x.bytes == y.bytes && x.exec == y.exec && x.micro == y.micro &&
           x.lane == y.lane && x.kind == y.kind && x.phase == y.phase));
  }
  REQUIRE(a.memory.size() == b.memory.size());
  for (std::size_t i = 0; i < a.memory.size(); ++i) {
    const MemEvent &x = a.memory[i], &y = b.memory[i];
    INFO("memory event " << i);
    CHECK((x.time == y.time && x.delta == y.delta && x.exec == y.exec && x.cat == y.cat));
  }
}

// Sharded parameters, optimizer states and the constant `other` of one rank stage: the least it
// ever holds.
std::int64_t stage_static_bytes(const CompiledStep& s, int rank_stage) {
  const int p = s.par.pp;
  std::int64_t total = s.other_memory_bytes;
  for (std::size_t j = 0; j < s.stages.size(); ++j) {
    if (static_cast<int>(j) % p != rank_stage) continue;
    const StageSpec& st = s.stages[j];
    std::set<int> execs;
    for (int i = st.first_seg; i <= st.last_seg; ++i) execs.insert(s.segments[static_cast<std::size_t>(i)].exec);
    for (int e : execs) {
      const ExecUnit& u = e == s.root_exec && st.has_root_part ? st.root_part : s.units[static_cast<std::size_t>(e)];
      total += u.params * s.master_bytes / u.shard + u.params * s.optimizer_bytes / u.shard;
    }
  }
  return total;
}

// TP collectives the segments [first, last] issue per micro-batch: forward and backward, and a
// segment the description already checkpoints (recompute bytes, rerun inside bwd_ns) reruns its
// forward's in backward.
int tp_per_micro(const SimModel& m, int first, int last, bool sp) {
  int n = 0;
  for (int i = first; i <= last; ++i) {
    const SimSegment& sg = m.segments[static_cast<std::size_t>(i)];
    const ParallelShape& ps = sg.parallel;
    // With SP the embedding's and the head's collectives have adjoints in the other pass too.
    const int fwd = ps.tp_pairs * (sp ? 2 : 1) + ps.tp_fwd_only + (sp ? ps.tp_bwd_only : 0);
    const int bwd = ps.tp_pairs * (sp ? 2 : 1) + ps.tp_bwd_only + (sp ? ps.tp_fwd_only : 0);
    n += fwd + bwd + (sg.recompute_activation_bytes > 0 ? fwd : 0);
  }
  return n;
}

// Simulates `base` with degree 1, 2, 4, 8 set by `set_degree` on a cluster of `world(degree)`
// GPUs, and checks that the per-rank peak never rises from one degree to the next.
template <typename SetDegree, typename World>
void check_peak_never_rises(const SimModel& m, const FsdpPlan& base, SetDegree&& set_degree, World&& world) {
  std::int64_t prev = -1;
  for (int degree = 1; degree <= 8; degree *= 2) {
    FsdpPlan q = base;
    set_degree(q, degree);
    const SimResult r = simulate(compile_step(m, q, fast_cluster(world(degree))));
    INFO("degree " << degree);
    if (prev >= 0) CHECK(r.peak_bytes <= prev);
    prev = r.peak_bytes;
  }
}

}  // namespace

TEST_CASE("tp = cp = pp = ep = 1 given explicitly is today's step exactly", "[sim][property][parallel]") {
  std::mt19937_64 rng(151);
  for (int iter = 0; iter < 150; ++iter) {
    SimModel m = (iter % 2) ? random_shaped_model(rng) : test::random_model(rng);
    const ClusterModel c = test::random_cluster(rng);
    FsdpPlan base;
    base.gradient_accumulation = 1 + static_cast<int>(rng() % 3);
    if (rng() % 3 == 0) base.checkpoint["*"] = "full";
    if (rng() % 4 == 0) base.unsharded.push_back(m.units[1].name);
    FsdpPlan explicit_plan = base;
    Parallelism& par = explicit_plan.parallel;
    par.tp = par.cp = par.pp = par.ep = par.pp_virtual = 1;
    // Settings that only mean something at a degree above 1 change nothing either.
    par.sequence_parallel = rng() & 1;
    par.cp_kind = (rng() & 1) ? "ring" : "ulysses";
    par.pp_schedule = (rng() & 1) ? "gpipe" : "1f1b";
    INFO("iteration " << iter);
    const SimResult a = simulate(compile_step(m, base, c), true);
    const SimResult b = simulate(compile_step(m, explicit_plan, c), true);
    check_same(a, b);
  }
}

TEST_CASE("raising tp (fast TP link, same dp) never raises per-rank peak memory", "[sim][property][parallel][tp]") {
  std::mt19937_64 rng(152);
  for (int iter = 0; iter < 120; ++iter) {
    const SimModel m = random_shaped_model(rng);
    const int dp = 1 << (rng() % 4);  // 1 .. 8
    const bool sp = rng() & 1;
    FsdpPlan p;
    p.gradient_accumulation = 1 + static_cast<int>(rng() % 2);
    p.parallel.sequence_parallel = sp;
    INFO("iteration " << iter << " dp " << dp << " tp 1..8" << (sp ? " sp" : ""));
    check_peak_never_rises(
        m, p, [](FsdpPlan& q, int tp) { q.parallel.tp = tp; }, [&](int tp) { return dp * tp; });
  }
}

TEST_CASE("raising cp (same dp) never raises per-rank peak memory", "[sim][property][parallel][cp]") {
  // Each CP rank keeps 1/cp of the sequence's activations and FSDP shards over dp x cp.
  std::mt19937_64 rng(157);
  for (int iter = 0; iter < 100; ++iter) {
    const SimModel m = random_shaped_model(rng);
    const int dp = 1 << (rng() % 3);
    FsdpPlan p;
    p.parallel.cp_kind = (rng() & 1) ? "ring" : "ulysses";
    p.parallel.tp = 1 + static_cast<int>(rng() % 2);
    INFO("iteration " << iter << " dp " << dp << " cp 1..8 " << p.parallel.cp_kind << " tp " << p.parallel.tp);
    check_peak_never_rises(
        m, p, [](FsdpPlan& q, int cp) { q.parallel.cp = cp; }, [&](int cp) { return dp * cp * p.parallel.tp; });
  }
}

TEST_CASE("TP collectives: 2 per pair and micro-batch (4 with SP) per block, + embedding and head", "[sim][property][parallel][tp]") {
  std::mt19937_64 rng(153);
  for (int iter = 0; iter < 150; ++iter) {
    const SimModel m = random_shaped_model(rng);
    FsdpPlan p;
    p.gradient_accumulation = 1 + static_cast<int>(rng() % 4);
    p.parallel.tp = 2 << (rng() % 3);  // 2, 4, 8
    p.parallel.sequence_parallel = rng() & 1;
    const int last = static_cast<int>(m.segments.size()) - 1;
    int blocks_pairs = 0, rerun_pairs = 0;
    for (const auto& sg : m.segments) {
      blocks_pairs += sg.parallel.tp_pairs;
      if (sg.recompute_activation_bytes > 0) rerun_pairs += sg.parallel.tp_pairs;
    }
    INFO("iteration " << iter);
    const SimResult r = simulate(compile_step(m, p, fast_cluster(p.parallel.tp * 2)));
    const int expected = tp_per_micro(m, 0, last, p.parallel.sequence_parallel) * p.gradient_accumulation;
    // The same count spelled as the issue does: pairs x passes (x 2 with SP) + embedding + head
    // (an RS + AG pair each with SP), + the reruns of blocks checkpointed in the description.
    const int per_pair = p.parallel.sequence_parallel ? 2 : 1;
    CHECK(expected == (2 * per_pair * blocks_pairs + 2 * per_pair + per_pair * rerun_pairs) * p.gradient_accumulation);
    CHECK(r.tp_collectives == expected);
    CHECK(r.tp_bytes == std::int64_t(expected) * m.segments[0].parallel.tp_bytes);

    // Pipelined (pp = 2, the shown stage): the shapes of that stage's segments only.
    FsdpPlan pp = p;
    pp.parallel.pp = 2;
    const CompiledStep s = compile_step(m, pp, fast_cluster(p.parallel.tp * 2 * 2));
    const SimResult rp = simulate(s);
    REQUIRE(rp.shown_stage >= 0);
    const StageSpec& st = s.stages[static_cast<std::size_t>(rp.shown_stage)];
    CHECK(rp.tp_collectives == tp_per_micro(m, st.first_seg, st.last_seg, p.parallel.sequence_parallel) * p.gradient_accumulation);
  }
}

TEST_CASE("pipeline: step >= m x the slowest stage's F + B; every stage's peak >= its static memory", "[sim][property][parallel][pp]") {
  std::mt19937_64 rng(154);
  const char* schedules[] = {"1f1b", "gpipe", "interleaved"};
  for (int iter = 0; iter < 200; ++iter) {
    const SimModel m = (iter % 2) ? random_shaped_model(rng, 16) : test::random_model(rng, 16);
    const int splits = static_cast<int>(m.units.size());  // blocks + 1 root pieces at most
    const int pp = 2 + static_cast<int>(rng() % 3);
    const std::string kind = schedules[rng() % 3];
    const int v = kind == "interleaved" ? 2 : 1;
    if (pp * v > splits) continue;
    FsdpPlan p;
    p.gradient_accumulation = kind == "interleaved" ? pp * (1 + static_cast<int>(rng() % 3)) : 1 + static_cast<int>(rng() % 8);
    p.parallel.pp = pp;
    p.parallel.pp_schedule = kind;
    p.parallel.pp_virtual = v;
    if (m.has_parallel_shapes && rng() % 2) p.parallel.tp = 2;
    ClusterModel c = test::random_cluster(rng);
    c.world_size = pp * p.parallel.tp * (1 << (rng() % 4));
    INFO("iteration " << iter << " pp " << pp << " " << kind << " m " << p.gradient_accumulation << " tp " << p.parallel.tp);
    // F + B per micro-batch is the same for every micro-batch only when each one runs all of
    // FSDP's rules; under torch pipelining's holding the first ones gather and the last reduces.
    p.parallel.pp_fsdp_every_microbatch = iter % 3 != 0;
    const CompiledStep s = compile_step(m, p, c);
    const SimResult r = simulate(s);
    REQUIRE(static_cast<int>(r.stages.size()) == pp);
    TimeNs slowest = 0;
    for (int st = 0; st < pp; ++st) {
      const auto& info = r.stages[static_cast<std::size_t>(st)];
      if (v == 1) slowest = std::max(slowest, info.fwd_ns + info.bwd_ns);
      CHECK(info.end_ns >= info.busy_ns);
      CHECK(r.step_ns >= info.end_ns);
      CHECK(info.peak_bytes >= stage_static_bytes(s, st));
    }
    if (p.parallel.pp_fsdp_every_microbatch) CHECK(r.step_ns >= slowest * p.gradient_accumulation);
    CHECK(r.peak_bytes == r.stages[static_cast<std::size_t>(r.shown_stage)].peak_bytes);
    CHECK(r.min_bytes >= 0);
  }
}

TEST_CASE("the pipeline schedules never deadlock and keep their in-flight bounds", "[sim][property][parallel][pp]") {
  // 16 one-unit stages of equal cost: enough split points for pp = 8 with two chunks each (and
  // pp x v <= 16 for v = 3, 4).
  SimModel m = test::chain_model(16, 1000, 10000, 20000, 4096);
  for (auto& sg : m.segments) sg.input_bytes = 512;
  for (int pp = 2; pp <= 8; ++pp)
    for (int mb = 1; mb <= 16; ++mb)
      for (const std::string kind : {"1f1b", "gpipe", "interleaved2", "interleaved3", "interleaved4"}) {
        const int v = kind.rfind("interleaved", 0) == 0 ? kind.back() - '0' : 1;
        if (v > 1 && (mb % pp != 0 || pp * v > 16)) continue;
        FsdpPlan p;
        p.gradient_accumulation = mb;
        p.parallel.pp = pp;
        p.parallel.pp_schedule = v > 1 ? "interleaved" : kind;
        p.parallel.pp_virtual = v;
        INFO("pp " << pp << " m " << mb << " " << kind);
        const CompiledStep st = compile_step(m, p, test::linear_cluster(2 * pp, 100));
        SimResult r;
        REQUIRE_NOTHROW(r = simulate(st));
        REQUIRE(static_cast<int>(r.stages.size()) == pp);
        for (int s = 0; s < pp; ++s) {
          const int expect = kind == "gpipe" ? mb
                             : v == 1        ? std::min(pp - s, mb)
                                             : std::min((pp - s - 1) * 2 + (v - 1) * pp + 1, mb * v);
          CHECK(r.stages[static_cast<std::size_t>(s)].max_in_flight == expect);
        }
        // The shown stage runs every (chunk, micro-batch) forward and backward exactly once.
        int fwd = 0, bwd = 0;
        for (const auto& o : r.ops)
          if (o.kind == OpKind::Compute) (o.phase == Phase::Forward ? fwd : bwd) += 1;
        int segments = 0;
        for (std::size_t j = 0; j < st.stages.size(); ++j)
          if (static_cast<int>(j) % pp == r.shown_stage) segments += st.stages[j].last_seg - st.stages[j].first_seg + 1;
        CHECK(fwd == segments * mb);
        CHECK(bwd == segments * mb);
      }
}

TEST_CASE("parallelism errors: no shapes, world, split points, interleaved micro-batches", "[sim][parallel][errors]") {
  std::mt19937_64 rng(155);
  const SimModel profile_like = test::random_model(rng);  // as a profile gives: no layer shapes
  REQUIRE_FALSE(profile_like.has_parallel_shapes);
  const ClusterModel c = test::linear_cluster(8);
  for (const char* knob : {"tp", "cp", "ep"}) {
    FsdpPlan p;
    (std::string(knob) == "tp" ? p.parallel.tp : std::string(knob) == "cp" ? p.parallel.cp : p.parallel.ep) = 2;
    INFO(knob);
    CHECK_THROWS_AS(compile_step(profile_like, p, c), ProfileError);
    CHECK_THROWS_WITH(compile_step(profile_like, p, c), Catch::Contains("need a model description") && Catch::Contains("no layer shapes"));
  }
  {  // pipeline parallelism works on a profile-like model
    FsdpPlan p;
    p.parallel.pp = 2;
    CHECK_NOTHROW(simulate(compile_step(profile_like, p, c)));
  }
  const SimModel shaped = random_shaped_model(rng);
  {
    FsdpPlan p;
    p.parallel.tp = 3;
    CHECK_THROWS_WITH(compile_step(shaped, p, c), Catch::Contains("tp x cp x pp = 3 does not divide the world size 8"));
    p.parallel.tp = 2;
    p.parallel.cp = 2;
    p.parallel.pp = 4;
    CHECK_THROWS_WITH(compile_step(shaped, p, c), Catch::Contains("tp x cp x pp = 16 does not divide the world size 8"));
  }
  {  // more stages than the model has unit boundaries + 1
    const SimModel two = test::chain_model(2, 100, 1000, 2000);
    FsdpPlan p;
    p.parallel.pp = 4;
    CHECK_THROWS_AS(compile_step(two, p, c), ProfileError);
    CHECK_THROWS_WITH(compile_step(two, p, c), Catch::Contains("pp x pp_virtual = 4 stages") && Catch::Contains("at most 2 stages"));
    p.parallel.pp = 2;
    p.parallel.pp_virtual = 2;
    p.parallel.pp_schedule = "interleaved";
    p.gradient_accumulation = 2;
    CHECK_THROWS_WITH(compile_step(two, p, c), Catch::Contains("pp x pp_virtual = 4 stages"));
  }
  {  // a bucket of an expert unit and a dense one: the two are sharded over different groups
    SimModel moe = test::chain_model(2, 100, 1000, 2000);
    moe.has_parallel_shapes = true;
    moe.units[2].expert = true;
    FsdpPlan p;
    p.parallel.ep = 2;
    p.buckets = {{"u0", "u1"}};
    CHECK_THROWS_WITH(compile_step(moe, p, c), Catch::Contains("buckets: 'u0+u1' mixes expert and non-expert modules"));
    p.parallel.ep = 1;
    CHECK_NOTHROW(compile_step(moe, p, c));  // without EP one group holds both
  }
  {  // interleaved needs m % pp == 0; v > 1 needs the interleaved schedule
    const SimModel many = test::chain_model(8, 100, 1000, 2000);
    FsdpPlan p;
    p.parallel.pp = 2;
    p.parallel.pp_virtual = 2;
    p.parallel.pp_schedule = "interleaved";
    p.gradient_accumulation = 3;
    CHECK_THROWS_WITH(compile_step(many, p, c), Catch::Contains("gradient_accumulation 3") && Catch::Contains("multiple of pp 2"));
    p.gradient_accumulation = 4;
    CHECK_NOTHROW(compile_step(many, p, c));
    p.parallel.pp_schedule = "1f1b";
    CHECK_THROWS_WITH(compile_step(many, p, c), Catch::Contains("pp_virtual > 1 needs pp_schedule \"interleaved\""));
  }
}

TEST_CASE("pp_split: units by index in forward order or by name, read and written by plan files", "[sim][parallel][pp]") {
  // A model whose units are stored out of forward order, as a profile's can be (torchtitan's
  // [norm, output] group came second in its modules table): u1 runs first, then u2, then u0.
  SimModel m = test::chain_model(3, 100, 1000, 2000);
  std::rotate(m.segments.begin(), m.segments.begin() + 1, m.segments.end());  // u1, u2, u0 (no root segment)
  const ClusterModel c = test::linear_cluster(4);
  auto first_of_stage_1 = [&](const FsdpPlan& p) {
    const CompiledStep s = compile_step(m, p, c);
    return s.units[static_cast<std::size_t>(s.segments[static_cast<std::size_t>(s.stages[1].first_seg)].exec)].name;
  };
  FsdpPlan p;
  p.parallel.pp = 2;
  p.parallel.pp_split = {1};  // forward order: u1 0, u2 1, u0 2 (stored order: u0 1, u1 2, u2 3)
  CHECK(first_of_stage_1(p) == "u2");
  p.parallel.pp_split.clear();
  p.parallel.pp_split_units = {"u0"};
  CHECK(first_of_stage_1(p) == "u0");
  p.parallel.pp_split_units = {"u9"};
  CHECK_THROWS_WITH(compile_step(m, p, c), Catch::Contains("pp_split: no unit 'u9'"));
  p.parallel.pp_split_units.clear();
  p.parallel.pp_split = {7};
  CHECK_THROWS_WITH(compile_step(m, p, c), Catch::Contains("pp_split: no unit 7 in forward order"));
  // Plan files: indices or names, written back as read; a mix of both is refused.
  const FsdpPlan names = parse_plan_json(R"({"parallelism": {"pp": 2, "pp_split": ["u1"]}})", "t");
  CHECK(names.parallel.pp_split_units == std::vector<std::string>{"u1"});
  CHECK(parse_plan_json(plan_to_json(names), "t").parallel == names.parallel);
  const FsdpPlan indices = parse_plan_json(R"({"parallelism": {"pp": 2, "pp_split": [2]}})", "t");
  CHECK(indices.parallel.pp_split == std::vector<int>{2});
  CHECK(parse_plan_json(plan_to_json(indices), "t").parallel == indices.parallel);
  CHECK_THROWS_WITH(parse_plan_json(R"({"parallelism": {"pp": 3, "pp_split": [2, "u1"]}})", "t"),
                    Catch::Contains("all positive indices in forward order, or all unit names"));
}

TEST_CASE("pipeline: replayed collectives and idle are reported as the shown stage's ops hold them", "[sim][property][parallel][pp]") {
  // A profile's measured non-FSDP collectives and GPU idle are replayed once per micro-batch on
  // each stage; the reported totals are those of the shown stage's ops, as in a flat step.
  std::mt19937_64 rng(156);
  std::uniform_int_distribution<TimeNs> t(1, 300'000);
  for (int iter = 0; iter < 100; ++iter) {
    SimModel m = test::random_model(rng, 8);
    for (auto& sg : m.segments) sg.fwd_extra = {t(rng), 1, 0, t(rng)}, sg.bwd_extra = {t(rng), 1, 0, t(rng)};
    m.optimizer_extra = {t(rng), 1, 0, t(rng)};
    FsdpPlan p;
    p.gradient_accumulation = 1 + static_cast<int>(rng() % 6);
    if (rng() % 2) p.parallel.pp = 2;
    const SimResult r = simulate(compile_step(m, p, test::linear_cluster(4, 50)));
    TimeNs other = 0, idle = 0;
    for (const auto& o : r.ops) {
      if (o.kind == OpKind::OtherComm) other += o.end - o.start;
      if (o.kind == OpKind::Idle) idle += o.end - o.start;
    }
    INFO("iteration " << iter << " pp " << p.parallel.pp << " m " << p.gradient_accumulation);
    CHECK(other > 0);
    CHECK(r.other_comm_ns == other);
    CHECK(r.idle_ns == idle);
  }
}
