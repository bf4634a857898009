// Each reader error is triggered by a real bad file, and its message says what is wrong.
#include <catch2/catch.hpp>

#include <filesystem>

#include "profiler/synthetic/synthetic_profile.h"
#include "storage/profile_reader.h"
#include "storage/profile_summary.h"
#include "storage/sqlite_handle.h"
#include "tests/support/test_paths.h"

using namespace ss;
using Catch::Matchers::Contains;

namespace {

// `whole_file`: the error is about the file or its schema, so `info` (which aggregates with SQL and
// does not scan every row) must reject it too; row-level errors are found by the full load.
ProfileErrorKind load_error(const std::string& path, std::string* message = nullptr, bool whole_file = true) {
  try {
    load_profile(path);
  } catch (const ProfileError& e) {
    if (message) *message = e.what();
    if (!whole_file) return e.kind();
    try {
      summarize_profile(path);
      FAIL("summarize_profile accepted a file that load_profile rejected: " << path);
    } catch (const ProfileError& e2) {
      CHECK(e2.kind() == e.kind());
    }
    return e.kind();
  }
  FAIL("expected an error loading " << path);
  return ProfileErrorKind::Sql;
}

std::string small_profile(const test::TempDir& dir, const std::string& name = "p.ssdb") {
  SyntheticSpec spec;
  spec.ranks = 2;
  spec.layers = 2;
  spec.steps = 1;
  auto path = dir.file(name);
  write_synthetic_profile(path, spec);
  return path;
}

void mutate(const std::string& path, const std::string& sql) {
  sql::Db db(path, SQLITE_OPEN_READWRITE);
  db.exec(sql);
}

}  // namespace

TEST_CASE("missing file and directory are I/O errors", "[storage][errors]") {
  test::TempDir dir;
  std::string msg;
  CHECK(load_error(dir.file("nope.ssdb"), &msg) == ProfileErrorKind::Io);
  CHECK_THAT(msg, Contains("nope.ssdb") && Contains("No such file"));
  CHECK(load_error(dir.path(), &msg) == ProfileErrorKind::Io);
  CHECK_THAT(msg, Contains("directory"));
}

TEST_CASE("a file that is not SQLite", "[storage][errors]") {
  test::TempDir dir;
  std::string msg;
  test::write_file(dir.file("trace.json"), R"({"traceEvents": []})");
  CHECK(load_error(dir.file("trace.json"), &msg) == ProfileErrorKind::NotSqlite);
  CHECK_THAT(msg, Contains("trace.json") && Contains("not a SQLite database") && Contains("shardscope import"));
  test::write_file(dir.file("empty.ssdb"), "");
  CHECK(load_error(dir.file("empty.ssdb"), &msg) == ProfileErrorKind::NotSqlite);
  CHECK_THAT(msg, Contains("empty"));
}

TEST_CASE("a SQLite file that is not a ShardScope profile", "[storage][errors]") {
  test::TempDir dir;
  std::string msg;
  {
    sql::Db db(dir.file("other.db"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    db.exec("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT); INSERT INTO StringIds VALUES (1, 'x')");
  }
  CHECK(load_error(dir.file("other.db"), &msg) == ProfileErrorKind::NotProfile);
  CHECK_THAT(msg, Contains("not a ShardScope profile") && Contains("StringIds"));

  auto path = small_profile(dir);
  mutate(path, "UPDATE meta SET value = 'something-else' WHERE key = 'format'");
  CHECK(load_error(path, &msg) == ProfileErrorKind::NotProfile);
  CHECK_THAT(msg, Contains("something-else"));
}

TEST_CASE("a profile from a newer ShardScope", "[storage][errors]") {
  test::TempDir dir;
  std::string msg;
  auto path = small_profile(dir);
  mutate(path, "UPDATE meta SET value = '2' WHERE key = 'schema_version'");
  CHECK(load_error(path, &msg) == ProfileErrorKind::NewerVersion);
  CHECK_THAT(msg, Contains("version 2") && Contains("update ShardScope"));
}

TEST_CASE("a missing or malformed table", "[storage][errors]") {
  test::TempDir dir;
  std::string msg;
  auto a = small_profile(dir, "a.ssdb");
  mutate(a, "DROP VIEW kernel_view; DROP TABLE kernels");
  CHECK(load_error(a, &msg) == ProfileErrorKind::MissingTable);
  CHECK_THAT(msg, Contains("'kernels' is missing"));

  auto b = small_profile(dir, "b.ssdb");
  mutate(b, "DROP VIEW kernel_view; ALTER TABLE kernels DROP COLUMN duration_ns");
  CHECK(load_error(b, &msg) == ProfileErrorKind::MalformedTable);
  CHECK_THAT(msg, Contains("'kernels' has no column 'duration_ns'"));

  auto c = small_profile(dir, "c.ssdb");
  mutate(c, "UPDATE kernels SET duration_ns = -5 WHERE id = 3");
  CHECK(load_error(c, &msg, false) == ProfileErrorKind::MalformedTable);
  CHECK_THAT(msg, Contains("row id 3") && Contains("negative duration"));

  auto d = small_profile(dir, "d.ssdb");
  mutate(d, "UPDATE kernels SET start_ns = 'soon' WHERE id = 4");
  CHECK(load_error(d, &msg, false) == ProfileErrorKind::MalformedTable);
  CHECK_THAT(msg, Contains("row id 4") && Contains("non-integer"));

  auto e = small_profile(dir, "e.ssdb");
  mutate(e, "UPDATE kernels SET stream_id = 999 WHERE id = 2");
  CHECK(load_error(e, &msg, false) == ProfileErrorKind::MalformedTable);
  CHECK_THAT(msg, Contains("stream id 999"));

  auto f = small_profile(dir, "f.ssdb");
  mutate(f, "UPDATE modules SET parent_id = 3 WHERE id = 1");  // 1 -> 3 -> 1: a cycle
  mutate(f, "UPDATE modules SET parent_id = 1 WHERE id = 3");
  CHECK(load_error(f, &msg, false) == ProfileErrorKind::MalformedTable);
  CHECK_THAT(msg, Contains("cycle"));

  auto g = small_profile(dir, "g.ssdb");
  mutate(g, "UPDATE kernels SET name_id = 123456 WHERE id = 1");
  CHECK(load_error(g, &msg, false) == ProfileErrorKind::MalformedTable);
  CHECK_THAT(msg, Contains("string id 123456"));
}

TEST_CASE("values beyond the bounds every reader's arithmetic relies on", "[storage][errors]") {
  // storage/value_bounds.h: times within +-2^61 ns, bytes within +-2^50, a table's durations or
  // bytes adding up to at most 2^62. Each of these once overflowed int64 somewhere downstream (an
  // event's end, `info`'s span, a running memory sum) under UBSan; now the load says which row.
  test::TempDir dir;
  struct Case {
    const char* edit;
    const char* says;
  };
  const Case cases[] = {
      {"UPDATE kernels SET start_ns = 9223372036854775000 WHERE id = 5", "row id 5 has start 9223372036854775000"},
      {"UPDATE kernels SET start_ns = -4611686018427387904 WHERE id = 5", "beyond 2^61 ns"},
      {"UPDATE kernels SET duration_ns = 9223372036854775807 WHERE id = 6", "row id 6"},
      // Each within the bound, together beyond 2^62: a sum of durations (per kernel name, per
      // module) would overflow.
      {"UPDATE kernels SET duration_ns = 2305843009213693952, start_ns = 0", "durations add up to more than 2^62"},
      {"UPDATE ranges SET duration_ns = 4611686018427387904 WHERE id = 2", "table 'ranges' row id 2"},
      {"UPDATE steps SET start_ns = -9223372036854775807", "table 'steps'"},
      {"UPDATE collectives SET bytes = 2251799813685248 WHERE id = 1", "table 'collectives' row id 1 has bytes"},
      {"UPDATE memory_events SET bytes = 9223372036854775807 WHERE id = 3", "table 'memory_events' row id 3 has bytes"},
      {"UPDATE memory_events SET time_ns = -9223372036854775807 WHERE id = 4", "row id 4 has a time beyond"},
      {"UPDATE modules SET param_count = 9223372036854775807 WHERE id = 2", "table 'modules' row id 2 has param_count"},
      {"UPDATE ranks SET clock_offset_ns = 9223372036854775807 WHERE rank = 1", "rank 1 has a clock offset"},
  };
  int n = 0;
  for (const auto& c : cases) {
    INFO(c.edit);
    const auto path = small_profile(dir, "v" + std::to_string(++n) + ".ssdb");
    mutate(path, c.edit);
    std::string msg;
    CHECK(load_error(path, &msg, false) == ProfileErrorKind::MalformedTable);
    CHECK_THAT(msg, Contains(c.says) && Contains(path));
  }
  // The memory sums will overflow only with more events than the small profile has at 2^50 each.
  const auto mem = small_profile(dir, "mem.ssdb");
  mutate(mem, "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 4100) "
              "INSERT INTO memory_events (rank, time_ns, address, bytes, category) "
              "SELECT 0, 1000 + i, i, 1125899906842624, 5 FROM k");
  std::string msg;
  CHECK(load_error(mem, &msg, false) == ProfileErrorKind::MalformedTable);
  CHECK_THAT(msg, Contains("adds up to more than 2^62"));
  // `info` reads memory and its span with SQL, not through the load: it refuses these too.
  for (const auto& [path, says] : {std::pair<std::string, const char*>{mem, "adds up to more than 2^62 bytes"},
                                   {dir.file("v1.ssdb"), "beyond 2^61 ns"}}) {
    INFO(path);
    try {
      summarize_profile(path);
      FAIL("summarize_profile accepted " << path);
    } catch (const ProfileError& e) {
      CHECK(e.kind() == ProfileErrorKind::MalformedTable);
      CHECK_THAT(e.what(), Contains(says));
    }
  }
}

TEST_CASE("a truncated file", "[storage][errors]") {
  test::TempDir dir;
  std::string msg;
  auto path = small_profile(dir);
  const std::string bytes = test::read_file(path);
  REQUIRE(bytes.size() > 3 * 65536);
  test::write_file(dir.file("cut.ssdb"), bytes.substr(0, bytes.size() / 2));
  CHECK(load_error(dir.file("cut.ssdb"), &msg) == ProfileErrorKind::Truncated);
  CHECK_THAT(msg, Contains("truncated") && Contains("header says"));
  test::write_file(dir.file("cut-header.ssdb"), bytes.substr(0, 60));
  CHECK(load_error(dir.file("cut-header.ssdb"), &msg) == ProfileErrorKind::Truncated);
}

TEST_CASE("corrupted pages are reported, not crashed on", "[storage][errors]") {
  test::TempDir dir;
  auto path = small_profile(dir);
  std::string bytes = test::read_file(path);
  // Keep page 1 (header and schema) and overwrite every other page with garbage: the schema
  // still validates, but every table's b-tree pages are invalid.
  for (std::size_t i = 65536; i < bytes.size(); ++i) bytes[i] = static_cast<char>(0xA5 ^ (i * 7));
  test::write_file(dir.file("corrupt.ssdb"), bytes);
  std::string msg;
  const auto kind = load_error(dir.file("corrupt.ssdb"), &msg);
  CHECK(kind == ProfileErrorKind::Corrupt);
  CHECK_THAT(msg, Contains("corrupt.ssdb"));
}

// `launches` was added after schema version 1 shipped: a file written before it (the bundled
// sample, users' recordings) must still load, and a present-but-broken table is still an error.
TEST_CASE("a profile without the optional launches table still loads", "[storage][errors]") {
  test::TempDir dir;
  auto a = small_profile(dir, "old.ssdb");
  mutate(a, "DROP VIEW launch_view; DROP TABLE launches");
  const Profile p = load_profile(a);
  CHECK(p.kernel_count > 0);
  CHECK(summarize_profile(a).kernels > 0);

  std::string msg;
  auto b = small_profile(dir, "broken.ssdb");
  mutate(b, "DROP VIEW launch_view; ALTER TABLE launches DROP COLUMN start_ns");
  CHECK(load_error(b, &msg) == ProfileErrorKind::MalformedTable);
  CHECK_THAT(msg, Contains("'launches' has no column 'start_ns'"));
}
