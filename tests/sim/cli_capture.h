// Runs a shardscope subcommand in-process with stdout and stderr captured (the sim CLI tests).
#pragma once

#include <catch2/catch.hpp>

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli/command.h"

namespace ss::test {

struct CliRun {
  int code;
  std::string out, err;
};

inline CliRun run_cli(const std::string& name, const std::vector<std::string>& args) {
  for (const auto& c : cli::commands()) {
    if (name != c.name) continue;
    std::ostringstream out, err;
    auto* o = std::cout.rdbuf(out.rdbuf());
    auto* e = std::cerr.rdbuf(err.rdbuf());
    const int code = cli::run_command(c, args);
    std::cout.rdbuf(o);
    std::cerr.rdbuf(e);
    return {code, out.str(), err.str()};
  }
  FAIL("no command " << name);
  return {};
}

}  // namespace ss::test
