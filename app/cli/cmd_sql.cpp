// shardscope sql FILE QUERY [--format table|csv|json]
#include <iostream>
#include <sstream>

#include "app/cli/arg_parser.h"
#include "app/cli/command.h"
#include "storage/json_writer.h"
#include "storage/readonly_query.h"

namespace ss::cli {
namespace {

std::string to_text(const SqlValue& v) {
  if (std::holds_alternative<std::monostate>(v)) return "NULL";
  if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) {
    std::ostringstream o;
    o.precision(15);
    o << *d;
    return o.str();
  }
  return std::get<std::string>(v);
}

std::string csv_field(const SqlValue& v) {
  if (std::holds_alternative<std::monostate>(v)) return "";
  std::string s = to_text(v);
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

int cmd_sql(const std::vector<std::string>& args) {
  ArgParser p("sql", "Run SQL against a profile, read-only. Statements that write, attach databases or change pragmas\n"
                     "are refused and the file's bytes never change. Tables and views: docs/profile-format.md\n"
                     "(e.g. kernel_view, range_view, collective_view, memory_view).");
  p.positional("FILE", "a ShardScope profile (.ssdb)")
      .positional("QUERY", "one or more SQL statements")
      .option("format", "FMT", "output format", "table", 0, {"table", "csv", "json"})
      .option("timeout", "SECONDS", "stop a query that runs longer than this (0 = no limit)", "0");
  if (!p.parse(args)) return kExitOk;
  const std::string format = p.get("format");
  QueryOptions qo;
  qo.timeout_seconds = p.get_double("timeout");

  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> table_rows;  // table format needs widths first
  std::ostringstream json_buf;
  JsonWriter json(json_buf, false);
  bool json_open = false;
  QueryCallbacks cb;
  cb.on_columns = [&](const std::vector<std::string>& cols) {
    columns = cols;
    if (format == "csv") {
      for (std::size_t i = 0; i < cols.size(); ++i) std::cout << (i ? "," : "") << csv_field(cols[i]);
      std::cout << "\n";
    } else if (format == "json" && !json_open) {
      json.begin_array();
      json_open = true;
    }
  };
  cb.on_row = [&](const std::vector<SqlValue>& row) {
    if (format == "csv") {
      for (std::size_t i = 0; i < row.size(); ++i) std::cout << (i ? "," : "") << csv_field(row[i]);
      std::cout << "\n";
    } else if (format == "json") {
      json.begin_object();
      for (std::size_t i = 0; i < row.size(); ++i) {
        json.key(columns[i]);
        const auto& v = row[i];
        if (std::holds_alternative<std::monostate>(v)) json.null();
        else if (const auto* n = std::get_if<std::int64_t>(&v)) json.value(*n);
        else if (const auto* d = std::get_if<double>(&v)) json.value(*d);
        else json.value(std::get<std::string>(v));
      }
      json.end_object();
    } else {
      std::vector<std::string> r;
      for (const auto& v : row) r.push_back(to_text(v));
      table_rows.push_back(std::move(r));
    }
  };
  run_readonly_query(p.positionals("FILE").front(), p.positionals("QUERY").front(), cb, qo);

  if (format == "json") {
    if (!json_open) json.begin_array();
    json.end_array();
    std::cout << json_buf.str() << "\n";
  } else if (format == "table" && !columns.empty()) {
    std::vector<std::size_t> width(columns.size());
    for (std::size_t i = 0; i < columns.size(); ++i) width[i] = columns[i].size();
    for (const auto& r : table_rows)
      for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], std::min<std::size_t>(r[i].size(), 80));
    auto print_row = [&](const std::vector<std::string>& r) {
      for (std::size_t i = 0; i < r.size(); ++i) {
        std::string cell = r[i].size() > 80 ? r[i].substr(0, 77) + "..." : r[i];
        std::cout << (i ? "  " : "") << cell << std::string(width[i] - std::min(width[i], cell.size()), ' ');
      }
      std::cout << "\n";
    };
    print_row(columns);
    for (std::size_t i = 0; i < columns.size(); ++i) std::cout << (i ? "  " : "") << std::string(width[i], '-');
    std::cout << "\n";
    for (const auto& r : table_rows) print_row(r);
    std::cout << "(" << table_rows.size() << " row" << (table_rows.size() == 1 ? "" : "s") << ")\n";
  }
  return kExitOk;
}

}  // namespace ss::cli
