// The `shardscope` subcommands. Each lives in its own cmd_*.cpp and is listed once in
// command_table.cpp. Exit codes: 0 ok, 1 usage error, 2 bad input, 3 internal error.
#pragma once

#include <string>
#include <vector>

namespace ss::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitInternal = 3;

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>& args);  // args after the subcommand name
};

const std::vector<Command>& commands();

// Runs one subcommand with uniform error handling (UsageError -> 1, ProfileError -> 2, ...).
int run_command(const Command& c, const std::vector<std::string>& args);

// Declarations of every command's entry point (defined in cmd_*.cpp).
int cmd_info(const std::vector<std::string>& args);
int cmd_sql(const std::vector<std::string>& args);
int cmd_synth(const std::vector<std::string>& args);
int cmd_record(const std::vector<std::string>& args);
int cmd_simulate(const std::vector<std::string>& args);
int cmd_plan(const std::vector<std::string>& args);
int cmd_import(const std::vector<std::string>& args);
int cmd_export(const std::vector<std::string>& args);
int cmd_diff(const std::vector<std::string>& args);
int cmd_analyze(const std::vector<std::string>& args);

}  // namespace ss::cli
