#include <iostream>

#include "app/cli/arg_parser.h"
#include "app/cli/command.h"
#include "storage/errors.h"

namespace ss::cli {

const std::vector<Command>& commands() {
  // One line per subcommand; keep the order of `shardscope --help`.
  static const std::vector<Command> kCommands = {
      {"info", "summarise a profile: ranks, GPUs, time span, counts, top kernels", cmd_info},
      {"sql", "run read-only SQL against a profile", cmd_sql},
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
