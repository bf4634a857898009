// Built-in analyses on real traces (../shared/data/traces), imported with `shardscope import`:
// scripts/check_analyses.py recomputes the temporal, overlap, idle-gap and straggler numbers
// from the profile's tables with python3 + sqlite3 (an event sweep, no ShardScope code) and
// exits 0 only when every number the plugins report matches (docs/analyses.md lists them).
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

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
    CHECK(r.ok);  // the unshard advisor too: without FSDP units it says so in a finding
  }
}

}  // namespace

TEST_CASE("analyses agree with an independent computation on real traces", "[plugins][realdata]") {
  check_trace("kineto-a100-ddp/nccl_data.json.gz");
  check_trace("nsys-h100-fsdp-2gpu/mfu_2gpu_before.sqlite");
}

// The critical path of the real 8-rank DLRM step (issue 14), checked by hand against the
// collectives table (sqlite3 on the imported profile; times since the profile's start):
//   * step 10 spans [0, 20.823 ms] and ends on rank 4 with Adam's element-wise kernels
//     (addcdiv / sqrt / addcmul, 2-3 us each, launch-bound: 6-7 us launches, 4-20 us host gaps);
//   * at all-reduce sequence 6, rank 4 started at 17.633 ms but rank 5 only at 17.682 ms: the
//     path moves to rank 5 (49 us of peer wait);
//   * at all-reduce sequence 4, rank 5 started at 15.246 ms and rank 7 at 15.258 ms: the path
//     moves to rank 7 (12 us);
//   * rank 7 is the last to start every all-to-all (sequences 0-3: 10.725, 13.505, 13.906,
//     14.039 ms), so the path stays on it back to the step's start.
// The step is host-bound: 17.4 ms of host time and 2.0 ms of launches against 1.1 ms of compute.
TEST_CASE("critical path of the real 8-rank DLRM step", "[plugins][realdata][critical]") {
  TempDir dir;
  const std::string profile = dir.file("dlrm.ssdb");
  std::vector<std::string> args{"import", "-q", "-o", profile};
  for (int w = 0; w < 8; ++w) {
    const std::string folder = trace("kineto-v100-dlrm-8ranks");
    for (const auto& e : std::filesystem::directory_iterator(folder))
      if (e.path().filename().string().rfind("worker" + std::to_string(w) + "_", 0) == 0) args.push_back(e.path().string());
  }
  REQUIRE(args.size() == 4 + 8);
  REQUIRE(run_cli(args).exit_code == 0);
  const Profile p = load_profile(profile);
  plugins::PluginHost host;
  host.discover({SS_BUILTIN_PLUGIN_DIR});
  plugins::AnalysisResult r = host.run("critical-path", p);
  REQUIRE(r.ok);
  const auto& st = table_of(r, "steps");
  REQUIRE(st.rows.size() == 1);
  const auto& s = st.rows[0];
  CHECK(int_at(st, s, "step") == 10);
  CHECK(int_at(st, s, "duration_ns") == 20'823'000);
  CHECK(int_at(st, s, "ranks_on_path") == 3);
  CHECK(int_at(st, s, "peer_wait_ns") == 49'000 + 12'000);
  CHECK(int_at(st, s, "host_ns") > int_at(st, s, "compute_ns") * 10);
  // The path's ranks, from the step's end backwards: 4, then 5, then 7, switching at the two
  // all-reduces above.
  const auto& path = table_of(r, "path");
  std::vector<std::pair<std::int64_t, std::int64_t>> segs;  // (start, rank)
  std::int64_t total = 0;
  for (const auto& row : path.rows) {
    segs.emplace_back(int_at(path, row, "start_ns"), int_at(path, row, "rank"));
    total += int_at(path, row, "duration_ns");
  }
  CHECK(total == 20'823'000);
  std::sort(segs.begin(), segs.end());
  std::vector<std::int64_t> ranks;
  for (const auto& [start, rank] : segs)
    if (ranks.empty() || ranks.back() != rank) ranks.push_back(rank);
  CHECK(ranks == std::vector<std::int64_t>{7, 5, 4});
  const TimeNs t0 = p.time_begin;
  for (const auto& [start, rank] : segs) {
    if (rank == 5) CHECK(start - t0 >= 15'258'000);
    if (rank == 4) CHECK(start - t0 >= 17'682'000);
  }
}
