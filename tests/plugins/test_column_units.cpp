// Column units of analysis results: the names the built-in analyses use map to the unit a reader
// expects, and cells format on the profile's time base (issue 13: raw `idle_ns 1582714`).
#include <catch2/catch.hpp>

#include "plugins/host/column_units.h"

using namespace ss;
using namespace ss::plugins;

TEST_CASE("column names give the unit of their values", "[plugins][units]") {
  CHECK(column_unit("peak_time_ns") == ColumnUnit::Timestamp);
  CHECK(column_unit("start_ns") == ColumnUnit::Timestamp);
  CHECK(column_unit("first_start_ns") == ColumnUnit::Timestamp);
  CHECK(column_unit("idle_ns") == ColumnUnit::Duration);
  CHECK(column_unit("window_ns") == ColumnUnit::Duration);
  CHECK(column_unit("peak_bytes") == ColumnUnit::Bytes);
  CHECK(column_unit("bytes") == ColumnUnit::Bytes);
  CHECK(column_unit("share_pct") == ColumnUnit::Percent);
  CHECK(column_unit("peak_pct_of_capacity") == ColumnUnit::Percent);
  CHECK(column_unit("rank") == ColumnUnit::Plain);
  CHECK(column_unit("name") == ColumnUnit::Plain);
}

TEST_CASE("column titles drop the unit suffix", "[plugins][units]") {
  CHECK(column_title("peak_time_ns") == "peak time");
  CHECK(column_title("idle_ns") == "idle");
  CHECK(column_title("peak_bytes") == "peak");
  CHECK(column_title("share_pct") == "share %");
  CHECK(column_title("peak_pct_of_capacity") == "peak % of capacity");
  CHECK(column_title("name") == "name");
  CHECK(column_title("bytes") == "bytes");
}

TEST_CASE("cells format on the profile's time base, exact values name their unit", "[plugins][units]") {
  const TimeNs begin = 1'000'000'000;
  CHECK(format_cell(SqlValue{std::int64_t{1'582'714}}, ColumnUnit::Duration, begin) == "1.583 ms");
  CHECK(format_cell(SqlValue{std::int64_t{2'281'766'912}}, ColumnUnit::Bytes, begin) == "2.13 GiB");
  CHECK(format_cell(SqlValue{std::int64_t{begin + 65'095'000}}, ColumnUnit::Timestamp, begin) == "65.095 ms");
  CHECK(format_cell(SqlValue{12.345}, ColumnUnit::Percent, begin) == "12.3 %");
  CHECK(format_cell(SqlValue{std::string("aten::mm")}, ColumnUnit::Plain, begin) == "aten::mm");
  CHECK(format_cell(SqlValue{}, ColumnUnit::Duration, begin) == "\u2014");  // NULL: the analysis cannot say
  CHECK(format_cell(SqlValue{}, ColumnUnit::Plain, begin) == "\u2014");
  CHECK(exact_cell(SqlValue{std::int64_t{2'281'766'912}}, ColumnUnit::Bytes, begin) == "2281766912 bytes");
  CHECK(exact_cell(SqlValue{std::int64_t{begin + 65'095'123}}, ColumnUnit::Timestamp, begin) ==
        "65095123 ns since the profile's start");
  CHECK(exact_cell(SqlValue{std::int64_t{1'582'714}}, ColumnUnit::Duration, begin) == "1582714 ns");
}
