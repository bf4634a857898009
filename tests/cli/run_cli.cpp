#include "tests/cli/run_cli.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>

#include "tests/support/test_paths.h"

namespace ss::test {

namespace {
std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}
}  // namespace

CliResult run_cli(const std::vector<std::string>& args, const std::string& env) {
  TempDir dir;
  std::string cmd = (env.empty() ? std::string() : env + " ") + shell_quote(SHARDSCOPE_EXE);
  for (const auto& a : args) cmd += " " + shell_quote(a);
  cmd += " >" + shell_quote(dir.file("out")) + " 2>" + shell_quote(dir.file("err")) + " </dev/null";
  int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_file(dir.file("out"));
  r.err = read_file(dir.file("err"));
  return r;
}

}  // namespace ss::test
