// The what-if panel's re-simulation per change (issue 15 item 7: <= 50 ms): each kind of change
// the panel makes (keep unsharded, checkpoint a unit, offload, micro-batches, tp, pp) through
// UnshardSession, which is compile_step + simulate + the per-unit figures, and then the timeline's
// simulated profile (write_simulated_profile + load_profile). Qt-free: the repaint is measured by
// bench_unshard_toggle.
//
//   build/bench/views/bench_whatif_change [REPEATS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "profiler/sim/simulated_profile.h"
#include "profiler/sim/step_simulator.h"
#include "storage/profile_reader.h"
#include "views/unshard/simulated_timeline.h"
#include "views/unshard/unshard_session.h"

using namespace ss;
using namespace ss::unshard;
using Clock = std::chrono::steady_clock;

namespace {
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

struct Stats {
  double median = 0, p99 = 0, max = 0;
};
Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return {};
  return {v[v.size() / 2], v[std::min(v.size() - 1, v.size() * 99 / 100)], v.back()};
}

// One kind of change: flips between two values, so every call is a real change (a re-simulation).
struct Change {
  std::string name;
  std::function<void(UnshardSession&, bool)> apply;
};

void run(const std::string& title, UnshardSession& s, const std::vector<Change>& changes, int repeats) {
  const auto& r = s.prediction().result;
  std::printf("\n%s: %d units, %zu simulated ops, step %.1f ms\n", title.c_str(), s.unit_count(), r.ops.size(),
              static_cast<double>(r.step_ns) / 1e6);
  std::printf("  %-28s %24s %24s\n", "change", "re-simulate med/p99/max", "timeline profile med/p99");
  const std::string scratch = timeline_scratch_path();
  for (const auto& c : changes) {
    std::vector<double> sim_ms, tl_ms;
    for (int i = 0; i < repeats; ++i) {
      auto t = Clock::now();
      c.apply(s, i % 2 == 0);
      sim_ms.push_back(ms_since(t));
      if (i < 20) {  // the profile round trip is independent of the change's kind: fewer samples
        t = Clock::now();
        const auto& p = s.prediction();
        simulated_timeline_profile(s.inputs(), p.step, p.result, scratch);
        tl_ms.push_back(ms_since(t));
      }
    }
    const Stats a = stats(sim_ms), b = stats(tl_ms);
    std::printf("  %-28s %8.2f %7.2f %7.2f ms %10.2f %7.2f ms\n", c.name.c_str(), a.median, a.p99, a.max, b.median, b.p99);
  }
  // The timeline profile's two halves on the last state: writing the profile file, reading it.
  std::vector<double> write_ms, load_ms;
  for (int i = 0; i < 10; ++i) {
    const auto& p = s.prediction();
    auto t = Clock::now();
    sim::write_simulated_profile(scratch, s.inputs().model, p.step, p.result, {s.inputs().source, s.inputs().gpu_name, "{}"});
    write_ms.push_back(ms_since(t));
    t = Clock::now();
    const Profile loaded = load_profile(scratch);
    load_ms.push_back(ms_since(t));
  }
  std::remove(scratch.c_str());
  std::printf("  timeline profile: write %.2f ms, load %.2f ms (medians; %zu memory events)\n", stats(write_ms).median,
              stats(load_ms).median, s.prediction().result.memory.size());
  // The two halves of a re-simulation on the last state.
  std::vector<double> compile_ms, simulate_ms;
  const sim::FsdpPlan plan = s.plan();
  const sim::ClusterModel cluster = s.cluster();
  for (int i = 0; i < std::max(5, repeats / 4); ++i) {
    auto t = Clock::now();
    const sim::CompiledStep step = sim::compile_step(s.inputs().model, plan, cluster);
    compile_ms.push_back(ms_since(t));
    t = Clock::now();
    const sim::SimResult res = sim::simulate(step);
    simulate_ms.push_back(ms_since(t));
  }
  std::printf("  compile_step alone %.2f ms, simulate alone %.2f ms (medians)\n", stats(compile_ms).median, stats(simulate_ms).median);
}

std::vector<Change> common_changes(const UnshardSession& s) {
  int keep = -1, ckpt = -1;
  for (int u = s.unit_count() - 1; u >= 0; --u) {
    if (!s.unit_fixed(u) && keep < 0) keep = u;
    if (s.checkpoint_choices(u).size() >= 2 && ckpt < 0) ckpt = u;
  }
  std::vector<Change> out{{"keep unsharded (toggle)", [keep](UnshardSession& x, bool on) { x.set_keep(keep, on); }}};
  // A description that is checkpointed already (llama3-70b) has no unit to checkpoint.
  if (ckpt >= 0) out.push_back({"checkpoint a unit full", [ckpt](UnshardSession& x, bool on) { x.set_checkpoint(ckpt, on ? "full" : "none"); }});
  out.push_back({"micro-batches 8 <-> 16", [](UnshardSession& x, bool on) { x.set_micro_batches(on ? 8 : 16); }});
  return out;
}
}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::max(2, std::atoi(argv[1])) : 100;
  const std::string src = SS_SOURCE_DIR;
  const std::string clusters = src + "/resources/clusters";
  for (const char* name : {"cpu-fsdp2-llama-2rank.ssdb", "synthetic-fsdp-4rank.ssdb"}) {
    UnshardSession s = UnshardSession::from_profile(src + "/resources/samples/" + name, clusters);
    auto changes = common_changes(s);
    changes.push_back({"offload cpu <-> none", [](UnshardSession& x, bool on) { x.set_offload(on ? "cpu" : "none"); }});
    changes.push_back({"pp 1 <-> 2", [](UnshardSession& x, bool on) {
                         sim::Parallelism p = x.state().parallel;
                         p.pp = on ? 2 : 1;
                         x.set_parallelism(p);
                       }});
    run(name, s, changes, repeats);
  }
  {
    UnshardSession s = UnshardSession::from_model(src + "/resources/models/llama3-70b.json", 1024, clusters);
    sim::Parallelism par;
    par.tp = 8;
    par.pp = 4;
    s.set_parallelism(par);
    s.set_micro_batches(16);
    auto changes = common_changes(s);
    changes.push_back({"tp 8 <-> 4", [](UnshardSession& x, bool on) {
                         sim::Parallelism p = x.state().parallel;
                         p.tp = on ? 4 : 8;
                         x.set_parallelism(p);
                       }});
    changes.push_back({"sequence parallel on/off", [](UnshardSession& x, bool on) {
                         sim::Parallelism p = x.state().parallel;
                         p.sequence_parallel = on;
                         x.set_parallelism(p);
                       }});
    changes.push_back({"pp 4 <-> 8", [](UnshardSession& x, bool on) {
                         sim::Parallelism p = x.state().parallel;
                         p.pp = on ? 8 : 4;
                         x.set_parallelism(p);
                       }});
    run("llama3-70b.json at 1024 GPUs, tp 8, pp 4, 16 micro-batches", s, changes, repeats);
  }
  return 0;
}
