// `shardscope analyze`: listing, JSON output, selection options and exit codes (0 ok, 1 unknown
// analysis or usage, 2 bad input, 3 the analysis failed), run as a real process.
#include <catch2/catch.hpp>
#include <simdjson.h>

#include <cstdlib>

#include "tests/cli/run_cli.h"
#include "tests/plugins/hand_made_profiles.h"
#include "tests/support/test_paths.h"

using namespace ss::test;

TEST_CASE("analyze --list names the built-in analyses", "[plugins][cli]") {
  CliResult r = run_cli({"analyze", "--list"});
  REQUIRE(r.exit_code == 0);
  for (const char* n : {"temporal", "overlap", "top-kernels", "idle-gaps", "stragglers", "memory-peak"}) {
    INFO(n);
    CHECK(r.out.find(std::string("  ") + n + " ") != std::string::npos);
  }
  // With the test plugin folder added, the refused ones are listed with their reasons.
  CliResult t = run_cli({"analyze", "--list", "--plugin-dir", SS_TEST_PLUGIN_DIR});
  REQUIRE(t.exit_code == 0);
  CHECK(t.out.find("test-echo") != std::string::npos);
  CHECK(t.out.find("built for plugin API version 42") != std::string::npos);
}

TEST_CASE("analyze NAME FILE prints tables or JSON", "[plugins][cli]") {
  TempDir dir;
  write_two_rank_profile(dir.file("p.ssdb"));
  CliResult text = run_cli({"analyze", "temporal", dir.file("p.ssdb")});
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("== breakdown (2 rows)") != std::string::npos);

  CliResult json = run_cli({"analyze", "stragglers", dir.file("p.ssdb"), "--format", "json"});
  REQUIRE(json.exit_code == 0);
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(json.out);
  CHECK(bool(doc["ok"]));
  CHECK(std::string_view(doc["analysis"]) == "stragglers");
  simdjson::dom::array tables = doc["tables"];
  CHECK(tables.size() == 2);
  // per_rank: rank 1 last twice, 80 us of lag in total (hand_made_profiles.cpp).
  simdjson::dom::array row = tables.at(0)["rows"].at(0);
  CHECK(int64_t(row.at(0)) == 1);
  CHECK(int64_t(row.at(2)) == 80'000);

  // --ranks and a window restrict the result.
  CliResult one = run_cli({"analyze", "temporal", dir.file("p.ssdb"), "--ranks", "1", "--from", "0", "--to", "300000",
                           "--format", "json"});
  REQUIRE(one.exit_code == 0);
  simdjson::dom::element d1 = parser.parse(one.out);
  simdjson::dom::array rows = d1["tables"].at(0)["rows"];
  REQUIRE(rows.size() == 1);
  CHECK(int64_t(rows.at(0).at(0)) == 1);        // rank
  CHECK(int64_t(rows.at(0).at(1)) == 300'000);  // window_ns
}

TEST_CASE("analyze exit codes", "[plugins][cli]") {
  TempDir dir;
  write_two_rank_profile(dir.file("p.ssdb"));
  CliResult unknown = run_cli({"analyze", "no-such-analysis", dir.file("p.ssdb")});
  CHECK(unknown.exit_code == 1);
  CHECK(unknown.err.find("unknown analysis 'no-such-analysis'") != std::string::npos);
  CHECK(unknown.err.find("overlap") != std::string::npos);  // the list follows

  write_file(dir.file("junk.ssdb"), "this is not a profile");
  CliResult junk = run_cli({"analyze", "temporal", dir.file("junk.ssdb")});
  CHECK(junk.exit_code == 2);
  CHECK(junk.err.find("junk.ssdb") != std::string::npos);
  CHECK(run_cli({"analyze", "temporal", dir.file("missing.ssdb")}).exit_code == 2);

  CliResult rank = run_cli({"analyze", "temporal", dir.file("p.ssdb"), "--ranks", "5"});
  CHECK(rank.exit_code == 2);
  CHECK(rank.err.find("no rank 5") != std::string::npos);
  CHECK(run_cli({"analyze", "temporal", dir.file("p.ssdb"), "--from", "10", "--to", "5"}).exit_code == 2);
  CHECK(run_cli({"analyze", "temporal", dir.file("p.ssdb"), "--ranks", "x"}).exit_code == 1);
  CHECK(run_cli({"analyze", "temporal", dir.file("p.ssdb"), "--format", "xml"}).exit_code == 1);
  CHECK(run_cli({"analyze"}).exit_code == 1);

  // A plugin that throws: reported with exit 3, the message names it, nothing on stdout.
  CliResult thrown = run_cli({"analyze", "test-throws", dir.file("p.ssdb"), "--plugin-dir", SS_TEST_PLUGIN_DIR});
  CHECK(thrown.exit_code == 3);
  CHECK(thrown.err.find("boom from the throwing plugin") != std::string::npos);
  CHECK(thrown.out.empty());
}

TEST_CASE("SHARDSCOPE_PLUGIN_PATH adds a plugin folder", "[plugins][cli]") {
  TempDir dir;
  write_two_rank_profile(dir.file("p.ssdb"));
  ::setenv("SHARDSCOPE_PLUGIN_PATH", SS_TEST_PLUGIN_DIR, 1);
  CliResult r = run_cli({"analyze", "test-echo", dir.file("p.ssdb")});
  ::unsetenv("SHARDSCOPE_PLUGIN_PATH");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("== echo (1 row)") != std::string::npos);
}
