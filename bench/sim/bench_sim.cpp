// Re-simulation after one toggle (the GUI's click) and planner speed on an 80-layer model.
// Usage: bench_sim [model.json]   (default: resources/models/llama3-70b.json)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "profiler/sim/model_description.h"
#include "profiler/sim/planner.h"
#include "profiler/sim/step_simulator.h"

using namespace ss::sim;
using Clock = std::chrono::steady_clock;

namespace {

struct Stats {
  double median_us, p99_us, max_us;
};

Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v[std::min(v.size() - 1, v.size() * 99 / 100)], v.back()};
}

double us_since(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }

void toggle_bench(const SimModel& m, const char* label, int world, bool detail) {
  ClusterModel c;
  c.world_size = world;
  CompiledStep s = compile_step(m, FsdpPlan{}, c);
  std::vector<double> times;
  const int n = 2000;
  std::int64_t sink = 0;
  for (int i = 0; i < n; ++i) {
    const int e = s.fwd_order[1 + static_cast<std::size_t>(i) % (s.fwd_order.size() - 1)];
    const auto t0 = Clock::now();
    set_reshard(s, e, s.units[static_cast<std::size_t>(e)].reshard == kReshard ? kKeepUnsharded : kReshard, c);
    SimResult r = simulate(s, detail);
    times.push_back(us_since(t0));
    sink += r.step_ns + r.peak_bytes;
  }
  const Stats st = stats(times);
  std::printf("toggle+simulate  %-28s world %6d  detail %-3s  median %8.1f us  p99 %8.1f us  max %8.1f us  (units %zu, ops %zu) [%lld]\n",
              label, world, detail ? "yes" : "no", st.median_us, st.p99_us, st.max_us, s.units.size(),
              simulate(s).ops.size(), static_cast<long long>(sink % 10));
}

void planner_bench(const SimModel& m, const char* label, int world, Strategy strategy, const char* name, double budget_gib) {
  ClusterModel c;
  c.world_size = world;
  CompiledStep s = compile_step(m, FsdpPlan{}, c);
  PlanRequest req;
  req.strategy = strategy;
  req.budget_bytes = static_cast<std::int64_t>(budget_gib * (1LL << 30));
  std::vector<double> times;
  PlanOutcome o;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = Clock::now();
    o = plan_unshard(m, s, c, req);
    times.push_back(us_since(t0) / 1000.0);
  }
  const Stats st = stats(times);
  std::printf("plan %-6s       %-28s world %6d  budget %5.1f GiB  median %8.2f ms  max %8.2f ms  simulations %d  unsharded %zu  %.2f -> %.2f ms\n",
              name, label, world, budget_gib, st.median_us, st.max_us, o.simulations, o.unsharded.size(),
              o.baseline.step_ns / 1e6, o.result.step_ns / 1e6);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : std::string(SHARDSCOPE_SOURCE_DIR) + "/resources/models/llama3-70b.json";
  ModelDescription d = load_model_file(path);
  const SimModel layer = build_sim_model(d);
  d.wrap = "sublayer";
  const SimModel sub = build_sim_model(d);
  std::printf("model %s: %d layers, %zu units (layer wrap), %zu units (sublayer wrap)\n", d.name.c_str(), d.layers,
              layer.units.size(), sub.units.size());
  for (int world : {8, 1024, 10240}) {
    toggle_bench(layer, "80 layers, layer wrap", world, false);
    toggle_bench(layer, "80 layers, layer wrap", world, true);
    toggle_bench(sub, "80 layers, sublayer wrap", world, true);
  }
  // Budgets between the all-resharded and the all-unsharded peaks at world 64.
  for (double gib : {40.0, 60.0}) {
    planner_bench(layer, "80 layers, layer wrap", 64, Strategy::Cost, "cost", gib);
    planner_bench(layer, "80 layers, layer wrap", 64, Strategy::Greedy, "greedy", gib);
  }
  planner_bench(sub, "80 layers, sublayer wrap", 64, Strategy::Cost, "cost", 60.0);
  planner_bench(layer, "80 layers, layer wrap", 10240, Strategy::Cost, "cost", 20.0);
  return 0;
}
