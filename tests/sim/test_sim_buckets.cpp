// The bucket planner (plan --buckets): which units share one all-gather (FSDP2's
// fully_shard([m1, m2])), judged by simulating the step, and the buckets a plan's caps form
// written out for Python.
#include <catch2/catch.hpp>

#include <algorithm>

#include "profiler/sim/bucket_planner.h"
#include "storage/errors.h"
#include "tests/sim/sim_fixtures.h"

using namespace ss;
using namespace ss::sim;

namespace {

using Buckets = std::vector<std::vector<std::string>>;

// A cluster where every collective costs `latency_us` plus its bytes at 1 byte/ns: the latency of
// a small unit's all-gather is what merging saves.
ClusterModel latency_cluster(double latency_us) {
  ClusterModel c = test::linear_cluster(2, 1.0);
  for (auto& p : c.coll) p.intra.base_latency_us = latency_us;
  return c;
}

}  // namespace

TEST_CASE("buckets: latency-bound units are merged, the root stays alone", "[sim][buckets]") {
  // Four 10 kB units with 50 us of compute each and 1 ms per collective: each all-gather is
  // exposed, and one for all four pays the latency once in forward and once in backward.
  const SimModel m = test::chain_model(4, 10'000, 50'000, 100'000);
  const ClusterModel c = latency_cluster(1000);
  const BucketOutcome o = plan_buckets(m, FsdpPlan{}, c, 0);
  CHECK(o.buckets == Buckets{{"u0", "u1", "u2", "u3"}});
  CHECK(o.merges == 3);
  CHECK(o.after.step_ns < o.before.step_ns);
  // What the planner reports is what the plan it writes simulates to.
  const SimResult again = simulate(compile_step(m, with_buckets(FsdpPlan{}, o.buckets), c));
  CHECK(again.step_ns == o.after.step_ns);
  CHECK(again.peak_bytes == o.after.peak_bytes);
  // The root is its own all-gather in the plan: never a member.
  for (const auto& b : o.buckets)
    for (const auto& n : b) CHECK(!n.empty());
}

TEST_CASE("buckets: a measured per-unit cost leaves the step with each merged unit", "[sim][buckets]") {
  // Four units whose segments hold 300 us of host gaps in forward and 600 in backward, and a
  // measured per-unit cost of 100 / 250 us (shardscope.measure_fsdp_units): a bucket of u1 and u2
  // makes one unit call fewer, so u2 (the later member in forward order) loses that cost.
  SimModel m = test::chain_model(4, 10'000, 50'000, 100'000);
  for (auto& sg : m.segments) sg.fwd_extra.idle_ns = 300'000, sg.bwd_extra.idle_ns = 600'000;
  ClusterModel gpu = test::linear_cluster(2, 1.0);
  FsdpPlan pair;
  pair.buckets = {{"u2", "u1"}};  // the order in the plan does not matter: u1 runs first
  const CompiledStep unmeasured = compile_step(m, pair, gpu);
  CHECK(unmeasured.merged_host_saved_ns == 0);
  gpu.fsdp_unit_forward_us = 100, gpu.fsdp_unit_backward_us = 250;
  const CompiledStep merged = compile_step(m, pair, gpu);
  CHECK(merged.merged_host_saved_ns == 350'000);
  CHECK(merged.segments[1].fwd_idle_ns == 300'000);  // u1: the bucket's one call
  CHECK(merged.segments[2].fwd_idle_ns == 200'000);
  CHECK(merged.segments[2].bwd_idle_ns == 350'000);
  CHECK(merged.segments[2].fwd_ns == 50'000);  // on a GPU the host cost is in the gaps only
  CHECK(simulate(merged).step_ns < simulate(unmeasured).step_ns);
  // Without a bucket nothing changes: the recorded plan replays as it did.
  CHECK(compile_step(m, FsdpPlan{}, gpu).merged_host_saved_ns == 0);
  CHECK(simulate(compile_step(m, FsdpPlan{}, gpu)).step_ns == simulate(compile_step(m, FsdpPlan{}, test::linear_cluster(2, 1.0))).step_ns);

  // A CPU run (the host is the device): what the gaps lack comes out of the compute, down to an
  // instant of it (1 ns: the compute's memory events keep their order).
  ClusterModel cpu = gpu;
  cpu.comm_serialized = true;
  cpu.fsdp_unit_forward_us = 330, cpu.fsdp_unit_backward_us = 5000;
  const CompiledStep on_cpu = compile_step(m, pair, cpu);
  CHECK(on_cpu.segments[2].fwd_idle_ns == 0);
  CHECK(on_cpu.segments[2].fwd_ns == 20'000);
  CHECK(on_cpu.segments[2].bwd_idle_ns == 0);
  CHECK(on_cpu.segments[2].bwd_ns == 1);
  CHECK(on_cpu.merged_host_saved_ns == 330'000 + 699'999);

  // The planner takes it into account: with the cost measured it merges where latency alone
  // (none here, all-gathers hidden behind compute) would not.
  const BucketOutcome latency_only = plan_buckets(m, FsdpPlan{}, test::linear_cluster(2, 1.0), 0);
  CHECK(latency_only.buckets.empty());
  const BucketOutcome with_cost = plan_buckets(m, FsdpPlan{}, gpu, 0);
  CHECK(with_cost.buckets == Buckets{{"u0", "u1", "u2", "u3"}});
  CHECK(with_cost.after.step_ns < with_cost.before.step_ns);
}

TEST_CASE("buckets: a merged unit's cost that uses up its compute keeps the compute's memory", "[sim][buckets]") {
  // On a CPU run the cost comes out of the later member's backward compute; where it is more than
  // that compute, an instant is left, so the segment still makes its temporaries before it frees
  // its activations (at one instant the sweep takes frees first, and the 5 MB below were lost).
  SimModel m = test::chain_model(4, 10'000, 50'000, 100'000, 1'000'000);
  m.segments[2].bwd_temp_bytes = 5'000'000;  // u2's backward: the step's peak
  ClusterModel cpu = test::linear_cluster(2, 1.0);
  cpu.comm_serialized = true;
  FsdpPlan pair;
  pair.buckets = {{"u1", "u2"}};
  cpu.fsdp_unit_backward_us = 50;  // half of u2's backward compute
  const SimResult partly = simulate(compile_step(m, pair, cpu));
  cpu.fsdp_unit_backward_us = 5000;  // more than it has
  const CompiledStep used_up_step = compile_step(m, pair, cpu);
  CHECK(used_up_step.segments[2].bwd_ns == 1);
  const SimResult used_up = simulate(used_up_step);
  CHECK(used_up.step_ns < partly.step_ns);
  CHECK(used_up.peak_bytes == partly.peak_bytes);
  CHECK(used_up.peak_bytes >= 5'000'000);
}

TEST_CASE("buckets: no merge where the all-gathers hide behind compute", "[sim][buckets]") {
  // No latency, 1 ms of compute per unit against 10 us of gather: a merge saves nothing (it only
  // makes the first unit wait for the others' parameters), so none is made.
  const SimModel m = test::chain_model(4, 10'000, 1'000'000, 2'000'000);
  const BucketOutcome o = plan_buckets(m, FsdpPlan{}, test::linear_cluster(2, 1.0), 0);
  CHECK(o.buckets.empty());
  CHECK(o.merges == 0);
  CHECK(o.after.step_ns == o.before.step_ns);
}

TEST_CASE("buckets: the budget bounds a bucket's buffer", "[sim][buckets]") {
  // Latency-bound as above, with 4 MB units: a bucket's all-gather buffer is its members'
  // parameters together, so a budget a little over the unbucketed peak allows pairs, not all four.
  const SimModel m = test::chain_model(4, 1'000'000, 50'000, 100'000);
  const ClusterModel c = latency_cluster(5000);
  const BucketOutcome free = plan_buckets(m, FsdpPlan{}, c, 0);
  REQUIRE(free.buckets == Buckets{{"u0", "u1", "u2", "u3"}});
  REQUIRE(free.after.peak_bytes > free.before.peak_bytes);
  const std::int64_t budget = free.before.peak_bytes + (free.after.peak_bytes - free.before.peak_bytes) / 2;
  const BucketOutcome bounded = plan_buckets(m, FsdpPlan{}, c, budget);
  CHECK(bounded.after.peak_bytes <= budget);
  CHECK(!bounded.buckets.empty());
  CHECK(bounded.buckets.size() < 4);
  for (const auto& b : bounded.buckets) CHECK(b.size() < 4);
  CHECK(bounded.after.step_ns < bounded.before.step_ns);
  CHECK(bounded.after.step_ns > free.after.step_ns);
}

TEST_CASE("buckets: nested units, frozen and trained units, and two models stay apart", "[sim][buckets]") {
  SimModel m = test::chain_model(4, 10'000, 50'000, 100'000);
  m.units[2].name = "u0.inner";  // a unit inside u0: fully_shard([u0, u0.inner]) is refused by FSDP2
  m.units[4].frozen = true;      // u3 frozen beside trained u2
  const BucketOutcome o = plan_buckets(m, FsdpPlan{}, latency_cluster(1000), 0);
  for (const auto& b : o.buckets) {
    const bool has_u0 = std::find(b.begin(), b.end(), "u0") != b.end();
    const bool has_inner = std::find(b.begin(), b.end(), "u0.inner") != b.end();
    CHECK(!(has_u0 && has_inner));
    CHECK(std::find(b.begin(), b.end(), "u3") == b.end());
  }
  CHECK(o.buckets == Buckets{{"u0.inner", "u2"}});
  // A second model, named by its class (a teacher's units under "FSDPNet"), is never merged with the first.
  SimModel two = test::chain_model(4, 10'000, 50'000, 100'000);
  two.units[3].name = "FSDPNet", two.units[3].class_name = "FSDPNet";
  two.units[4].name = "FSDPNet.layers.0";
  const BucketOutcome t = plan_buckets(two, FsdpPlan{}, latency_cluster(1000), 0);
  CHECK(t.buckets == Buckets{{"u0", "u1"}});
}

TEST_CASE("buckets: a plan's caps start the search and are resolved into lists", "[sim][buckets]") {
  const SimModel m = test::chain_model(6, 1'000'000, 50'000, 100'000);
  const ClusterModel c = latency_cluster(1000);
  FsdpPlan caps;
  caps.bucket_cap_mb["default"] = 2.5 * double(m.param_bytes(1)) / (1024.0 * 1024.0);  // two units a bucket
  const CompiledStep formed = compile_step(m, caps, c);
  const Buckets from_caps = formed_buckets(m, formed, caps);
  REQUIRE(!from_caps.empty());
  // The lists the caps formed simulate exactly as the caps do (what apply_plan applies is what was predicted).
  const FsdpPlan listed = with_buckets(caps, from_caps);
  CHECK(listed.bucket_cap_mb.empty());
  CHECK(simulate(compile_step(m, listed, c)).step_ns == simulate(formed).step_ns);
  // The planner starts from them: its buckets are unions of theirs.
  const BucketOutcome o = plan_buckets(m, caps, c, 0);
  for (const auto& b : from_caps) {
    bool inside = false;
    for (const auto& ob : o.buckets) inside = inside || std::search(ob.begin(), ob.end(), b.begin(), b.end()) != ob.end();
    CHECK(inside);
  }
}

TEST_CASE("buckets: the generated Python shards a bucket in one call, innermost first", "[sim][buckets]") {
  FsdpPlan p;
  p.unsharded = {"layers.1", "layers.0.attention", ""};
  p.reshard_degree["layers.3"] = 2;
  p.buckets = {{"layers.0", "layers.1"}, {"layers.2", "layers.3"}};
  const std::string py = plan_to_python(p);
  const auto at = [&](const std::string& s) { return py.find(s); };
  const auto inner = at("fully_shard(model.get_submodule(\"layers.0.attention\"), reshard_after_forward=False");
  const auto b0 = at("fully_shard([model.get_submodule(\"layers.0\"), model.get_submodule(\"layers.1\")], reshard_after_forward=False");
  const auto b1 = at("fully_shard([model.get_submodule(\"layers.2\"), model.get_submodule(\"layers.3\")], reshard_after_forward=2");
  const auto root = at("fully_shard(model.get_submodule(\"\"), reshard_after_forward=False");
  REQUIRE(inner != std::string::npos);
  REQUIRE(b0 != std::string::npos);
  REQUIRE(b1 != std::string::npos);
  REQUIRE(root != std::string::npos);
  CHECK(inner < b0);
  CHECK(b1 < root);
  CHECK(at("get_submodule(\"layers.1\"), reshard_after_forward") == std::string::npos);  // not sharded twice
  // Caps without the buckets they formed: said, not silently dropped.
  FsdpPlan caps;
  caps.bucket_cap_mb["default"] = 100;
  CHECK(plan_to_python(caps).find("bucket_cap_mb is not applied here") != std::string::npos);
  caps.fsdp2_buckets = {{"layers.0", "layers.1"}};
  CHECK(plan_to_python(caps).find("fully_shard([model.get_submodule(\"layers.0\"), model.get_submodule(\"layers.1\")], reshard_after_forward=True") !=
        std::string::npos);
  // The plan file round-trips them.
  CHECK(parse_plan_json(plan_to_json(caps), "t").fsdp2_buckets == caps.fsdp2_buckets);
}

TEST_CASE("buckets: a group the job shards itself is named for Python only where the plan changes it", "[sim][buckets]") {
  // u2 stands for fully_shard([u2, head]) in the job: recorded as u2, `head` pointing at it.
  SimModel m = test::chain_model(4, 10'000, 50'000, 100'000);
  m.units[3].group_members = {"head"};
  const ClusterModel c = latency_cluster(1000);
  FsdpPlan none;
  CHECK(formed_buckets(m, compile_step(m, none, c), none).empty());  // the job's own call shards it
  FsdpPlan keep;
  keep.unsharded = {"u2"};
  CHECK(formed_buckets(m, compile_step(m, keep, c), keep) == Buckets{{"u2", "head"}});
  FsdpPlan merged;
  merged.buckets = {{"u1", "u2"}};
  CHECK(formed_buckets(m, compile_step(m, merged, c), merged) == Buckets{{"u1", "u2", "head"}});
  // The planner's own lists name units (what compile_step reads), never the group's other modules.
  const BucketOutcome o = plan_buckets(m, FsdpPlan{}, c, 0);
  for (const auto& b : o.buckets) CHECK(std::find(b.begin(), b.end(), "head") == b.end());
}
