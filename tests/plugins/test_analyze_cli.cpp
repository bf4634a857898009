// `shardscope analyze`: listing, JSON output, selection options and exit codes (0 ok, 1 unknown
// analysis or usage, 2 bad input, 3 the analysis failed), run as a real process.
#include <catch2/catch.hpp>
#include <simdjson.h>

#include <cstdlib>

#include "tests/cli/run_cli.h"
#include "tests/plugins/hand_made_profiles.h"
#include "storage/units.h"
#include "tests/support/test_paths.h"

using namespace ss::test;

TEST_CASE("analyze --list names the built-in analyses", "[plugins][cli]") {
  CliResult r = run_cli({"analyze", "--list"});
  REQUIRE(r.exit_code == 0);
  for (const char* n : {"temporal", "overlap", "top-kernels", "idle-gaps", "stragglers", "memory-peak", "launch-stats",
                        "copy-bandwidth", "annotations"}) {
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

// A recording's time line holds the initialisation before its first step (torchtitan: 57 % of
// its window, nearly all idle); --steps puts the window on the recorded steps.
TEST_CASE("analyze --steps puts the window on recorded steps", "[plugins][cli]") {
  TempDir dir;
  write_steps_profile(dir.file("s.ssdb"));  // one rank, steps 0 [1000,2000) us and 1 [3000,4000) us
  simdjson::dom::parser parser;
  auto window_of = [&](std::vector<std::string> args) {
    CliResult r = run_cli(args);
    REQUIRE(r.exit_code == 0);
    simdjson::dom::element d = parser.parse(r.out);
    return int64_t(d["tables"].at(0)["rows"].at(0).at(1));  // temporal's window_ns
  };
  const std::string f = dir.file("s.ssdb");
  CHECK(window_of({"analyze", "temporal", f, "--steps", "1", "--format", "json"}) == 1'000'000);
  CHECK(window_of({"analyze", "temporal", f, "--steps", "0:", "--format", "json"}) == 3'000'000);
  CHECK(window_of({"analyze", "temporal", f, "--steps", ":1", "--format", "json"}) == 1'000'000);
  // Without it: the first kernel (100 us) to the last (3200 us), and a finding says how much of
  // that is outside the steps: 1900 of 3100 us.
  CliResult whole = run_cli({"analyze", "temporal", f});
  REQUIRE(whole.exit_code == 0);
  CHECK(whole.out.find("61.3% of rank 0's window is outside every recorded step") != std::string::npos);
  // Steps 0 and 1 hold the gap between them: 1000 of 3000 us.
  CliResult steps = run_cli({"analyze", "temporal", f, "--steps", "0:"});
  CHECK(steps.out.find("(window: steps 0:, ") != std::string::npos);
  CHECK(steps.out.find("33.3% of rank 0's window is outside every recorded step") != std::string::npos);
  CHECK(run_cli({"analyze", "temporal", f, "--steps", "1"}).out.find("outside every recorded step") == std::string::npos);

  CliResult none = run_cli({"analyze", "temporal", f, "--steps", "2:"});
  CHECK(none.exit_code == 2);
  CHECK(none.err.find("no such step; the profile's steps are 0 to 1") != std::string::npos);
  CHECK(run_cli({"analyze", "temporal", f, "--steps", "1:1"}).exit_code == 1);
  CHECK(run_cli({"analyze", "temporal", f, "--steps", "one"}).exit_code == 1);
  CHECK(run_cli({"analyze", "temporal", f, "--steps", "1", "--from", "0"}).exit_code == 1);
  // A profile without steps (the two-rank one) says so.
  write_two_rank_profile(dir.file("p.ssdb"));
  CliResult no_steps = run_cli({"analyze", "temporal", dir.file("p.ssdb"), "--steps", "0"});
  CHECK(no_steps.exit_code == 2);
  CHECK(no_steps.err.find("has no recorded steps") != std::string::npos);
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

// One time base (issue 13): the CLI's text and JSON give timestamps as time since the profile's
// start, the timeline ruler's 0, and --from/--to take times on that base.
TEST_CASE("analyze reports timestamps since the profile's start", "[plugins][cli]") {
  TempDir dir;
  const std::string path = dir.file("s.ssdb");
  REQUIRE(run_cli({"synth", "-o", path, "--ranks", "2", "--layers", "2"}).exit_code == 0);
  simdjson::dom::parser info_parser, parser;
  CliResult info = run_cli({"info", path, "--format", "json"});
  REQUIRE(info.exit_code == 0);
  simdjson::dom::element i = info_parser.parse(info.out);
  const int64_t begin = int64_t(i["time_begin_ns"]), duration = int64_t(i["duration_ns"]);
  REQUIRE(begin > 0);  // the synthetic clock does not start at 0, so a wrong base shows

  CliResult json = run_cli({"analyze", "memory-peak", path, "--format", "json"});
  REQUIRE(json.exit_code == 0);
  simdjson::dom::element doc = parser.parse(json.out);
  CHECK(int64_t(doc["time_base"]["profile_start_ns"]) == begin);
  CHECK(std::string_view(doc["time_base"]["timestamps"]) == "ns since the profile's start");
  simdjson::dom::array peaks = doc["tables"].at(0)["rows"];
  REQUIRE(peaks.size() == 2);
  const int64_t peak_t = int64_t(peaks.at(0).at(2));  // peak_time_ns of rank 0
  CHECK(peak_t >= 0);
  CHECK(peak_t <= duration);
  // The finding and the marker for that peak sit at the same time on the same base.
  CHECK(int64_t(doc["findings"].at(0)["start_ns"]) == peak_t);
  CHECK(int64_t(doc["markers"].at(0)["start_ns"]) == peak_t);

  // Text: readable units, the same instant.
  CliResult text = run_cli({"analyze", "memory-peak", path});
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("since the profile's start") != std::string::npos);
  CHECK(text.out.find("peak time") != std::string::npos);  // header without the _ns suffix
  CHECK(text.out.find(ss::format_duration_ns(peak_t)) != std::string::npos);
  CHECK(text.out.find(std::to_string(begin + peak_t)) == std::string::npos);  // no absolute clock values

  // A window after the peak, given on the same base with a unit, leaves it out.
  const std::string after = std::to_string(peak_t + 1) + "ns";
  CliResult later = run_cli({"analyze", "memory-peak", path, "--from", after, "--format", "json"});
  REQUIRE(later.exit_code == 0);
  simdjson::dom::element d2 = parser.parse(later.out);
  simdjson::dom::array rows2 = d2["tables"].at(0)["rows"];
  for (auto r : rows2)
    if (int64_t(r.at(0)) == 0) CHECK(int64_t(r.at(2)) > peak_t);
  CHECK(run_cli({"analyze", "memory-peak", path, "--from", "soon"}).exit_code == 1);
}
