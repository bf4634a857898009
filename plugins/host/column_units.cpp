#include "plugins/host/column_units.h"

#include <array>
#include <cstdio>
#include <optional>
#include <variant>

#include "storage/units.h"

namespace ss::plugins {
namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

constexpr std::array<std::string_view, 7> kTimestampColumns{"start_ns",       "end_ns",  "first_start_ns", "last_start_ns",
                                                            "from_ns",        "to_ns",   "t_ns"};

std::optional<double> number(const SqlValue& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  return std::nullopt;
}

std::string plain(const SqlValue& v) {
  if (std::holds_alternative<std::monostate>(v)) return "\u2014";  // "—": the analysis cannot say
  if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.2f", *d);
    return buf;
  }
  return std::get<std::string>(v);
}

}  // namespace

ColumnUnit column_unit(std::string_view c) {
  if (ends_with(c, "_time_ns")) return ColumnUnit::Timestamp;
  for (auto t : kTimestampColumns)
    if (c == t) return ColumnUnit::Timestamp;
  if (ends_with(c, "_ns")) return ColumnUnit::Duration;
  if (ends_with(c, "_bytes") || c == "bytes") return ColumnUnit::Bytes;
  if (ends_with(c, "_pct") || c.find("_pct_") != std::string_view::npos) return ColumnUnit::Percent;
  return ColumnUnit::Plain;
}

std::string column_title(std::string_view c) {
  std::string base(c);
  std::string suffix;
  for (std::string_view s : {"_time_ns", "_ns", "_bytes"})
    if (ends_with(c, s) && c.size() > s.size()) {
      base = std::string(c.substr(0, c.size() - s.size()));
      if (s == "_time_ns") base += "_time";
      break;
    }
  if (ends_with(c, "_pct") && c.size() > 4) {
    base = std::string(c.substr(0, c.size() - 4));
    suffix = " %";
  }
  for (auto& ch : base)
    if (ch == '_') ch = ' ';
  // "peak pct of capacity" -> "peak % of capacity"
  for (std::size_t at = base.find(" pct "); at != std::string::npos; at = base.find(" pct ")) base.replace(at, 5, " % ");
  return base + suffix;
}

std::string format_cell(const SqlValue& v, ColumnUnit unit, TimeNs profile_begin) {
  const auto n = number(v);
  if (!n || unit == ColumnUnit::Plain) return plain(v);
  const auto i = static_cast<std::int64_t>(*n);
  switch (unit) {
    case ColumnUnit::Timestamp: return format_duration_ns(i - profile_begin);
    case ColumnUnit::Duration: return format_duration_ns(i);
    case ColumnUnit::Bytes: return format_bytes(i);
    case ColumnUnit::Percent: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1f %%", *n);
      return buf;
    }
    case ColumnUnit::Plain: break;
  }
  return plain(v);
}

std::string exact_cell(const SqlValue& v, ColumnUnit unit, TimeNs profile_begin) {
  const auto n = number(v);
  if (!n || unit == ColumnUnit::Plain || unit == ColumnUnit::Percent) return plain(v);
  const auto i = static_cast<std::int64_t>(*n);
  switch (unit) {
    case ColumnUnit::Timestamp: return std::to_string(i - profile_begin) + " ns since the profile's start";
    case ColumnUnit::Duration: return std::to_string(i) + " ns";
    case ColumnUnit::Bytes: return std::to_string(i) + " bytes";
    default: return plain(v);
  }
}

}  // namespace ss::plugins
