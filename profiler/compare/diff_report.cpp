#include "profiler/compare/diff_report.h"

#include <cstdio>
#include <string>
#include <vector>

#include "storage/json_writer.h"
#include "storage/units.h"

namespace ss::compare {
namespace {

std::string pct_text(const Measure& m) {
  auto e = m.error_pct();
  if (!e) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.2f%%", *e);
  return buf;
}

std::string pct_csv(const Measure& m) {
  auto e = m.error_pct();
  if (!e) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", *e);
  return buf;
}

std::string signed_duration(TimeNs d) { return (d > 0 ? "+" : d < 0 ? "-" : "") + format_duration_ns(d < 0 ? -d : d); }

// RFC 4180 quoting: only when the field needs it.
std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

// One generic row of the chosen table, so the three formats share one loop.
struct Row {
  std::vector<std::string> key;  // key columns, as text
  std::int64_t count_a = 0, count_b = 0;
  Measure time;
  bool bytes_key = false;
  std::int64_t bytes = 0;
  std::optional<TimeNs> first_a, first_b;  // modules: where the first range starts on each side
};

struct Table {
  std::vector<std::string> key_columns;
  std::vector<Row> rows;
};

Table build_table(const Comparison& c, DiffBy by) {
  Table t;
  switch (by) {
    case DiffBy::Module:
      t.key_columns = {"module", "phase"};
      for (const auto& m : c.modules)
        t.rows.push_back({{m.fqn.empty() ? "(root)" : m.fqn, std::string(to_string(m.phase))}, m.count_a, m.count_b,
                          m.time, false, 0, m.first_a, m.first_b});
      break;
    case DiffBy::Kernel:
      t.key_columns = {"kernel"};
      for (const auto& k : c.kernels) t.rows.push_back({{k.name}, k.count_a, k.count_b, k.time, false, 0, {}, {}});
      break;
    case DiffBy::Collective:
      t.key_columns = {"type", "process_group", "bytes"};
      for (const auto& k : c.collectives)
        t.rows.push_back({{std::string(to_string(k.type)), k.process_group, std::to_string(k.bytes)}, k.count_a, k.count_b,
                          k.time, true, k.bytes, {}, {}});
      break;
  }
  return t;
}

std::string window_text(const Window& w) {
  return (w.step ? "step " + std::to_string(*w.step) : std::string("whole span")) + " [" + std::to_string(w.start) +
         ", " + std::to_string(w.end) + ") ns on rank " + std::to_string(w.rank);
}

struct HeadlineRow {
  const char* name;
  const Measure* m;
};

std::vector<HeadlineRow> headline_rows(const Headline& h) {
  return {{"step_time", &h.step_time},
          {"exposed_communication", &h.exposed_communication},
          {"communication", &h.communication},
          {"compute", &h.compute}};
}

std::string shorten(const std::string& s, std::size_t max) {
  return s.size() <= max ? s : s.substr(0, max - 3) + "...";
}

void write_table(std::ostream& o, const Comparison& c, const Table& t, std::size_t top) {
  o << "A: " << c.path_a << "\n   " << window_text(c.alignment.a) << "\n";
  o << "B: " << c.path_b << "\n   " << window_text(c.alignment.b) << "\n";
  o << "Aligned at " << c.alignment.description << "\n\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-24s %14s %14s %14s %10s\n", "", "A", "B", "delta", "error");
  o << line;
  for (const auto& h : headline_rows(c.headline)) {
    std::snprintf(line, sizeof line, "%-24s %14s %14s %14s %10s\n", h.name, format_duration_ns(h.m->a).c_str(),
                  format_duration_ns(h.m->b).c_str(), signed_duration(h.m->delta()).c_str(), pct_text(*h.m).c_str());
    o << line;
  }
  o << "\n";
  if (t.rows.empty()) {
    o << "(no rows: neither side has " << (t.key_columns[0] == "module" ? "module ranges" : t.key_columns[0] + "s")
      << " in the window)\n";
    return;
  }
  const std::size_t n = top == 0 ? t.rows.size() : std::min(top, t.rows.size());
  // Each key column is as wide as its longest shown value (names cut at 100 characters).
  const std::size_t columns = t.key_columns.size();
  std::vector<std::vector<std::string>> keys(n, std::vector<std::string>(columns));
  std::vector<std::size_t> width(columns);
  for (std::size_t j = 0; j < columns; ++j) width[j] = t.key_columns[j].size();
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < columns; ++j) {
      keys[i][j] = shorten(t.rows[i].bytes_key && j == 2 ? format_bytes(t.rows[i].bytes) : t.rows[i].key[j], 100);
      width[j] = std::max(width[j], keys[i][j].size());
    }
  }
  auto key_cells = [&](const std::vector<std::string>& cells) {
    std::string k;
    for (std::size_t j = 0; j < columns; ++j) {
      k += cells[j];
      if (j + 1 < columns) k += std::string(width[j] - cells[j].size() + 2, ' ');
    }
    return k;
  };
  std::size_t key_width = 0;
  for (std::size_t j = 0; j < columns; ++j) key_width += width[j] + (j + 1 < columns ? 2 : 0);
  const int w = static_cast<int>(key_width);
  std::snprintf(line, sizeof line, "%-*s %8s %8s %14s %14s %14s %10s\n", w, key_cells(t.key_columns).c_str(), "count A",
                "count B", "time A", "time B", "delta", "error");
  o << line;
  for (std::size_t i = 0; i < n; ++i) {
    const Row& r = t.rows[i];
    std::snprintf(line, sizeof line, "%-*s %8lld %8lld %14s %14s %14s %10s\n", w, key_cells(keys[i]).c_str(),
                  static_cast<long long>(r.count_a), static_cast<long long>(r.count_b),
                  format_duration_ns(r.time.a).c_str(), format_duration_ns(r.time.b).c_str(),
                  signed_duration(r.time.delta()).c_str(), pct_text(r.time).c_str());
    o << line;
  }
  if (n < t.rows.size()) o << "(" << n << " of " << t.rows.size() << " rows; --top 0 shows all)\n";
}

void write_csv(std::ostream& o, const Comparison& c, const Table& t, std::size_t top) {
  o << "# a=" << c.path_a << "\n# b=" << c.path_b << "\n# aligned=" << c.alignment.description << "\n";
  o << "# metric,a_ns,b_ns,delta_ns,error_pct\n";
  for (const auto& h : headline_rows(c.headline))
    o << "# " << h.name << "," << h.m->a << "," << h.m->b << "," << h.m->delta() << "," << pct_csv(*h.m) << "\n";
  for (const auto& col : t.key_columns) o << col << ",";
  o << "count_a,count_b,time_a_ns,time_b_ns,delta_ns,error_pct\n";
  const std::size_t n = top == 0 ? t.rows.size() : std::min(top, t.rows.size());
  for (std::size_t i = 0; i < n; ++i) {
    const Row& r = t.rows[i];
    for (const auto& k : r.key) o << csv_field(k) << ",";
    o << r.count_a << "," << r.count_b << "," << r.time.a << "," << r.time.b << "," << r.time.delta() << ","
      << pct_csv(r.time) << "\n";
  }
}

void json_measure(JsonWriter& j, const Measure& m) {
  j.kv("a_ns", m.a).kv("b_ns", m.b).kv("delta_ns", m.delta());
  j.key("error_pct");
  if (auto e = m.error_pct())
    j.value(*e);
  else
    j.null();
}

void json_window(JsonWriter& j, const std::string& path, const Window& w) {
  j.begin_object().kv("path", path).kv("rank", w.rank);
  j.key("step");
  if (w.step)
    j.value(*w.step);
  else
    j.null();
  j.kv("start_ns", w.start).kv("end_ns", w.end).end_object();
}

void write_json(std::ostream& o, const Comparison& c, const Table& t, DiffBy by, std::size_t top) {
  JsonWriter j(o);
  j.begin_object();
  j.key("a");
  json_window(j, c.path_a, c.alignment.a);
  j.key("b");
  json_window(j, c.path_b, c.alignment.b);
  j.kv("aligned", c.alignment.description).kv("b_to_a_offset_ns", c.alignment.b_to_a_offset());
  j.key("headline").begin_object();
  for (const auto& h : headline_rows(c.headline)) {
    j.key(h.name).begin_object();
    json_measure(j, *h.m);
    j.end_object();
  }
  j.end_object();
  j.kv("by", by == DiffBy::Module ? "module" : by == DiffBy::Kernel ? "kernel" : "collective");
  j.kv("total_rows", static_cast<std::int64_t>(t.rows.size()));
  j.key("rows").begin_array();
  const std::size_t n = top == 0 ? t.rows.size() : std::min(top, t.rows.size());
  for (std::size_t i = 0; i < n; ++i) {
    const Row& r = t.rows[i];
    j.begin_object();
    for (std::size_t k = 0; k < t.key_columns.size(); ++k) {
      if (r.bytes_key && k == 2)
        j.kv(t.key_columns[k], r.bytes);
      else
        j.kv(t.key_columns[k], r.key[k]);
    }
    j.kv("count_a", r.count_a).kv("count_b", r.count_b);
    j.kv("time_a_ns", r.time.a).kv("time_b_ns", r.time.b).kv("delta_ns", r.time.delta());
    j.key("error_pct");
    if (auto e = r.time.error_pct())
      j.value(*e);
    else
      j.null();
    if (by == DiffBy::Module) {
      j.key("first_a_ns");
      r.first_a ? j.value(*r.first_a) : j.null();
      j.key("first_b_ns");
      r.first_b ? j.value(*r.first_b) : j.null();
    }
    j.end_object();
  }
  j.end_array();
  j.end_object();
  o << "\n";
}

}  // namespace

std::optional<DiffBy> diff_by_from_string(std::string_view s) {
  if (s == "module") return DiffBy::Module;
  if (s == "kernel") return DiffBy::Kernel;
  if (s == "collective") return DiffBy::Collective;
  return std::nullopt;
}

std::optional<DiffFormat> diff_format_from_string(std::string_view s) {
  if (s == "table") return DiffFormat::Table;
  if (s == "csv") return DiffFormat::Csv;
  if (s == "json") return DiffFormat::Json;
  return std::nullopt;
}

void write_report(std::ostream& out, const Comparison& c, const ReportOptions& options) {
  const Table t = build_table(c, options.by);
  switch (options.format) {
    case DiffFormat::Table: write_table(out, c, t, options.top); break;
    case DiffFormat::Csv: write_csv(out, c, t, options.top); break;
    case DiffFormat::Json: write_json(out, c, t, options.by, options.top); break;
  }
}

}  // namespace ss::compare
