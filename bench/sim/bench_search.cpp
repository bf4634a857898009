// Speed of the what-if search (search_configs, `shardscope plan --search`): Llama-3 70B on 1,024
// GPUs and Llama-3 8B on 64 GPUs, each with and without a fixed global batch, on 1 and 2 threads.
// Usage: bench_search [runs]   (default 3 runs per row; the median wall time is reported). The last
// two rows run once without the lower bounds.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "profiler/sim/model_description.h"
#include "profiler/sim/search.h"

using namespace ss::sim;

namespace {

void row(const char* file, int world, int global_batch, int threads, int runs, bool prune = true) {
  ModelDescription d = load_model_file(std::string(SHARDSCOPE_SOURCE_DIR) + "/resources/models/" + file);
  d.activation_checkpointing = "none";  // the search chooses checkpointing (as `plan --search` does)
  const SimModel m = build_sim_model(d);
  ClusterModel c;
  c.world_size = world;
  SearchRequest req;
  req.budget_bytes = 80LL << 30;  // the H100's 80 GiB (device table)
  req.global_batch = global_batch;
  req.threads = threads;
  req.prune = prune;
  std::vector<double> secs;
  SearchResult r;
  for (int i = 0; i < runs; ++i) {
    r = search_configs(m, search_shape(d, m), FsdpPlan{}, c, req);
    secs.push_back(r.seconds);
  }
  std::sort(secs.begin(), secs.end());
  const SearchConfig* best = r.configs.empty() ? nullptr : &r.configs.front();
  std::printf("%s%-16s world %5d  global batch %5s  threads %d  median %7.3f s  max %7.3f s  enumerated %5d  invalid %4d  "
              "pruned(static) %5d  pruned(bound) %5d  not tried %4d  simulated %5d  fitting %5d  planned %3d  planner sims %6d (%.3f s)",
              prune ? "" : "[no bounds] ", d.name.c_str(), world, global_batch > 0 ? std::to_string(global_batch).c_str() : "free", threads, secs[secs.size() / 2],
              secs.back(), r.enumerated, r.invalid, r.pruned_static, r.pruned_bound, r.dominated, r.simulated, r.fitting, r.planned, r.planner_simulations, r.planner_seconds);
  if (best) {
    const auto& p = best->plan.parallel;
    std::printf("  best dp %d tp %d cp %d(%s) pp %d m %d ckpt %s offload %s unsharded %d: %.1f ms, %.0f tok/s, MFU %.1f %%",
                best->dp, p.tp, p.cp, p.cp_kind.c_str(), p.pp, best->plan.gradient_accumulation, best->checkpoint.c_str(),
                best->plan.offload.c_str(), best->unsharded, best->result.step_ns / 1e6, best->tokens_per_s, 100 * best->mfu);
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  for (int threads : {1, 2}) {
    row("llama3-70b.json", 1024, 0, threads, runs);
    row("llama3-70b.json", 1024, 1024, threads, runs);
    row("llama3-8b.json", 64, 0, threads, runs);
    row("llama3-8b.json", 64, 256, threads, runs);
  }
  // The same searches without the lower bounds (every candidate simulated and planned): what the
  // pruning saves. The lists are the same (test_sim_search).
  row("llama3-70b.json", 1024, 1024, 1, 1, false);
  row("llama3-8b.json", 64, 256, 1, 1, false);
  return 0;
}
