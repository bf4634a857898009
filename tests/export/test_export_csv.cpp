#include <catch2/catch.hpp>

#include "profiler/export/export.h"
#include "profiler/synthetic/synthetic_profile.h"
#include "storage/profile_writer.h"
#include "storage/schema.h"
#include "storage/sqlite_handle.h"
#include "tests/import/import_test_util.h"
#include "tests/support/test_paths.h"

using namespace ss;
using namespace ss::test;

namespace {

// A strict RFC 4180 reader: records end with CRLF, quoted fields may hold anything.
std::vector<std::vector<std::string>> parse_csv(const std::string& s) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false, any = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char ch = s[i];
    if (quoted) {
      if (ch == '"' && i + 1 < s.size() && s[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        field += ch;
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      rows.back().push_back(field);
      field.clear();
    } else if (ch == '\r' && i + 1 < s.size() && s[i + 1] == '\n') {
      rows.back().push_back(field);
      field.clear();
      rows.emplace_back();
      ++i;
    } else {
      field += ch;
    }
    any = true;
  }
  if (rows.back().empty()) rows.pop_back();
  (void)any;
  return rows;
}

}  // namespace

TEST_CASE("RFC 4180 field quoting", "[export][csv]") {
  CHECK(exporting::csv_field("plain") == "plain");
  CHECK(exporting::csv_field("") == "");
  CHECK(exporting::csv_field("a,b") == "\"a,b\"");
  CHECK(exporting::csv_field("say \"hi\"") == "\"say \"\"hi\"\"\"");
  CHECK(exporting::csv_field("two\nlines") == "\"two\nlines\"");
  CHECK(exporting::csv_field("cr\r") == "\"cr\r\"");
}

TEST_CASE("CSV export writes one file per table with a header and every row", "[export][csv]") {
  TempDir dir;
  const std::string prof = dir.file("synth.ssdb");
  SyntheticSpec spec;
  spec.layers = 2;
  spec.steps = 1;
  write_synthetic_profile(prof, spec);
  const std::string out = dir.file("csv");
  const auto files = exporting::export_csv(prof, out);
  CHECK(files.size() == schema::tables().size());
  for (const auto& t : schema::tables()) {
    const std::string name(t.name);
    const auto rows = parse_csv(read_file(out + "/" + name + ".csv"));
    REQUIRE(!rows.empty());
    std::vector<std::string> header;
    for (const auto& c : t.columns) header.emplace_back(c.name);
    CHECK(rows.front() == header);
    INFO(name);
    CHECK(static_cast<std::int64_t>(rows.size()) - 1 == query_int(prof, "SELECT count(*) FROM " + name));
    for (const auto& r : rows) CHECK(r.size() == header.size());
  }
  // Kernel names with commas and angle brackets survive the round trip.
  const auto strings = parse_csv(read_file(out + "/strings.csv"));
  const auto names = query_column(prof, "SELECT value FROM strings ORDER BY id");
  REQUIRE(strings.size() == names.size() + 1);
  for (std::size_t i = 0; i < names.size(); ++i) CHECK(strings[i + 1][1] == names[i]);
}

TEST_CASE("CSV export of a profile written before the launches table gives its header only", "[export][csv]") {
  TempDir dir;
  const std::string prof = dir.file("old.ssdb");
  SyntheticSpec spec;
  spec.layers = 1;
  spec.steps = 1;
  write_synthetic_profile(prof, spec);
  {
    sql::Db db(prof, SQLITE_OPEN_READWRITE);
    db.exec("DROP VIEW launch_view; DROP TABLE launches");
  }
  const std::string out = dir.file("csv");
  const auto files = exporting::export_csv(prof, out);
  CHECK(files.size() == schema::tables().size());
  const auto rows = parse_csv(read_file(out + "/launches.csv"));
  REQUIRE(rows.size() == 1);
  CHECK(rows.front().front() == "id");
}

TEST_CASE("CSV export of a profile written before a column was added leaves that column's fields empty", "[export][csv]") {
  TempDir dir;
  const std::string prof = dir.file("old.ssdb");
  {
    ProfileWriter w(prof, Origin{});
    w.add_unobserved_step({0, 3, 1000, 5000}, 2);
    w.finish();
  }
  {
    sql::Db db(prof, SQLITE_OPEN_READWRITE);
    db.exec("ALTER TABLE unobserved_steps DROP COLUMN model_calls");
  }
  const std::string out = dir.file("csv");
  exporting::export_csv(prof, out);
  const auto rows = parse_csv(read_file(out + "/unobserved_steps.csv"));
  REQUIRE(rows.size() == 2);
  CHECK(rows[0] == std::vector<std::string>{"id", "rank", "number", "start_ns", "duration_ns", "model_calls"});
  CHECK(rows[1] == std::vector<std::string>{"1", "0", "3", "1000", "4000", ""});
}
