// Runs the real `shardscope` executable and captures its exit code, stdout and stderr.
#pragma once

#include <string>
#include <vector>

namespace ss::test {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// `env` is put before the command as given, e.g. "env -u DISPLAY".
CliResult run_cli(const std::vector<std::string>& args, const std::string& env = "");

}  // namespace ss::test
