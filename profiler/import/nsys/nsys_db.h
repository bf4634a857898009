// Read-only access to an `nsys export --type sqlite` file that tolerates the schema drift between
// Nsight Systems versions: tables are created lazily (absent = empty), columns get renamed
// (demangledName / shortName, text / textId), enum values are joined by label through the
// ENUM_* tables, and text columns may hold bytes that are not UTF-8.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "storage/sqlite_handle.h"

namespace ss::import::nsys {

class NsysDb {
 public:
  explicit NsysDb(const std::string& path);  // opens read-only; throws ImportError

  const std::string& path() const { return path_; }
  sqlite3* get() const { return db_.get(); }

  bool has_table(const std::string& table) const { return tables_.count(table) != 0; }
  bool has_column(const std::string& table, const std::string& column);
  // The first of `candidates` that `table` has, or "" when none.
  std::string pick_column(const std::string& table, std::initializer_list<const char*> candidates);
  // `column` when the table has it, else "NULL" (so a SELECT still compiles on older schemas).
  std::string column_or_null(const std::string& table, const std::string& column);

  // Value of the ENUM_* row whose label (or name) equals `label`, case-insensitively.
  std::optional<std::int64_t> enum_value(const std::string& enum_table, std::string_view label);
  // Label of an enum value, "" when unknown.
  std::string enum_label(const std::string& enum_table, std::int64_t value);

  // StringIds.value of `id` (cached), "" when absent.
  const std::string& string_by_id(std::int64_t id);

  std::int64_t count_rows(const std::string& table);

  // An ImportError for this file: "'PATH': what".
  [[noreturn]] void fail(const std::string& what) const;

 private:
  void load_enum(const std::string& enum_table);

  std::string path_;
  sql::Db db_;
  std::set<std::string> tables_;
  std::unordered_map<std::string, std::set<std::string>> columns_;
  std::unordered_map<std::string, std::vector<std::pair<std::int64_t, std::string>>> enums_;  // (value, label)
  std::unordered_map<std::int64_t, std::string> strings_;
  sql::Stmt string_stmt_;
};

// Text of column i as valid UTF-8: read as bytes (text or blob), each invalid byte replaced by U+FFFD.
std::string column_utf8(sqlite3_stmt* st, int i);
std::string sanitize_utf8(std::string_view bytes);

inline std::int64_t pid_of(std::int64_t global_id) { return (global_id >> 24) & 0xFFFFFF; }
// Identity of a process across target machines: globalPid without the thread bits (vm and pid),
// so that equal pids on two hosts of one multi-node export stay two processes.
inline std::int64_t process_key(std::int64_t global_id) { return global_id >> 24; }
inline std::int64_t tid_of(std::int64_t global_tid) { return global_tid & 0xFFFFFF; }

}  // namespace ss::import::nsys
