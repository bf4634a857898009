// The command line as a user runs it: exit codes (0 ok, 1 usage, 2 bad input), help, info and sql output.
#include <catch2/catch.hpp>

#include <simdjson.h>

#include <cstdio>
#include <sstream>

#include "profiler/synthetic/synthetic_profile.h"
#include "tests/cli/run_cli.h"
#include "tests/support/test_paths.h"

using namespace ss;
using test::run_cli;
using Catch::Matchers::Contains;

namespace {
std::string make_profile(const test::TempDir& dir, SyntheticStats* stats = nullptr) {
  SyntheticSpec spec;
  spec.ranks = 2;
  spec.layers = 3;
  spec.steps = 2;
  auto path = dir.file("p.ssdb");
  auto s = write_synthetic_profile(path, spec);
  if (stats) *stats = s;
  return path;
}
}  // namespace

TEST_CASE("help and usage errors", "[cli]") {
  auto r = run_cli({"--help"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("info") && Contains("sql"));
  CHECK(run_cli({}).exit_code == 1);
  for (const char* cmd : {"info", "sql", "synth"}) {
    auto h = run_cli({cmd, "--help"});
    CHECK(h.exit_code == 0);
    CHECK_THAT(h.out, Contains(std::string("Usage: shardscope ") + cmd));
  }
  r = run_cli({"frobnicate"});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("unknown command"));
  r = run_cli({"info"});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("missing FILE"));
  r = run_cli({"info", "x.ssdb", "--format", "xml"});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("text|json"));
  r = run_cli({"info", "x.ssdb", "--bogus"});
  CHECK(r.exit_code == 1);
}

TEST_CASE("--help: every description under its option, indented, within 100 columns", "[cli]") {
  // Descriptions are written wrapped for column 0 in the source; the help re-flows them (record's
  // --memory and --steps, plan's --offload had lines at column 0 and up to 130 characters).
  for (const char* cmd : {"record", "import", "info", "sql", "export", "simulate", "plan", "diff", "analyze", "synth"}) {
    INFO(cmd);
    auto h = run_cli({cmd, "--help"});
    REQUIRE(h.exit_code == 0);
    std::istringstream lines(h.out);
    std::string line;
    bool in_list = false, described = false;
    int options = 0;
    while (std::getline(lines, line)) {
      INFO(line);
      if (line == "Options:" || line == "Arguments:") {
        in_list = true;
        continue;
      }
      if (line.empty()) {
        in_list = false;
        continue;
      }
      if (!in_list) continue;
      if (line.rfind("      ", 0) == 0) {  // a description's line
        CHECK(line.size() <= 100);
        CHECK(line[6] != ' ');
        described = true;
      } else {  // an option or argument: two spaces, then its name
        CHECK(line.rfind("  ", 0) == 0);
        CHECK(line[2] != ' ');
        ++options;
      }
    }
    CHECK(options >= 2);  // --help and at least one of the command's own
    CHECK(described);
  }
}

TEST_CASE("gui: --help and bad arguments without a display; no display is a clear error", "[cli]") {
  const std::string no_display = "env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM";
#ifdef SS_TEST_HAVE_GUI
  auto r = run_cli({"gui", "--help"}, no_display);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("Usage: shardscope gui") && Contains("--compare B"));
  r = run_cli({"gui", "x.ssdb", "--bogus"}, no_display);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("unexpected argument '--bogus'"));
  r = run_cli({"x.ssdb", "--compare"}, no_display);  // the option's value is missing
  CHECK(r.exit_code == 1);
  r = run_cli({"gui", "x.ssdb"}, no_display);  // Qt would abort; we explain instead
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("no display") && Contains("xvfb-run"));
  test::TempDir dir;
  // --plan: refused before a window opens when it has nothing to apply to or is no plan; whether
  // its units are the profile's is known once the profile is loaded (test_unshard_panel).
  test::write_file(dir.file("plan.json"), R"({"unsharded": ["layers.0"]})");
  test::write_file(dir.file("broken.json"), "not json");
  r = run_cli({"gui", "--plan", dir.file("plan.json")}, no_display);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("--plan needs a profile (FILE) or --model"));
  r = run_cli({"gui", "x.ssdb", "--plan", dir.file("plan.json"), "--compare", "y.ssdb"}, no_display);
  CHECK(r.exit_code == 1);
  r = run_cli({"gui", "x.ssdb", "--plan", dir.file("broken.json")}, no_display);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("--plan: ") && Contains("broken.json") && Contains("invalid JSON"));
  r = run_cli({"gui", "x.ssdb", "--plan", dir.file("missing.json")}, no_display);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("missing.json"));
  r = run_cli({"gui", "x.ssdb", "--plan", dir.file("plan.json")}, no_display);  // a plan: on to the display check
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("no display"));
  // A platform without OpenGL (Qt 6 crashed in its first flush there): the timeline's need is said.
  r = run_cli({"gui", make_profile(dir)}, "env QT_QPA_PLATFORM=offscreen");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("OpenGL 3") && Contains("no OpenGL context") && Contains("xvfb-run"));
#else
  auto r = run_cli({"gui"}, no_display);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("no desktop app"));
#endif
}

#ifdef SS_TEST_HAVE_GUI
// The desktop app is a library loaded only for `gui` / `shardscope FILE` (app/gui_loader.cpp):
// the executable itself must not need Qt, and a missing library is explained, not a crash.
TEST_CASE("the CLI does not load Qt; a missing desktop-app library is a clear error", "[cli]") {
  std::string needed;
  {
    FILE* p = ::popen("readelf -d '" SHARDSCOPE_EXE "'", "r");
    REQUIRE(p);
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) needed.append(buf, n);
    REQUIRE(::pclose(p) == 0);
  }
  CHECK_THAT(needed, Contains("libsqlite3"));  // the listing is real
  CHECK_THAT(needed, !Contains("libQt6"));

  const auto r = run_cli({"gui", "x.ssdb"}, "env SHARDSCOPE_GUI_LIBRARY=/nonexistent/shardscope_gui.so");
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.err, Contains("cannot load the desktop app") && Contains("/nonexistent/shardscope_gui.so"));
}
#endif

TEST_CASE("bad input exits 2 with the reader's message", "[cli]") {
  test::TempDir dir;
  test::write_file(dir.file("t.json"), "{}");
  auto r = run_cli({"info", dir.file("t.json")});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("not a SQLite database"));
  r = run_cli({"info", dir.file("missing.ssdb")});
  CHECK(r.exit_code == 2);
  r = run_cli({"sql", dir.file("t.json"), "SELECT 1"});
  CHECK(r.exit_code == 2);
}

TEST_CASE("info text and json", "[cli]") {
  test::TempDir dir;
  SyntheticStats st;
  auto path = make_profile(dir, &st);
  auto r = run_cli({"info", path});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("Ranks        2") && Contains("NVIDIA H100") && Contains("ncclDevKernel_AllGather_RING_LL") &&
                        Contains("synthetic"));
  r = run_cli({"info", path, "--format", "json"});
  REQUIRE(r.exit_code == 0);
  simdjson::dom::parser parser;
  simdjson::dom::element j;
  REQUIRE(parser.parse(r.out).get(j) == simdjson::SUCCESS);
  CHECK(int64_t(j["ranks"]) == 2);
  CHECK(j["gpus"].get_array().size() == 2);
  CHECK(std::string_view(j["gpus"].at(0)) == "NVIDIA H100 80GB HBM3");
  // The synthetic profile's GPU activities are kernels, copies and memsets; info splits them.
  CHECK(int64_t(j["gpu_activities"]) == st.kernels);
  CHECK(int64_t(j["kernels"]) + int64_t(j["copies"]) + int64_t(j["memsets"]) == st.kernels);
  CHECK(int64_t(j["collectives"]) == st.collectives);
  CHECK(int64_t(j["ranges"]) == st.ranges);
  CHECK(int64_t(j["modules"]) == 1 + 1 + 3 * 3 + 2);  // root, embeddings, 3 x (layer, attention, ffn), norm, output
  CHECK(int64_t(j["memory_events"]) == st.memory_events);
  CHECK(int64_t(j["steps"]) == st.steps);
  CHECK(std::string_view(j["origin"]["kind"]) == "synthetic");
  CHECK(j["top_kernels"].get_array().size() <= 10);
  // Time by category adds up to the sum of all kernel durations, checked with SQL.
  auto sum = run_cli({"sql", path, "SELECT sum(duration_ns) FROM kernels", "--format", "csv"});
  REQUIRE(sum.exit_code == 0);
  const std::int64_t total = std::stoll(sum.out.substr(sum.out.find('\n') + 1));
  std::int64_t by_cat = 0;
  for (auto field : j["time_by_category"].get_object()) by_cat += int64_t(field.value["total_ns"]);
  CHECK(by_cat == total);
}

// A CPU recording's collectives are gloo's operators: named as such, not "(unmatched)" by the
// GPU kernel rules.
TEST_CASE("info names a CPU recording's communication as gloo's", "[cli]") {
  auto r = run_cli({"info", test::source_dir() + "/resources/samples/cpu-fsdp2-llama-2rank.ssdb"});
  REQUIRE(r.exit_code == 0);
  const auto at = r.out.find("Communication kernels by the rule that recognised them");
  REQUIRE(at != std::string::npos);
  const std::string section = r.out.substr(at, r.out.find("\n\n", at) - at);
  CHECK_THAT(section, Contains("gloo") && Contains("gloo:") && !Contains("(unmatched)"));
}

TEST_CASE("sql output formats and refusal", "[cli]") {
  test::TempDir dir;
  auto path = make_profile(dir);
  const std::string before = test::sha256_of_file(path);
  auto r = run_cli({"sql", path, "SELECT rank, count(*) AS n FROM kernels GROUP BY rank ORDER BY rank", "--format", "csv"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.rfind("rank,n\n0,", 0) == 0);
  r = run_cli({"sql", path, "SELECT 'a,\"b' AS s", "--format", "csv"});
  CHECK(r.out == "s\n\"a,\"\"b\"\n");
  r = run_cli({"sql", path, "SELECT rank, gpu_name FROM ranks ORDER BY rank", "--format", "json"});
  REQUIRE(r.exit_code == 0);
  simdjson::dom::parser parser;
  simdjson::dom::element j;
  REQUIRE(parser.parse(r.out).get(j) == simdjson::SUCCESS);
  CHECK(j.get_array().size() == 2);
  CHECK(int64_t(j.at(1)["rank"]) == 1);
  r = run_cli({"sql", path, "SELECT fqn FROM modules WHERE fqn = 'layers.1'"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("layers.1") && Contains("(1 row)"));
  r = run_cli({"sql", path, "DROP TABLE kernels"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("read-only"));
  r = run_cli({"sql", path, "SELEC nonsense"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("syntax error"));
  CHECK(test::sha256_of_file(path) == before);
}

TEST_CASE("synth writes a profile that info reads", "[cli]") {
  test::TempDir dir;
  auto r = run_cli({"synth", "-o", dir.file("s.ssdb"), "--ranks", "4", "--layers", "2", "--kernels", "3000"});
  REQUIRE(r.exit_code == 0);
  auto i = run_cli({"info", dir.file("s.ssdb"), "--format", "json"});
  REQUIRE(i.exit_code == 0);
  simdjson::dom::parser parser;
  simdjson::dom::element j;
  REQUIRE(parser.parse(i.out).get(j) == simdjson::SUCCESS);
  CHECK(int64_t(j["ranks"]) == 4);
  CHECK(int64_t(j["kernels"]) >= 3000);
  CHECK(run_cli({"synth", "-o", dir.file("x.ssdb"), "--ranks", "0"}).exit_code == 1);
  CHECK(run_cli({"synth", "-o", dir.file("x.ssdb"), "--ranks", "two"}).exit_code == 1);
}
