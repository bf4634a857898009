// Small hand-made models and clusters for the simulator tests.
#pragma once

#include <random>
#include <string>

#include "profiler/sim/cluster_model.h"
#include "profiler/sim/fsdp_plan.h"
#include "profiler/sim/sim_model.h"
#include "profiler/sim/step_simulator.h"

namespace ss::sim::test {

// A cluster whose collectives cost exactly S·(n−1)/n / bw ns (no latency), bw in bytes/ns.
inline ClusterModel linear_cluster(int world, double bw = 1.0) {
  ClusterModel c;
  c.world_size = world;
  c.gpus_per_node = 8;
  for (auto& p : c.coll) {
    p.intra = {0, 0, bw};
    p.inter = {0, 0, bw};
    p.nic_GBps = bw;
  }
  return c;
}

// Root (no parameters, no compute) + units u0..u{n-1}, each with `params` parameters.
inline SimModel chain_model(int n, std::int64_t params, TimeNs fwd, TimeNs bwd, std::int64_t act = 0) {
  SimModel m;
  m.units.push_back({"", "", "Root", 0, true});
  for (int i = 0; i < n; ++i) {
    m.units.push_back({"u" + std::to_string(i), "", "Block", params, false});
    m.segments.push_back({i + 1, fwd, bwd, act, 0});
  }
  return m;
}

// A random decoder-like model: root head/tail + n blocks of random size and compute.
inline SimModel random_model(std::mt19937_64& rng, int max_units = 12) {
  std::uniform_int_distribution<int> nu(1, max_units);
  std::uniform_int_distribution<std::int64_t> params(1'000'000, 400'000'000);
  std::uniform_int_distribution<TimeNs> t(50'000, 5'000'000);
  std::uniform_int_distribution<std::int64_t> act(0, 2'000'000'000);
  SimModel m;
  m.units.push_back({"", "", "Root", params(rng), true});
  m.segments.push_back({0, t(rng) / 10, t(rng) / 10, act(rng) / 10, 0});
  const int n = nu(rng);
  for (int i = 0; i < n; ++i) {
    m.units.push_back({"layers." + std::to_string(i), "", "Block", params(rng), false});
    const TimeNs f = t(rng);
    m.segments.push_back({i + 1, f, 2 * f + t(rng) / 4, act(rng), (rng() & 1) ? act(rng) : 0});
  }
  m.segments.push_back({0, t(rng) / 5, t(rng) / 3, act(rng) / 5, 0});
  m.optimizer_ns = t(rng);
  m.optimizer_reference_world = 8;
  m.hbm_bytes_per_ns = (rng() & 1) ? 3000.0 : 0.0;
  m.other_memory_bytes = 1 << 30;
  return m;
}

inline ClusterModel random_cluster(std::mt19937_64& rng) {
  ClusterModel c;
  std::uniform_int_distribution<int> w(1, 12);
  std::uniform_real_distribution<double> bw(20, 500), lat(0, 20);
  c.gpus_per_node = 8;
  c.world_size = 1 << w(rng);  // 2 .. 4096
  c.hierarchical = rng() & 1;
  for (auto& p : c.coll) {
    p.intra = {lat(rng), lat(rng) / 4, bw(rng)};
    p.inter = {0, lat(rng), bw(rng)};
    p.nic_GBps = bw(rng) / 4;
  }
  return c;
}

// A random base plan: some units kept unsharded, gradient accumulation, a separate reduce-scatter
// group, HSDP and (with `buckets`) auto-bucketing.
inline FsdpPlan random_plan(std::mt19937_64& rng, const SimModel& m, const ClusterModel& c, bool buckets = true) {
  FsdpPlan p;
  for (std::size_t u = 1; u < m.units.size(); ++u)
    if (rng() % 3 == 0) p.unsharded.push_back(m.units[u].name);
  if (rng() % 4 == 0) p.gradient_accumulation = 2;
  if (rng() % 4 == 0) p.separate_reduce_scatter_group = true;
  if (rng() % 4 == 0 && c.world_size % 2 == 0 && c.world_size >= 4) p.hsdp_replicate = 2;
  if (buckets && rng() % 5 == 0) p.bucket_cap_mb["default"] = 600;
  return p;
}

// The first op of a kind on the exec unit named `unit` in a phase (nullptr if none).
inline const SimOp* find_op(const SimResult& r, OpKind k, const CompiledStep& s, const std::string& unit, Phase ph) {
  for (const auto& o : r.ops)
    if (o.kind == k && o.phase == ph && o.exec >= 0 && s.units[static_cast<std::size_t>(o.exec)].name == unit) return &o;
  return nullptr;
}

}  // namespace ss::sim::test
