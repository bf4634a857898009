// Choosing all-gather buckets: which FSDP units share one all-gather and one reduce-scatter
// (FSDP2's fully_shard([m1, m2])). Fewer, larger collectives pay each collective's latency once
// and can fill the link better, at the cost of a larger buffer and of the first member waiting
// for the whole bucket; the simulator judges each merge, as the unshard planner judges each unit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/sim/fsdp_plan.h"
#include "profiler/sim/step_simulator.h"

namespace ss::sim {

struct BucketOutcome {
  std::vector<std::vector<std::string>> buckets;  // every bucket of two or more units, in forward order
  SimResult before, after;                        // the plan as given; with the buckets
  int simulations = 0;
  int merges = 0;
};

// A merge must shorten the simulated step by this share at least: a gain the model cannot tell
// from its own rounding is not worth the buffer.
constexpr double kMinBucketGain = 0.001;

// Starting from the plan's units (its own buckets and caps as formed), merges units that are
// gathered one after the other in forward order, in sweeps over the forward order, while a merge
// shortens the simulated step by kMinBucketGain or more and the step still fits `budget`
// (bytes per rank; <= 0: no budget). The root stays alone (FSDP2 gathers it first and keeps it).
// Pairs the simulator refuses to bucket (experts beside dense modules under expert parallelism, a
// frozen model beside a trained one) are left apart.
BucketOutcome plan_buckets(const SimModel& model, const FsdpPlan& plan, const ClusterModel& cluster, std::int64_t budget);

// `plan` with `buckets` as its explicit buckets and no caps (the caps are resolved into them).
FsdpPlan with_buckets(FsdpPlan plan, const std::vector<std::vector<std::string>>& buckets);

// The buckets of two or more modules that `step` (compiled from `plan`) forms, in forward order:
// its lists and the buckets its caps form, each unit with the modules the profiled job shards with
// it (SimUnit::group_members), and such a group of the job's own where the plan names its unit (a
// reshard policy for the whole group); what a plan file writes as fsdp2_buckets for apply_plan.
std::vector<std::vector<std::string>> formed_buckets(const SimModel& model, const CompiledStep& step, const FsdpPlan& plan);

}  // namespace ss::sim
