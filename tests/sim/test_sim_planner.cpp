// Planner behaviour on small models: greedy's reverse order and splitting, cost's use of exposed
// all-gathers only, and the budget.
#include <catch2/catch.hpp>

#include <algorithm>

#include "profiler/sim/planner.h"
#include "tests/sim/sim_fixtures.h"

using namespace ss;
using namespace ss::sim;

namespace {

// Two layers, each split into two units (attention "a", MLP "b") that share the layer as group.
// 10 MB of saved activations per unit put the peak at the forward/backward turn, where every
// kept unit's parameters (2 MB each) are still held.
SimModel sublayer_model() {
  SimModel m;
  m.units.push_back({"", "", "Root", 0, true});
  for (int l = 0; l < 2; ++l)
    for (const char* part : {"a", "b"}) {
      const std::string layer = "layers." + std::to_string(l);
      m.units.push_back({layer + "." + part, layer, "Part", 1'000'000, false});
      m.segments.push_back({static_cast<int>(m.units.size() - 1), 2'000'000, 4'000'000, 10'000'000, 0});
    }
  return m;
}

std::int64_t peak_with(const SimModel& m, const ClusterModel& c, std::vector<std::string> keep) {
  FsdpPlan p;
  p.unsharded = std::move(keep);
  return simulate(compile_step(m, p, c)).peak_bytes;
}

}  // namespace

TEST_CASE("greedy: late units first, a group that does not fit is split into its units", "[sim][planner]") {
  const SimModel m = sublayer_model();
  const ClusterModel c = test::linear_cluster(2, 0.5);
  const CompiledStep base = compile_step(m, FsdpPlan{}, c);
  // Keeping layer 1 (the last) costs nothing at the peak: its parameters replace the buffers its
  // backward all-gather would need. Keeping layer 0's units as well raises the peak.
  const std::int64_t three = peak_with(m, c, {"layers.1.a", "layers.1.b", "layers.0.b"});
  const std::int64_t four = peak_with(m, c, {"layers.0.a", "layers.0.b", "layers.1.a", "layers.1.b"});
  REQUIRE(three < four);
  PlanRequest req;
  req.strategy = Strategy::Greedy;
  req.budget_bytes = three;
  const PlanOutcome o = plan_unshard(m, base, c, req);
  // Group layers.1 fits whole; group layers.0 does not, so it is split: layers.0.b (later in
  // forward) is tried first and fits, layers.0.a does not.
  CHECK(o.unsharded == std::vector<std::string>{"layers.1.b", "layers.1.a", "layers.0.b"});
  CHECK(o.result.peak_bytes <= req.budget_bytes);
  // With room for everything the whole groups are taken, last layer first.
  req.budget_bytes = peak_with(m, c, {"layers.0.a", "layers.0.b", "layers.1.a", "layers.1.b"});
  const PlanOutcome all = plan_unshard(m, base, c, req);
  CHECK(all.unsharded == std::vector<std::string>{"layers.1.b", "layers.1.a", "layers.0.b", "layers.0.a"});
}

TEST_CASE("cost: units whose all-gather is hidden are not kept", "[sim][planner]") {
  // Compute-bound: each unit's backward all-gather (1 ms of comm) hides behind 10 ms of compute,
  // except the first one of backward (nothing to hide behind) -- so keeping any other unit
  // saves no time, and the cost strategy keeps exactly the last unit.
  SimModel m = test::chain_model(4, 1'000'000, 5'000'000, 10'000'000, 10'000'000);
  const ClusterModel c = test::linear_cluster(2, 1.0);  // AG: 2e6 B * 1/2 / 1 = 1 ms
  const CompiledStep base = compile_step(m, FsdpPlan{}, c);
  PlanRequest req;
  req.strategy = Strategy::Cost;
  req.budget_bytes = std::int64_t(1) << 40;
  const PlanOutcome o = plan_unshard(m, base, c, req);
  CHECK(o.unsharded == std::vector<std::string>{"u3"});
  CHECK(o.result.step_ns == o.baseline.step_ns - 1'000'000);
  // Greedy takes everything the budget allows, gaining nothing more for the extra memory.
  req.strategy = Strategy::Greedy;
  const PlanOutcome g = plan_unshard(m, base, c, req);
  CHECK(g.unsharded.size() == 4);
  CHECK(g.result.step_ns == o.result.step_ns);
  CHECK(g.result.peak_bytes > o.result.peak_bytes);
}

TEST_CASE("manual mode and candidate restriction", "[sim][planner]") {
  const SimModel m = test::chain_model(3, 1000, 100, 200);
  const ClusterModel c = test::linear_cluster(2);
  const CompiledStep base = compile_step(m, FsdpPlan{}, c);
  PlanRequest req;
  req.strategy = Strategy::Manual;
  req.modules = {"u0"};
  req.budget_bytes = std::int64_t(1) << 40;
  PlanOutcome o = plan_unshard(m, base, c, req);
  CHECK(o.unsharded == std::vector<std::string>{"u0"});
  CHECK(o.result.all_gathers == o.baseline.all_gathers - 1);
  req.strategy = Strategy::Exact;
  req.modules = {"u1"};  // only u1 may be chosen
  o = plan_unshard(m, base, c, req);
  CHECK(std::all_of(o.unsharded.begin(), o.unsharded.end(), [](const std::string& n) { return n == "u1"; }));
  req.modules = {"zz"};
  CHECK_THROWS_WITH(plan_unshard(m, base, c, req), Catch::Contains("'zz' is not an FSDP unit"));
}

TEST_CASE("joint planning: two ways to spend the same memory, one answer", "[sim][planner][checkpoint]") {
  // Communication-bound blocks (as test_sim_exact's first case, scaled): keeping a unit unsharded
  // removes an exposed backward all-gather (4 MB held each); not checkpointing a unit removes its
  // recompute (35 MB held). The budget holds the all-checkpointed plan plus 35 MB: either u0's
  // activations or the parameters, not both. Cost (one queue of both kinds of moves) and exact
  // must give the same answer.
  SimModel m = test::chain_model(3, 2'000'000, 500'000, 1'000'000, 40'000'000);
  for (auto& sg : m.segments) sg.input_bytes = 5'000'000;
  const ClusterModel c = test::linear_cluster(2);
  const CompiledStep base = compile_step(m, FsdpPlan{}, c);
  auto run = [&](bool keep_u0, bool ck0, bool ck12) {
    FsdpPlan p;
    if (keep_u0) p.unsharded = {"u0"};
    if (ck0) p.checkpoint["u0"] = "full";
    if (ck12) p.checkpoint["u1"] = p.checkpoint["u2"] = "full";
    return simulate(compile_step(m, p, c));
  };
  const SimResult all_ck = run(false, true, true);
  const SimResult unshard = run(true, true, true);   // spend on parameters
  const SimResult uncheck = run(false, false, true);  // spend on u0's activations
  const SimResult both = run(true, false, true);
  REQUIRE(unshard.peak_bytes > all_ck.peak_bytes);
  REQUIRE(uncheck.peak_bytes > all_ck.peak_bytes);
  const std::int64_t budget = std::max(unshard.peak_bytes, uncheck.peak_bytes);
  REQUIRE(both.peak_bytes > budget);  // only one of the two fits
  PlanRequest req;
  req.checkpoint = true;
  req.budget_bytes = budget;
  req.strategy = Strategy::Exact;
  const PlanOutcome ex = plan_unshard(m, base, c, req);
  req.strategy = Strategy::Cost;
  const PlanOutcome co = plan_unshard(m, base, c, req);
  const TimeNs best = std::min({unshard.step_ns, uncheck.step_ns, run(false, true, false).step_ns});
  CHECK(ex.result.step_ns <= best);
  CHECK(co.result.step_ns == ex.result.step_ns);
  auto sorted = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  CHECK(sorted(co.unsharded) == sorted(ex.unsharded));
  CHECK(sorted(co.checkpointed) == sorted(ex.checkpointed));
  // Here the answer spends on both: all three units kept, and u2 (whose rerun the removed
  // all-gathers no longer hide) not checkpointed; u0 and u1 stay checkpointed.
  CHECK(sorted(ex.checkpointed) == std::vector<std::string>{"u0", "u1"});
  CHECK(co.result.peak_bytes <= budget);
}
