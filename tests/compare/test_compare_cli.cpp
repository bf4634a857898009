// `shardscope diff` as a user runs it: the three formats print the same rows with the headline
// first, exit 2 on bad input, and --save / --open round-trip a comparison through a workspace.
#include <catch2/catch.hpp>

#include <simdjson.h>

#include <sstream>

#include "tests/cli/run_cli.h"
#include "tests/compare/handmade_profiles.h"
#include "tests/support/test_paths.h"

using namespace ss;
using test::run_cli;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

struct Files {
  test::TempDir dir;
  std::string a = test::write_profile_a(dir.file("a.ssdb"));
  std::string b = test::write_profile_b(dir.file("b.ssdb"));
};

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

}  // namespace

TEST_CASE("diff prints the headline, then the table sorted by discrepancy", "[compare][cli]") {
  Files f;
  auto r = run_cli({"diff", f.a, f.b});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // Expected numbers: see test_compare_core.cpp (step 1 on both sides).
  const auto out = r.out;
  CHECK_THAT(out, Contains("Aligned at step 1 on both sides"));
  const auto head = out.find("step_time"), exposed = out.find("exposed_communication"), table = out.find("\nmodule ");
  REQUIRE(head != std::string::npos);
  REQUIRE(exposed != std::string::npos);
  REQUIRE(table != std::string::npos);
  CHECK(head < table);
  CHECK(exposed < table);
  CHECK_THAT(out, Contains("-20.00%") && Contains("-24.00%"));
  // First row: layers.0 forward 3.00 us vs 2.00 us.
  const auto rows = lines(out.substr(table + 1));
  REQUIRE(rows.size() >= 6);
  // Key columns are padded to the longest module name shown ("layers.0.attn", 13 characters).
  CHECK_THAT(rows[0], StartsWith("module         phase"));
  CHECK_THAT(rows[1], StartsWith("layers.0       forward"));
  CHECK_THAT(rows[1], Contains(" 3 us") && Contains(" 2 us") && Contains("-33.33%"));
  CHECK_THAT(rows[4], StartsWith("layers.0.attn  forward"));
  CHECK_THAT(rows[5], StartsWith("layers.1       forward") && Contains("n/a"));

  auto k = run_cli({"diff", f.a, f.b, "--by", "kernel", "--top", "1"});
  REQUIRE(k.exit_code == 0);
  CHECK_THAT(k.out, Contains("ag_kernel") && Contains("(1 of 4 rows"));
  CHECK_THAT(k.out, !Contains("softmax"));
}

TEST_CASE("diff --format csv", "[compare][cli]") {
  Files f;
  auto r = run_cli({"diff", f.a, f.b, "--format", "csv"});
  REQUIRE(r.exit_code == 0);
  const auto l = lines(r.out);
  std::vector<std::string> data;
  std::vector<std::string> comments;
  for (const auto& x : l) (x.rfind("#", 0) == 0 ? comments : data).push_back(x);
  CHECK(comments.front().rfind("# a=", 0) == 0);
  CHECK_THAT(r.out, Contains("# step_time,10000,8000,-2000,-20.0000\n"));
  CHECK_THAT(r.out, Contains("# exposed_communication,2500,1900,-600,-24.0000\n"));
  REQUIRE(data.size() == 6);  // header + 5 module rows
  CHECK(data[0] == "module,phase,count_a,count_b,time_a_ns,time_b_ns,delta_ns,error_pct");
  CHECK(data[1] == "layers.0,forward,1,1,3000,2000,-1000,-33.3333");
  CHECK(data[2] == "layers.0,backward,1,1,4000,5000,1000,25.0000");
  CHECK(data[5] == "layers.1,forward,0,1,0,200,200,");

  auto c = run_cli({"diff", f.a, f.b, "--format", "csv", "--by", "collective"});
  REQUIRE(c.exit_code == 0);
  CHECK_THAT(c.out, Contains("type,process_group,bytes,count_a,count_b,time_a_ns,time_b_ns,delta_ns,error_pct\n"
                             "all_gather,0 (fsdp_shard),1000,1,1,2000,1000,-1000,-50.0000\n"
                             "reduce_scatter,0 (fsdp_shard),2000,1,1,1000,1400,400,40.0000\n"));
}

TEST_CASE("diff --format json", "[compare][cli]") {
  Files f;
  auto r = run_cli({"diff", f.a, f.b, "--format", "json", "--by", "kernel", "--step-a", "1", "--step-b", "1"});
  REQUIRE(r.exit_code == 0);
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(r.out);
  CHECK(int64_t(doc["a"]["step"]) == 1);
  CHECK(int64_t(doc["a"]["start_ns"]) == 1000);
  CHECK(int64_t(doc["b_to_a_offset_ns"]) == 500);
  CHECK(int64_t(doc["headline"]["step_time"]["a_ns"]) == 10000);
  CHECK(int64_t(doc["headline"]["exposed_communication"]["b_ns"]) == 1900);
  CHECK(double(doc["headline"]["exposed_communication"]["error_pct"]) == Approx(-24.0));
  CHECK(std::string_view(doc["by"]) == "kernel");
  CHECK(int64_t(doc["total_rows"]) == 4);
  simdjson::dom::array rows = doc["rows"];
  REQUIRE(rows.size() == 4);
  CHECK(std::string_view(rows.at(0)["kernel"]) == "ag_kernel");
  CHECK(int64_t(rows.at(0)["delta_ns"]) == -1000);
  CHECK(std::string_view(rows.at(1)["kernel"]) == "softmax");
  CHECK(rows.at(1)["error_pct"].is_null());  // A has no softmax

  auto m = run_cli({"diff", f.a, f.b, "--format", "json"});
  REQUIRE(m.exit_code == 0);
  simdjson::dom::parser parser2;
  simdjson::dom::array mrows = parser2.parse(m.out)["rows"];
  REQUIRE(mrows.size() == 5);
  CHECK(std::string_view(mrows.at(0)["module"]) == "layers.0");
  CHECK(std::string_view(mrows.at(0)["phase"]) == "forward");
  CHECK(int64_t(mrows.at(0)["first_a_ns"]) == 1000);
  CHECK(int64_t(mrows.at(0)["first_b_ns"]) == 500);
  CHECK(mrows.at(4)["first_a_ns"].is_null());  // layers.1 exists on B only
}

TEST_CASE("diff exits 2 on bad input and 1 on usage errors", "[compare][cli]") {
  Files f;
  auto r = run_cli({"diff", f.a, f.dir.file("missing.ssdb")});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("missing.ssdb"));
  CHECK(r.out.empty());
  test::write_file(f.dir.file("t.json"), "{}");
  r = run_cli({"diff", f.dir.file("t.json"), f.b});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("not a SQLite database"));
  r = run_cli({"diff", f.a, f.b, "--step-a", "7"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("profile A") && Contains("no step 7") && Contains("its steps: 0, 1"));
  CHECK(r.out.empty());
  r = run_cli({"diff", f.a, f.b, "--rank", "1"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("no rank 1"));
  CHECK(run_cli({"diff", f.a}).exit_code == 1);
  CHECK(run_cli({"diff", f.a, f.b, "--by", "layer"}).exit_code == 1);
  CHECK(run_cli({"diff", f.a, f.b, "--step-a", "x"}).exit_code == 1);
  CHECK(run_cli({"diff", f.a, f.b, "--top", "-3"}).exit_code == 1);
  CHECK(run_cli({"diff", f.a, f.b, "--save", f.dir.file("w.sscw")}).exit_code == 1);  // needs --name
  auto h = run_cli({"diff", "--help"});
  CHECK(h.exit_code == 0);
  CHECK_THAT(h.out, Contains("Usage: shardscope diff"));
}

TEST_CASE("diff --save and --open round-trip a comparison", "[compare][cli][workspace]") {
  Files f;
  const auto ws = f.dir.file("w.sscw");
  auto direct = run_cli({"diff", f.a, f.b, "--step-a", "1", "--rank", "0", "--format", "json"});
  REQUIRE(direct.exit_code == 0);
  auto save = run_cli({"diff", f.a, f.b, "--step-a", "1", "--format", "json", "--save", ws, "--name", "ab", "--notes",
                       "first look"});
  REQUIRE(save.exit_code == 0);
  CHECK(save.out == direct.out);
  CHECK_THAT(save.err, Contains("saved comparison 'ab'"));
  auto reopened = run_cli({"diff", "--open", ws, "--name", "ab", "--format", "json"});
  REQUIRE(reopened.exit_code == 0);
  CHECK(reopened.out == direct.out);
  CHECK(run_cli({"diff", "--open", ws, "--name", "ab", "--step-a", "0"}).exit_code == 1);
  auto list = run_cli({"diff", "--open", ws});
  CHECK(list.exit_code == 0);
  CHECK_THAT(list.out, Contains("ab\n") && Contains("notes: first look") && Contains("b.ssdb"));

  test::write_profile_flat(f.b);  // replace B by a different profile
  auto changed = run_cli({"diff", "--open", ws, "--name", "ab"});
  CHECK(changed.exit_code == 2);
  CHECK_THAT(changed.err, Contains("changed since it was saved"));
  CHECK(changed.out.empty());
  CHECK(run_cli({"diff", "--open", ws, "--name", "nope"}).exit_code == 2);
  CHECK(run_cli({"diff", "--open", f.a}).exit_code == 2);  // a profile is not a workspace
}
