// `shardscope`: one executable, subcommands for everything; `shardscope FILE` opens the GUI.
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "app/cli/command.h"
#include "storage/version.h"

#ifdef SHARDSCOPE_HAVE_GUI
#include "app/gui_loader.h"
#endif

namespace {

void print_help() {
  std::cout << "ShardScope " << ss::kShardScopeVersion
            << " - profiler and what-if planner for sharded (FSDP / ZeRO) training\n\n"
               "Usage: shardscope COMMAND [ARGS...]\n"
               "       shardscope FILE.ssdb          open a profile in the desktop app\n\nCommands:\n";
  for (const auto& c : ss::cli::commands()) {
    std::string name = c.name;
    name.resize(10, ' ');
    std::cout << "  " << name << c.summary << "\n";
  }
#ifdef SHARDSCOPE_HAVE_GUI
  std::cout << "  gui       open the desktop app, optionally on FILE\n";
#endif
  std::cout << "\nRun 'shardscope COMMAND --help' for a command's options.\n"
               "Exit codes: 0 ok, 1 usage error, 2 bad input, 3 internal error.\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_help();
    return args.empty() ? ss::cli::kExitUsage : ss::cli::kExitOk;
  }
  if (args[0] == "--version") {
    std::cout << "shardscope " << ss::kShardScopeVersion << "\n";
    return 0;
  }
  for (const auto& c : ss::cli::commands())
    if (args[0] == c.name) return ss::cli::run_command(c, {args.begin() + 1, args.end()});
#ifdef SHARDSCOPE_HAVE_GUI
  if (args[0] == "gui") return ss::cli::run_gui_library(argc, argv, 2);
  if (args[0].find('.') != std::string::npos || args[0].find('/') != std::string::npos)
    return ss::cli::run_gui_library(argc, argv, 1);
#else
  if (args[0] == "gui" || args[0].find('.') != std::string::npos) {
    std::cerr << "shardscope: this build has no desktop app (configured with -DSHARDSCOPE_GUI=OFF);"
                 " use 'shardscope info FILE' or another command\n";
    return ss::cli::kExitUsage;
  }
#endif
  std::cerr << "shardscope: unknown command '" << args[0] << "'. Run 'shardscope --help'.\n";
  return ss::cli::kExitUsage;
}
