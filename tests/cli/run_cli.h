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

CliResult run_cli(const std::vector<std::string>& args);

}  // namespace ss::test
