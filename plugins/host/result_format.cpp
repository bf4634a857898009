#include "plugins/host/result_format.h"

#include <algorithm>
#include <sstream>

#include "storage/json_writer.h"
#include "storage/units.h"

namespace ss::plugins {
namespace {

std::string cell_text(const SqlValue& v) {
  if (std::holds_alternative<std::monostate>(v)) return "";
  if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) {
    std::ostringstream o;
    o.setf(std::ios::fixed);
    o.precision(2);
    o << *d;
    return o.str();
  }
  return std::get<std::string>(v);
}

void json_value(JsonWriter& j, const SqlValue& v) {
  if (std::holds_alternative<std::monostate>(v)) j.null();
  else if (const auto* i = std::get_if<std::int64_t>(&v)) j.value(*i);
  else if (const auto* d = std::get_if<double>(&v)) j.value(*d);
  else j.value(std::get<std::string>(v));
}

constexpr std::size_t kMaxCell = 70;

}  // namespace

void write_result_text(const AnalysisResult& r, std::ostream& out) {
  for (const auto& t : r.tables) {
    out << "== " << t.name << " (" << t.rows.size() << " row" << (t.rows.size() == 1 ? "" : "s") << ")\n";
    std::vector<std::size_t> width(t.columns.size());
    std::vector<std::vector<std::string>> cells;
    for (std::size_t i = 0; i < t.columns.size(); ++i) width[i] = t.columns[i].size();
    for (const auto& row : t.rows) {
      std::vector<std::string> c;
      for (std::size_t i = 0; i < row.size(); ++i) {
        std::string s = cell_text(row[i]);
        if (s.size() > kMaxCell) s = s.substr(0, kMaxCell - 3) + "...";
        width[i] = std::max(width[i], s.size());
        c.push_back(std::move(s));
      }
      cells.push_back(std::move(c));
    }
    auto line = [&](const std::vector<std::string>& c) {
      for (std::size_t i = 0; i < c.size(); ++i) {
        const bool numeric = !t.rows.empty() && (std::holds_alternative<std::int64_t>(t.rows[0][i]) ||
                                                 std::holds_alternative<double>(t.rows[0][i]));
        std::string pad(width[i] - std::min(width[i], c[i].size()), ' ');
        out << (i ? "  " : "") << (numeric ? pad + c[i] : c[i] + (i + 1 < c.size() ? pad : ""));
      }
      out << "\n";
    };
    line(t.columns);
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
      if (f.range) out << (f.rank >= 0 ? ", " : " (") << f.range->first << ".." << f.range->second << " ns";
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

void write_result_json(const AnalysisResult& r, std::ostream& out) {
  JsonWriter j(out);
  j.begin_object();
  j.kv("analysis", r.analysis).kv("ok", r.ok);
  if (!r.ok) j.kv("error", r.error);
  j.key("tables").begin_array();
  for (const auto& t : r.tables) {
    j.begin_object().kv("name", t.name);
    j.key("columns").begin_array();
    for (const auto& c : t.columns) j.value(c);
    j.end_array();
    j.key("rows").begin_array();
    for (const auto& row : t.rows) {
      j.begin_array();
      for (const auto& v : row) json_value(j, v);
      j.end_array();
    }
    j.end_array().end_object();
  }
  j.end_array();
  j.key("findings").begin_array();
  for (const auto& f : r.findings) {
    j.begin_object().kv("severity", std::string(to_string(f.severity))).kv("message", f.message).kv("rank", f.rank);
    if (f.range) j.kv("start_ns", f.range->first).kv("end_ns", f.range->second);
    j.end_object();
  }
  j.end_array();
  j.key("markers").begin_array();
  for (const auto& m : r.markers)
    j.begin_object().kv("start_ns", m.start).kv("end_ns", m.end).kv("rank", m.rank).kv("label", m.label).end_object();
  j.end_array();
  j.key("counter_tracks").begin_array();
  for (const auto& c : r.counters) {
    j.begin_object().kv("name", c.name).kv("rank", c.rank).kv("unit", c.unit);
    j.key("points").begin_array();
    for (const auto& [t, v] : c.points) j.begin_array().value(t).value(v).end_array();
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
