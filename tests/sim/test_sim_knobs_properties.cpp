// Properties of the checkpointing and offload knobs over random models, clusters and plans
// (fixed seeds, so failures reproduce), and the joint planner against its exact search.
#include <catch2/catch.hpp>

#include <random>

#include "profiler/sim/fsdp_plan.h"
#include "profiler/sim/planner.h"
#include "profiler/sim/step_simulator.h"
#include "tests/sim/sim_fixtures.h"

using namespace ss;
using namespace ss::sim;

namespace {

// A random model whose blocks know their input size (what full checkpointing keeps).
SimModel random_checkpointable(std::mt19937_64& rng) {
  SimModel m = test::random_model(rng);
  for (auto& sg : m.segments) sg.input_bytes = sg.saved_activation_bytes / std::int64_t(2 + rng() % 30);
  return m;
}

// The base plans without auto-bucketing.
FsdpPlan random_base(std::mt19937_64& rng, const SimModel& m, const ClusterModel& c) { return test::random_plan(rng, m, c, false); }

bool same_run(const SimResult& a, const SimResult& b) {
  if (a.step_ns != b.step_ns || a.peak_bytes != b.peak_bytes || a.ops.size() != b.ops.size() || a.memory.size() != b.memory.size())
    return false;
  for (std::size_t i = 0; i < a.ops.size(); ++i)
    if (a.ops[i].start != b.ops[i].start || a.ops[i].end != b.ops[i].end || a.ops[i].kind != b.ops[i].kind) return false;
  for (std::size_t i = 0; i < a.memory.size(); ++i)
    if (a.memory[i].time != b.memory[i].time || a.memory[i].delta != b.memory[i].delta) return false;
  return true;
}

}  // namespace

TEST_CASE("checkpointing never raises peak memory and never shortens the step", "[sim][property][checkpoint]") {
  std::mt19937_64 rng(1501);
  for (int i = 0; i < 300; ++i) {
    const SimModel m = random_checkpointable(rng);
    const ClusterModel c = test::random_cluster(rng);
    const FsdpPlan base = random_base(rng, m, c);
    FsdpPlan ck = base;
    if (rng() % 2) {
      ck.checkpoint["*"] = "full";
    } else {
      for (std::size_t u = 1; u < m.units.size(); ++u)
        if (rng() % 2) ck.checkpoint[m.units[u].name] = "full";
    }
    const SimResult a = simulate(compile_step(m, base, c));
    const SimResult b = simulate(compile_step(m, ck, c));
    INFO("case " << i);
    CHECK(b.peak_bytes <= a.peak_bytes);
    CHECK(b.step_ns >= a.step_ns);
    CHECK(b.min_bytes >= 0);
  }
}

TEST_CASE("offload never raises device memory", "[sim][property][offload]") {
  std::mt19937_64 rng(1502);
  for (int i = 0; i < 300; ++i) {
    const SimModel m = random_checkpointable(rng);
    const ClusterModel c = test::random_cluster(rng);
    const FsdpPlan base = random_base(rng, m, c);
    FsdpPlan off = base;
    off.offload = rng() % 2 ? "cpu" : "optimizer";
    off.offload_prefetch_depth = 1 + int(rng() % 4);
    off.pipelined_optimizer = rng() % 2;
    const SimResult a = simulate(compile_step(m, base, c));
    const SimResult b = simulate(compile_step(m, off, c));
    INFO("case " << i << " offload " << off.offload << " depth " << off.offload_prefetch_depth);
    CHECK(b.peak_bytes <= a.peak_bytes);
    CHECK(b.min_bytes >= 0);
    std::int64_t end = 0;
    for (const auto& e : b.memory) end += e.delta;
    // What stays on the device after the step: the sharded parameters unless CPU-offloaded.
    std::int64_t expect = m.other_memory_bytes;
    if (off.offload != "cpu") {
      const CompiledStep s = compile_step(m, off, c);
      for (const auto& u : s.units) expect += u.params * s.master_bytes / s.shard;
    }
    CHECK(end == expect);
  }
}

TEST_CASE("with the new knobs off (or set to their defaults) the step is exactly today's", "[sim][property]") {
  std::mt19937_64 rng(1503);
  for (int i = 0; i < 100; ++i) {
    const SimModel m = random_checkpointable(rng);
    const ClusterModel c = test::random_cluster(rng);
    const FsdpPlan base = random_base(rng, m, c);
    FsdpPlan off = base;
    for (std::size_t u = 1; u < m.units.size(); ++u) off.checkpoint[m.units[u].name] = "none";
    off.pipelined_optimizer = true;  // only acts with offload
    off.offload_prefetch_depth = 3;  // only acts with CPU offload
    CHECK(same_run(simulate(compile_step(m, base, c)), simulate(compile_step(m, off, c))));
  }
  // Old plan files read as before, and a plan without the knobs is written without them.
  const FsdpPlan old = parse_plan_json(R"({"unsharded": ["layers.3"], "zero_stage": 3})", "old.json");
  CHECK(old.checkpoint.empty());
  CHECK(old.offload == "none");
  CHECK(plan_to_json(old).find("offload") == std::string::npos);
  CHECK(plan_to_json(old).find("checkpoint") == std::string::npos);
  // And the knobs survive a round trip.
  FsdpPlan p = old;
  p.checkpoint = {{"*", "attention"}, {"layers.0", "full"}};
  p.offload = "cpu";
  p.offload_prefetch_depth = 3;
  p.pipelined_optimizer = true;
  CHECK(parse_plan_json(plan_to_json(p), "rt") == p);
  CHECK(parse_plan_json(R"({"activation_checkpointing": "full"})", "s").checkpoint.at("*") == "full");
  CHECK_THROWS_WITH(parse_plan_json(R"({"offload": "nvme"})", "x.json"), Catch::Contains("offload"));
  CHECK_THROWS_WITH(parse_plan_json(R"({"offload_prefetch_depth": 0})", "x.json"), Catch::Contains("offload_prefetch_depth"));
  CHECK_THROWS_WITH(parse_plan_json(R"({"activation_checkpointing": {"a": 3}})", "x.json"), Catch::Contains("activation_checkpointing.a"));
}

TEST_CASE("joint planning: results fit; exact is never worse than cost; checkpointing buys what unsharding cannot", "[sim][property][planner]") {
  std::mt19937_64 rng(1504);
  int used_checkpointing = 0;
  for (int i = 0; i < 60; ++i) {
    const SimModel m = random_checkpointable(rng);
    if (m.units.size() > 7) continue;  // exact over unshard x checkpoint choices: 2^(2n)
    ClusterModel c = test::random_cluster(rng);
    const CompiledStep base = compile_step(m, FsdpPlan{}, c);
    const SimResult b = simulate(base);
    // A budget between the all-checkpointed minimum and the base peak plus some unsharding room.
    FsdpPlan all;
    all.checkpoint["*"] = "full";
    const std::int64_t lo = simulate(compile_step(m, all, c)).peak_bytes;
    const std::int64_t budget = lo + std::int64_t(double(b.peak_bytes - lo) * double(rng() % 120) / 100.0);
    PlanRequest req;
    req.checkpoint = true;
    req.budget_bytes = budget;
    req.strategy = Strategy::Cost;
    const PlanOutcome cost = plan_unshard(m, base, c, req);
    req.strategy = Strategy::Exact;
    const PlanOutcome exact = plan_unshard(m, base, c, req);
    INFO("case " << i << " budget " << budget << " lo " << lo << " base " << b.peak_bytes);
    CHECK(cost.fits);
    CHECK(exact.fits);
    CHECK(cost.result.peak_bytes <= budget);
    CHECK(exact.result.step_ns <= cost.result.step_ns);
    if (b.peak_bytes > budget) {
      // The base does not fit: checkpointing gets there, or keeping units unsharded where the base
      // peaks at a resharded unit's backward copy-out (its all-gather buffer and its parameters
      // at once, which a kept unit never holds); the result is then no larger than the base.
      CHECK((!exact.checkpointed.empty() || !exact.unsharded.empty()));
      if (exact.checkpointed.empty()) CHECK(exact.result.peak_bytes < b.peak_bytes);
      used_checkpointing += !exact.checkpointed.empty();
    }
  }
  CHECK(used_checkpointing > 0);
}

TEST_CASE("offload is chosen only when nothing else fits", "[sim][planner][offload]") {
  SimModel m = test::chain_model(4, 1000, 5000, 10000, 2000);
  for (auto& sg : m.segments) sg.input_bytes = 500;
  ClusterModel c = test::linear_cluster(2);
  const CompiledStep base = compile_step(m, FsdpPlan{}, c);
  const SimResult b = simulate(base);
  PlanRequest req;
  req.strategy = Strategy::Cost;
  req.checkpoint = true;
  req.offload_if_needed = true;
  req.budget_bytes = b.peak_bytes;  // fits as is: no offload
  CHECK(plan_unshard(m, base, c, req).offload == Offload::None);
  // AdamW states alone are 4 x 1000 x 8 / 2 = 16000 B: a budget below what checkpointing reaches
  // but above it minus the states needs optimizer offload.
  FsdpPlan all;
  all.checkpoint["*"] = "full";
  const std::int64_t lo = simulate(compile_step(m, all, c)).peak_bytes;
  req.budget_bytes = lo - 1000;
  const PlanOutcome o = plan_unshard(m, base, c, req);
  CHECK(o.offload == Offload::Optimizer);
  CHECK(o.fits);
  // Below even that: CPU offload (states and sharded parameters leave the device).
  req.budget_bytes = lo - 16000 - 1000;
  const PlanOutcome o2 = plan_unshard(m, base, c, req);
  CHECK(o2.offload == Offload::Cpu);
  CHECK(o2.result.peak_bytes <= req.budget_bytes);
}
