// The SQL console is read-only: writes, attaches, pragma changes and VACUUM INTO are refused and
// the file's bytes never change.
#include <catch2/catch.hpp>

#include <filesystem>

#include "profiler/synthetic/synthetic_profile.h"
#include "storage/readonly_query.h"
#include "tests/support/test_paths.h"

using namespace ss;
using Catch::Matchers::Contains;

namespace {

std::vector<std::vector<SqlValue>> run(const std::string& path, const std::string& q) {
  std::vector<std::vector<SqlValue>> rows;
  QueryCallbacks cb;
  cb.on_row = [&](const std::vector<SqlValue>& r) { rows.push_back(r); };
  run_readonly_query(path, q, cb);
  return rows;
}

}  // namespace

TEST_CASE("sql refuses every kind of write and leaves the file unchanged", "[storage][sql]") {
  test::TempDir dir;
  SyntheticSpec spec;
  spec.layers = 2;
  spec.steps = 1;
  const auto path = dir.file("p.ssdb");
  write_synthetic_profile(path, spec);
  const std::string before = test::sha256_of_file(path);
  const auto copy = dir.file("copy.ssdb");

  const std::vector<std::string> refused = {
      "DELETE FROM kernels",
      "UPDATE kernels SET duration_ns = 0",
      "INSERT INTO strings (id, value) VALUES (99999, 'x')",
      "DROP TABLE kernels",
      "CREATE TABLE evil (x)",
      "ALTER TABLE kernels ADD COLUMN evil",
      "ATTACH DATABASE '" + copy + "' AS other",
      "PRAGMA writable_schema = 1",
      "PRAGMA user_version = 7",
      "PRAGMA journal_mode = WAL",
      "VACUUM INTO '" + copy + "'",
      "VACUUM",
      "BEGIN; DELETE FROM kernels; COMMIT",
      "SELECT 1; DELETE FROM kernels",
      "CREATE TRIGGER t AFTER INSERT ON strings BEGIN DELETE FROM kernels; END",
      "REINDEX",
      "ANALYZE",
      "SELECT load_extension('/tmp/evil.so')",
  };
  for (const auto& q : refused) {
    INFO(q);
    try {
      run(path, q);
      FAIL("not refused: " << q);
    } catch (const ProfileError& e) {
      CHECK(e.kind() == ProfileErrorKind::Sql);
      CHECK_THAT(std::string(e.what()), Contains("read-only") || Contains("not authorized") || Contains("readonly") ||
                                            Contains("not allowed"));
    }
  }
  CHECK(test::sha256_of_file(path) == before);
  CHECK_FALSE(std::filesystem::exists(copy));
  // Nothing else appeared beside the profile (no journal, no copy).
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) files += e.path().filename() != "p.ssdb";
  CHECK(files == 0);
}

TEST_CASE("sql answers reads, views and introspection pragmas", "[storage][sql]") {
  test::TempDir dir;
  SyntheticSpec spec;
  spec.layers = 2;
  spec.steps = 1;
  spec.ranks = 2;
  const auto path = dir.file("p.ssdb");
  auto stats = write_synthetic_profile(path, spec);
  auto rows = run(path, "SELECT count(*) FROM kernels");
  REQUIRE(rows.size() == 1);
  CHECK(std::get<std::int64_t>(rows[0][0]) == stats.kernels);
  rows = run(path, "SELECT category, count(*) FROM kernel_view GROUP BY category ORDER BY category");
  REQUIRE(rows.size() == 3);
  CHECK(std::get<std::string>(rows[0][0]) == "collective");
  CHECK(std::get<std::int64_t>(rows[0][1]) == stats.collectives);
  rows = run(path, "PRAGMA table_info(kernels)");
  CHECK(rows.size() == 11);
  rows = run(path, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5) SELECT sum(i) FROM n");
  CHECK(std::get<std::int64_t>(rows[0][0]) == 15);
  rows = run(path, "SELECT NULL, 1.5, x'00ff'");
  CHECK(std::holds_alternative<std::monostate>(rows[0][0]));
  CHECK(std::get<double>(rows[0][1]) == 1.5);
  CHECK(std::get<std::string>(rows[0][2]) == "x'00ff'");
}

TEST_CASE("a runaway query stops at the time limit", "[storage][sql]") {
  test::TempDir dir;
  SyntheticSpec spec;
  spec.layers = 1;
  spec.steps = 1;
  const auto path = dir.file("p.ssdb");
  write_synthetic_profile(path, spec);
  QueryOptions o;
  o.timeout_seconds = 0.2;
  QueryCallbacks cb;
  try {
    run_readonly_query(path, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n", cb, o);
    FAIL("expected a timeout");
  } catch (const ProfileError& e) {
    CHECK_THAT(std::string(e.what()), Contains("time limit"));
  }
}
