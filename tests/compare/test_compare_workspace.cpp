// Saved comparisons: a workspace round trip, upsert by name, and clear errors for a missing or
// changed profile and for files that are not workspaces.
#include <catch2/catch.hpp>

#include <filesystem>

#include "profiler/compare/compare_error.h"
#include "profiler/compare/workspace.h"
#include "tests/compare/handmade_profiles.h"
#include "tests/support/test_paths.h"

using namespace ss;
using namespace ss::compare;
using Catch::Matchers::Contains;

namespace {

CompareErrorKind kind_of(const std::function<void()>& fn, std::string* message) {
  try {
    fn();
  } catch (const CompareError& e) {
    *message = e.what();
    return e.compare_kind();
  }
  FAIL("expected a CompareError");
  return CompareErrorKind::InvalidArgument;
}

}  // namespace

TEST_CASE("a saved comparison reopens exactly as saved", "[compare][workspace]") {
  test::TempDir dir;
  const auto a = test::write_profile_a(dir.file("a.ssdb"));
  const auto b = test::write_profile_b(dir.file("b.ssdb"));
  Alignment al;
  al.step_a = 1;
  al.step_b = 2;
  al.rank_a = 1;
  al.rank_b = 0;
  const std::string plan = R"({"unshard": ["layers.0"], "bucket_mb": {"default": 2000}})";
  SavedComparison saved = make_saved_comparison("before vs after", a, b, al, plan, "notes, with \"quotes\"\nand a newline");
  CHECK(saved.a.path == std::filesystem::absolute(a).lexically_normal().string());
  CHECK(saved.a.size_bytes == static_cast<std::int64_t>(std::filesystem::file_size(a)));
  CHECK(saved.a.fingerprint.size() == 16);
  CHECK(saved.a.fingerprint != saved.b.fingerprint);

  const auto ws_path = dir.file("work.sscw");
  std::int64_t id = 0;
  {
    Workspace ws(ws_path);
    id = ws.save(saved);
    SavedComparison other = make_saved_comparison("flat", a, a, {});
    ws.save(other);
  }
  Workspace ws(ws_path, Workspace::Mode::OpenExisting);
  const auto all = ws.list();
  REQUIRE(all.size() == 2);
  CHECK(all[0].name == "before vs after");  // listed by name
  CHECK(all[1].name == "flat");
  SavedComparison back = ws.get("before vs after");
  CHECK(back.id == id);
  CHECK_FALSE(back.created_utc.empty());
  // Everything the caller gave comes back unchanged.
  saved.id = back.id;
  saved.created_utc = back.created_utc;
  saved.updated_utc = back.updated_utc;
  CHECK(back == saved);
  CHECK_FALSE(ws.get("flat").alignment.step_a.has_value());
  CHECK_NOTHROW(verify_profiles(back));

  // Saving under the same name replaces the content, keeps the id.
  saved.notes = "second thoughts";
  saved.plan_json.clear();
  CHECK(ws.save(saved) == id);
  CHECK(ws.get("before vs after").notes == "second thoughts");
  CHECK(ws.get("before vs after").plan_json.empty());
  CHECK(ws.list().size() == 2);
  CHECK(ws.remove("flat"));
  CHECK_FALSE(ws.remove("flat"));
  CHECK(ws.list().size() == 1);
}

TEST_CASE("a changed or missing profile is detected when reopening", "[compare][workspace]") {
  test::TempDir dir;
  const auto a = test::write_profile_a(dir.file("a.ssdb"));
  const auto b = test::write_profile_b(dir.file("b.ssdb"));
  Workspace ws(dir.file("work.sscw"));
  ws.save(make_saved_comparison("ab", a, b, {}));
  std::string msg;

  // Rewriting the same content (fixed origin time) is not a change.
  test::write_profile_b(b);
  CHECK_NOTHROW(verify_profiles(ws.get("ab")));

  // A different profile under the same path is.
  test::write_profile_flat(b);
  CHECK(kind_of([&] { verify_profiles(ws.get("ab")); }, &msg) == CompareErrorKind::ProfileChanged);
  CHECK_THAT(msg, Contains("'ab'") && Contains("changed since it was saved") && Contains("b.ssdb") &&
                      Contains("side B"));
  std::string why;
  CHECK(check_profile(ws.get("ab").b, &why) == ProfileState::Changed);

  std::filesystem::remove(a);
  CHECK(kind_of([&] { verify_profiles(ws.get("ab")); }, &msg) == CompareErrorKind::ProfileMissing);
  CHECK_THAT(msg, Contains("no longer exists") && Contains("side A"));
  CHECK(kind_of([&] { make_saved_comparison("x", a, b, {}); }, &msg) == CompareErrorKind::ProfileMissing);
}

TEST_CASE("bad workspaces and bad saves give clear errors", "[compare][workspace]") {
  test::TempDir dir;
  const auto a = test::write_profile_a(dir.file("a.ssdb"));
  std::string msg;
  // A profile is not a workspace (and is not modified by the attempt).
  const std::string before = test::sha256_of_file(a);
  CHECK(kind_of([&] { Workspace ws(a); }, &msg) == CompareErrorKind::NotWorkspace);
  CHECK_THAT(msg, Contains("is a ShardScope profile"));
  CHECK(test::sha256_of_file(a) == before);
  test::write_file(dir.file("x.json"), "{\"not\": \"sqlite\"}");
  CHECK(kind_of([&] { Workspace ws(dir.file("x.json")); }, &msg) == CompareErrorKind::NotWorkspace);
  CHECK_THAT(msg, Contains("not a SQLite database"));
  CHECK(kind_of([&] { Workspace ws(dir.file("absent.sscw"), Workspace::Mode::OpenExisting); }, &msg) ==
        CompareErrorKind::NotWorkspace);
  CHECK_FALSE(std::filesystem::exists(dir.file("absent.sscw")));

  Workspace ws(dir.file("w.sscw"));
  CHECK(kind_of([&] { ws.get("nothing"); }, &msg) == CompareErrorKind::NoSuchComparison);
  CHECK_THAT(msg, Contains("no comparison named 'nothing'"));
  SavedComparison c = make_saved_comparison("p", a, a, {}, "{not json");
  CHECK(kind_of([&] { ws.save(c); }, &msg) == CompareErrorKind::InvalidArgument);
  CHECK_THAT(msg, Contains("not valid JSON"));
  c.plan_json.clear();
  c.name.clear();
  CHECK(kind_of([&] { ws.save(c); }, &msg) == CompareErrorKind::InvalidArgument);
  CHECK(ws.list().empty());
}
