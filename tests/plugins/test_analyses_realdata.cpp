// Built-in analyses on real traces (../shared/data/traces), imported with `shardscope import`:
// scripts/check_analyses.py recomputes the temporal, overlap, idle-gap and straggler numbers
// from the profile's tables with python3 + sqlite3 (an event sweep, no ShardScope code) and
// exits 0 only when every number the plugins report matches (docs/analyses.md lists them).
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdlib>

#include "plugins/host/plugin_host.h"
#include "storage/profile_reader.h"
#include "tests/cli/run_cli.h"
#include "tests/plugins/result_access.h"
#include "tests/support/test_paths.h"

using namespace ss;
using namespace ss::test;

namespace {

int run_shell(const std::string& cmd) {
  int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

void check_trace(const std::string& relative) {
  INFO(relative);
  TempDir dir;
  const std::string profile = dir.file("p.ssdb");
  CliResult imp = run_cli({"import", trace(relative), "-o", profile, "-q"});
  INFO(imp.err);
  REQUIRE(imp.exit_code == 0);
  const std::string cmd = "python3 '" + source_dir() + "/scripts/check_analyses.py' '" SHARDSCOPE_EXE "' '" + profile +
                          "' --quiet >'" + dir.file("check.txt") + "' 2>&1";
  const int rc = run_shell(cmd);
  INFO(read_file(dir.file("check.txt")));
  CHECK(rc == 0);

  // A rank selection gives that rank's row of the full run, unchanged.
  const Profile p = load_profile(profile);
  plugins::PluginHost host;
  host.discover({SS_BUILTIN_PLUGIN_DIR});
  plugins::AnalysisResult all = host.run("temporal", p);
  REQUIRE(all.ok);
  const int last_rank = p.ranks.back().info.rank;
  plugins::Selection sel;
  sel.ranks = {last_rank};
  plugins::AnalysisResult one = host.run("temporal", p, sel);
  REQUIRE(one.ok);
  const auto& ta = table_of(all, "breakdown");
  const auto& to = table_of(one, "breakdown");
  REQUIRE(to.rows.size() == 1);
  CHECK(to.rows[0] == row_where(ta, "rank", last_rank));
  // Every built-in runs without error on real data.
  for (const auto& d : host.plugins()) {
    INFO(d.name);
    plugins::AnalysisResult r = host.run(d.name, p);
    if (d.name == "unshard-advisor" && !r.ok) continue;  // needs FSDP units and module ranges
    CHECK(r.ok);
  }
}

}  // namespace

TEST_CASE("analyses agree with an independent computation on real traces", "[plugins][realdata]") {
  check_trace("kineto-a100-ddp/nccl_data.json.gz");
  check_trace("nsys-h100-fsdp-2gpu/mfu_2gpu_before.sqlite");
}
