#include <iostream>

#include "app/cli/arg_parser.h"
#include "app/cli/command.h"
#include "storage/errors.h"

namespace ss::cli {

const std::vector<Command>& commands() {
  // One line per subcommand; keep the order of `shardscope --help`.
  static const std::vector<Command> kCommands = {
      {"record", "run a training command under the CUPTI collector and write one profile", cmd_record},
      {"import", "import Kineto JSON / Nsight Systems SQLite traces into a profile", cmd_import},
      {"info", "summarise a profile: ranks, GPUs, time span, counts, top kernels", cmd_info},
      {"sql", "run read-only SQL against a profile", cmd_sql},
      {"export", "export a profile as Perfetto / Chrome-trace JSON or CSV", cmd_export},
      {"simulate", "simulate an FSDP2 step from a profile or a model description (what-ifs)", cmd_simulate},
      {"plan", "choose modules to keep unsharded under a memory budget", cmd_plan},
      {"diff", "compare two profiles (measured vs simulated, run A vs B) per module, kernel or collective", cmd_diff},
      {"analyze", "run an analysis plugin (overlap, idle gaps, stragglers, memory peak, ...) on a profile", cmd_analyze},
      {"synth", "write a synthetic profile (tests, benchmarks, demos)", cmd_synth},
  };
  return kCommands;
}

int run_command(const Command& c, const std::vector<std::string>& args) {
  try {
    return c.run(args);
  } catch (const UsageError& e) {
    std::cerr << "shardscope " << c.name << ": " << e.what() << "\nTry 'shardscope " << c.name << " --help'.\n";
    return kExitUsage;
  } catch (const ProfileError& e) {
    std::cerr << "shardscope " << c.name << ": error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::bad_alloc&) {
    std::cerr << "shardscope " << c.name << ": error: out of memory\n";
    return kExitInternal;
  } catch (const std::exception& e) {
    std::cerr << "shardscope " << c.name << ": internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}

}  // namespace ss::cli
