// shardscope synth -o OUT [--ranks N] [--layers N] [--steps N] [--kernels N] [--seed S]
#include <iostream>

#include "app/cli/arg_parser.h"
#include "app/cli/command.h"
#include "profiler/synthetic/synthetic_profile.h"

namespace ss::cli {

int cmd_synth(const std::vector<std::string>& args) {
  ArgParser p("synth", "Write a synthetic profile: an FSDP-style step pattern (per-layer all-gather, forward and\n"
                       "backward kernels inside module ranges, reduce-scatter, optimizer, memory events). Its origin\n"
                       "says 'synthetic'. For tests, benchmarks and demos; never a measurement.");
  p.option("output", "OUT", "profile to write", "", 'o')
      .option("ranks", "N", "number of ranks", "2")
      .option("layers", "N", "decoder layers (one FSDP unit each)", "8")
      .option("steps", "N", "minimum number of training steps", "2")
      .option("kernels", "N", "add steps until the profile holds at least N kernels (0 = off)", "0")
      .option("kernels-per-module", "N", "compute kernels per module per forward pass", "4")
      .option("seed", "S", "random seed (the output is deterministic for a seed)", "1")
      .flag("no-memory", "leave out memory events");
  if (!p.parse(args)) return kExitOk;
  if (p.get("output").empty()) throw UsageError("missing -o OUT");
  SyntheticSpec spec;
  spec.ranks = static_cast<int>(p.get_int("ranks"));
  spec.layers = static_cast<int>(p.get_int("layers"));
  spec.steps = static_cast<int>(p.get_int("steps"));
  spec.min_kernels = p.get_int("kernels");
  spec.kernels_per_module = static_cast<int>(p.get_int("kernels-per-module"));
  spec.seed = static_cast<std::uint64_t>(p.get_int("seed"));
  spec.memory = !p.flag_set("no-memory");
  if (spec.ranks < 1 || spec.ranks > 100000) throw UsageError("--ranks must be between 1 and 100000");
  if (spec.layers < 1 || spec.layers > 10000) throw UsageError("--layers must be between 1 and 10000");
  if (spec.steps < 1 || spec.kernels_per_module < 1 || spec.min_kernels < 0)
    throw UsageError("--steps and --kernels-per-module must be positive, --kernels not negative");
  SyntheticStats st = write_synthetic_profile(p.get("output"), spec);
  std::cerr << "wrote " << p.get("output") << ": " << st.kernels << " kernels, " << st.ranges << " ranges, "
            << st.collectives << " collectives, " << st.memory_events << " memory events, " << st.steps
            << " steps per rank\n";
  return kExitOk;
}

}  // namespace ss::cli
