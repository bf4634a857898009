// The plugin host: loading, refusal of other API versions and non-plugins, containment of a
// plugin that throws or fails (the host keeps working), and the host API seen by a plugin.
#include <catch2/catch.hpp>

#include "plugins/api/shardscope_plugin.h"
#include "plugins/host/plugin_host.h"
#include "storage/profile_reader.h"
#include "tests/plugins/hand_made_profiles.h"
#include "tests/plugins/result_access.h"
#include "tests/support/test_paths.h"

using namespace ss;
using namespace ss::plugins;
using ss::test::int_at;
using ss::test::table_of;

namespace {

const std::string kTestDir = SS_TEST_PLUGIN_DIR;

std::string problem_for(const PluginHost& h, const std::string& file) {
  for (const auto& p : h.problems())
    if (p.path.find(file) != std::string::npos) return p.message;
  return "";
}

}  // namespace

TEST_CASE("discovery loads the good test plugins and refuses the others with a reason", "[plugins]") {
  PluginHost h;
  h.discover({kTestDir, "/nonexistent/shardscope/plugins"});
  CHECK(h.find("test-echo") != nullptr);
  CHECK(h.find("test-throws") != nullptr);
  CHECK(h.find("test-fails") != nullptr);
  CHECK(h.find("test-c") != nullptr);
  CHECK(h.plugins().size() == 4);
  CHECK(h.searched_dirs().size() == 2);

  const std::string wrong = problem_for(h, "ss_test_wrong_version_plugin.so");
  INFO(wrong);
  CHECK(wrong.find("version 42") != std::string::npos);
  CHECK(wrong.find("version " + std::to_string(SS_PLUGIN_API_VERSION)) != std::string::npos);
  CHECK(problem_for(h, "ss_test_not_a_plugin.so").find("not a ShardScope plugin") != std::string::npos);
}

TEST_CASE("a plugin name loaded twice keeps the first and reports the second", "[plugins]") {
  PluginHost h;
  CHECK(h.load(kTestDir + "/ss_test_echo_plugin.so"));
  CHECK_FALSE(h.load(kTestDir + "/ss_test_echo_plugin.so"));
  REQUIRE(h.problems().size() == 1);
  CHECK(h.problems()[0].message.find("already loaded") != std::string::npos);
  CHECK_FALSE(h.load(kTestDir + "/no_such_plugin.so"));
  CHECK(h.problems().back().message.find("cannot load") != std::string::npos);
}

TEST_CASE("a throwing or failing plugin is reported and the host keeps running", "[plugins]") {
  ss::test::TempDir dir;
  ss::test::write_two_rank_profile(dir.file("p.ssdb"));
  const Profile profile = load_profile(dir.file("p.ssdb"));
  PluginHost h;
  h.discover({kTestDir});

  AnalysisResult thrown = h.run("test-throws", profile);
  CHECK_FALSE(thrown.ok);
  CHECK(thrown.error.find("boom from the throwing plugin") != std::string::npos);
  CHECK(thrown.error.find("exception escaped") != std::string::npos);
  CHECK(thrown.tables.empty());  // the partial table is not shown as a result

  AnalysisResult failed = h.run("test-fails", profile);
  CHECK_FALSE(failed.ok);
  CHECK(failed.error.find("nothing for the failing plugin") != std::string::npos);

  AnalysisResult unknown = h.run("no-such-analysis", profile);
  CHECK_FALSE(unknown.ok);
  CHECK(unknown.error.find("no analysis named") != std::string::npos);

  // After both faults, the host still runs a good plugin, twice.
  for (int i = 0; i < 2; ++i) {
    AnalysisResult r = h.run("test-echo", profile);
    REQUIRE(r.ok);
    CHECK(table_of(r, "echo").rows.size() == 1);
  }
}

TEST_CASE("the host API gives a plugin the profile, read-only SQL and the selection", "[plugins]") {
  ss::test::TempDir dir;
  ss::test::write_two_rank_profile(dir.file("p.ssdb"));
  const std::string before = ss::test::sha256_of_file(dir.file("p.ssdb"));
  const Profile profile = load_profile(dir.file("p.ssdb"));
  PluginHost h;
  h.discover({kTestDir});

  SECTION("whole profile") {
    AnalysisResult r = h.run("test-echo", profile);
    REQUIRE(r.ok);
    const auto& t = table_of(r, "echo");
    const auto& row = t.rows.at(0);
    // 6 kernels on rank 0 + 6 on rank 1 (hand_made_profiles.cpp).
    CHECK(int_at(t, row, "kernels_sql") == 12);
    CHECK(int_at(t, row, "kernels_model") == 12);
    CHECK(int_at(t, row, "modules") == 4);
    CHECK(int_at(t, row, "collectives") == 4);
    CHECK(int_at(t, row, "selected_ranks") == 2);
    CHECK(int_at(t, row, "has_time") == 0);
    CHECK(int_at(t, row, "from") == profile.time_begin);
    CHECK(int_at(t, row, "to") == profile.time_end);
    CHECK(int_at(t, row, "write_refused") == 1);
    CHECK(std::get<std::string>(row[ss::test::column_index(t, "first_kernel_name")]) == "gemm");
    REQUIRE(r.findings.size() == 1);
    CHECK(r.findings[0].severity == Severity::Problem);
    CHECK(r.findings[0].range == std::pair<TimeNs, TimeNs>{10, 20});
    CHECK(r.findings[0].rank == 1);
    REQUIRE(r.markers.size() == 1);
    CHECK(r.markers[0].label == "echo marker");
    REQUIRE(r.counters.size() == 1);
    CHECK(r.counters[0].points == std::vector<std::pair<TimeNs, double>>{{1, 2.5}, {3, 4.5}});
    CHECK(r.log == std::vector<std::string>{"echo ran"});
  }
  SECTION("selection of one rank and a window") {
    Selection sel;
    sel.ranks = {1};
    sel.from = 5;
    AnalysisResult r = h.run("test-echo", profile, sel);
    REQUIRE(r.ok);
    const auto& t = table_of(r, "echo");
    CHECK(int_at(t, t.rows[0], "selected_ranks") == 1);
    CHECK(int_at(t, t.rows[0], "has_time") == 1);
    CHECK(int_at(t, t.rows[0], "from") == 5);
    CHECK(int_at(t, t.rows[0], "to") == profile.time_end);
  }
  // The plugin's DELETE was refused: the file is byte-for-byte unchanged.
  CHECK(ss::test::sha256_of_file(dir.file("p.ssdb")) == before);
}

TEST_CASE("a plugin written in C uses the SQL and model API", "[plugins]") {
  ss::test::TempDir dir;
  ss::test::write_two_rank_profile(dir.file("p.ssdb"));
  const Profile profile = load_profile(dir.file("p.ssdb"));
  PluginHost h;
  REQUIRE(h.load(kTestDir + "/ss_test_c_plugin.so"));
  AnalysisResult r = h.run("test-c", profile);
  INFO(r.error);
  REQUIRE(r.ok);
  const auto& t = table_of(r, "c_counts");
  // 2 ranks; 2 collectives per rank (hand_made_profiles.cpp).
  CHECK(int_at(t, t.rows.at(0), "ranks") == 2);
  CHECK(int_at(t, t.rows.at(0), "collectives") == 4);
}
