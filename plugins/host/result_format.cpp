#include "plugins/host/result_format.h"

#include <algorithm>
#include <sstream>

#include "plugins/host/column_units.h"
#include "storage/json_writer.h"
#include "storage/units.h"

namespace ss::plugins {
namespace {

void json_value(JsonWriter& j, const SqlValue& v) {
  if (std::holds_alternative<std::monostate>(v)) j.null();
  else if (const auto* i = std::get_if<std::int64_t>(&v)) j.value(*i);
  else if (const auto* d = std::get_if<double>(&v)) j.value(*d);
  else j.value(std::get<std::string>(v));
}

// A timestamp cell moved to the time base (ns since the profile's start); other cells unchanged.
SqlValue rebased(const SqlValue& v, ColumnUnit unit, TimeNs begin) {
  if (unit != ColumnUnit::Timestamp) return v;
  if (const auto* i = std::get_if<std::int64_t>(&v)) return *i - begin;
  if (const auto* d = std::get_if<double>(&v)) return *d - static_cast<double>(begin);
  return v;
}

std::string since_start(TimeNs t, TimeNs begin) { return format_duration_ns(t - begin); }

constexpr std::size_t kMaxCell = 70;

}  // namespace

void write_result_text(const AnalysisResult& r, TimeNs profile_begin, std::ostream& out) {
  out << "(times are since the profile's start; durations, sizes and times rounded: --format json has exact values)\n\n";
  for (const auto& t : r.tables) {
    out << "== " << t.name << " (" << t.rows.size() << " row" << (t.rows.size() == 1 ? "" : "s") << ")\n";
    std::vector<ColumnUnit> units;
    std::vector<std::string> titles;
    for (const auto& c : t.columns) {
      units.push_back(column_unit(c));
      titles.push_back(column_title(c));
    }
    std::vector<std::size_t> width(t.columns.size());
    std::vector<std::vector<std::string>> cells;
    for (std::size_t i = 0; i < t.columns.size(); ++i) width[i] = titles[i].size();
    for (const auto& row : t.rows) {
      std::vector<std::string> c;
      for (std::size_t i = 0; i < row.size() && i < units.size(); ++i) {
        std::string s = format_cell(row[i], units[i], profile_begin);
        if (s.size() > kMaxCell) s = s.substr(0, kMaxCell - 3) + "...";
        width[i] = std::max(width[i], s.size());
        c.push_back(std::move(s));
      }
      cells.push_back(std::move(c));
    }
    auto numeric = [&](std::size_t i) {
      for (const auto& row : t.rows)
        if (i < row.size() && !std::holds_alternative<std::monostate>(row[i]))
          return std::holds_alternative<std::int64_t>(row[i]) || std::holds_alternative<double>(row[i]);
      return false;
    };
    auto line = [&](const std::vector<std::string>& c) {
      for (std::size_t i = 0; i < c.size(); ++i) {
        std::string pad(width[i] - std::min(width[i], c[i].size()), ' ');
        out << (i ? "  " : "") << (numeric(i) ? pad + c[i] : c[i] + (i + 1 < c.size() ? pad : ""));
      }
      out << "\n";
    };
    line(titles);
    for (std::size_t i = 0; i < width.size(); ++i) out << (i ? "  " : "") << std::string(width[i], '-');
    out << "\n";
    for (const auto& c : cells) line(c);
    out << "\n";
  }
  if (!r.findings.empty()) {
    out << "== findings\n";
    for (const auto& f : r.findings) {
      out << "  [" << to_string(f.severity) << "] " << f.message;
      if (f.rank >= 0) out << " (rank " << f.rank;
      if (f.range) {
        out << (f.rank >= 0 ? ", " : " (") << "at " << since_start(f.range->first, profile_begin);
        if (f.range->second != f.range->first) out << " .. " << since_start(f.range->second, profile_begin);
      }
      if (f.rank >= 0 || f.range) out << ")";
      out << "\n";
    }
    out << "\n";
  }
  if (!r.markers.empty()) out << r.markers.size() << " timeline marker" << (r.markers.size() == 1 ? "" : "s") << "\n";
  for (const auto& c : r.counters)
    out << "counter track '" << c.name << "' (rank " << c.rank << ", " << c.unit << "): " << c.points.size()
        << " points\n";
  for (const auto& l : r.log) out << "log: " << l << "\n";
}

void write_result_json(const AnalysisResult& r, TimeNs profile_begin, std::ostream& out) {
  JsonWriter j(out);
  j.begin_object();
  j.kv("analysis", r.analysis).kv("ok", r.ok);
  if (!r.ok) j.kv("error", r.error);
  // One time base for every timestamp below (timestamp columns, findings, markers, counter
  // points): ns since the profile's start, the timeline ruler's 0. Durations are plain ns.
  j.key("time_base").begin_object();
  j.kv("timestamps", "ns since the profile's start").kv("profile_start_ns", profile_begin);
  j.end_object();
  j.key("tables").begin_array();
  for (const auto& t : r.tables) {
    j.begin_object().kv("name", t.name);
    std::vector<ColumnUnit> units;
    j.key("columns").begin_array();
    for (const auto& c : t.columns) {
      j.value(c);
      units.push_back(column_unit(c));
    }
    j.end_array();
    j.key("rows").begin_array();
    for (const auto& row : t.rows) {
      j.begin_array();
      for (std::size_t i = 0; i < row.size(); ++i)
        json_value(j, rebased(row[i], i < units.size() ? units[i] : ColumnUnit::Plain, profile_begin));
      j.end_array();
    }
    j.end_array().end_object();
  }
  j.end_array();
  j.key("findings").begin_array();
  for (const auto& f : r.findings) {
    j.begin_object().kv("severity", std::string(to_string(f.severity))).kv("message", f.message).kv("rank", f.rank);
    if (f.range) j.kv("start_ns", f.range->first - profile_begin).kv("end_ns", f.range->second - profile_begin);
    j.end_object();
  }
  j.end_array();
  j.key("markers").begin_array();
  for (const auto& m : r.markers)
    j.begin_object()
        .kv("start_ns", m.start - profile_begin)
        .kv("end_ns", m.end - profile_begin)
        .kv("rank", m.rank)
        .kv("label", m.label)
        .end_object();
  j.end_array();
  j.key("counter_tracks").begin_array();
  for (const auto& c : r.counters) {
    j.begin_object().kv("name", c.name).kv("rank", c.rank).kv("unit", c.unit);
    j.key("points").begin_array();
    for (const auto& [t, v] : c.points) j.begin_array().value(t - profile_begin).value(v).end_array();
    j.end_array().end_object();
  }
  j.end_array();
  j.key("log").begin_array();
  for (const auto& l : r.log) j.value(l);
  j.end_array();
  j.end_object();
  out << "\n";
}

}  // namespace ss::plugins
