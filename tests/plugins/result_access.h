// Helpers for reading analysis results in tests: a cell by table, row and column name.
#pragma once

#include <stdexcept>
#include <string>

#include "plugins/host/analysis_result.h"

namespace ss::test {

inline std::size_t column_index(const plugins::ResultTable& t, const std::string& column) {
  for (std::size_t i = 0; i < t.columns.size(); ++i)
    if (t.columns[i] == column) return i;
  throw std::runtime_error("no column '" + column + "' in table '" + t.name + "'");
}

inline const plugins::ResultTable& table_of(const plugins::AnalysisResult& r, const std::string& name) {
  if (const auto* t = r.table(name)) return *t;
  throw std::runtime_error("no table '" + name + "' in the result of " + r.analysis + (r.ok ? "" : ": " + r.error));
}

// The row whose `key` column holds `value` (an integer or a string).
template <typename V>
const std::vector<SqlValue>& row_where(const plugins::ResultTable& t, const std::string& key, const V& value) {
  const std::size_t k = column_index(t, key);
  for (const auto& row : t.rows) {
    if constexpr (std::is_convertible_v<V, std::string>) {
      if (const auto* s = std::get_if<std::string>(&row[k]); s && *s == std::string(value)) return row;
    } else {
      if (const auto* i = std::get_if<std::int64_t>(&row[k]); i && *i == static_cast<std::int64_t>(value)) return row;
    }
  }
  throw std::runtime_error("no row with " + key + " in table '" + t.name + "'");
}

inline std::int64_t int_at(const plugins::ResultTable& t, const std::vector<SqlValue>& row, const std::string& c) {
  return std::get<std::int64_t>(row[column_index(t, c)]);
}
inline double real_at(const plugins::ResultTable& t, const std::vector<SqlValue>& row, const std::string& c) {
  return std::get<double>(row[column_index(t, c)]);
}
inline std::string text_at(const plugins::ResultTable& t, const std::vector<SqlValue>& row, const std::string& c) {
  return std::get<std::string>(row[column_index(t, c)]);
}

}  // namespace ss::test
