// Runs user SQL against a profile without any possibility of changing it: the connection is
// opened read-only, attaching is disabled, and an authorizer allows only reads, read-only
// functions and introspection pragmas. Used by `shardscope sql` and the GUI's SQL console.
#pragma once

#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "storage/sqlite_handle.h"

namespace ss {

using SqlValue = std::variant<std::monostate, std::int64_t, double, std::string>;

struct QueryCallbacks {
  // Called once per statement that returns columns, before its rows.
  std::function<void(const std::vector<std::string>& columns)> on_columns;
  std::function<void(const std::vector<SqlValue>& row)> on_row;
};

struct QueryOptions {
  double timeout_seconds = 0;  // 0 = no limit
};

// Opens `path` (validated as a profile) read-only and runs every statement in `sql`.
// Throws ProfileError(Sql) with SQLite's message, or a refusal that names the statement.
void run_readonly_query(const std::string& path, const std::string& sql, const QueryCallbacks& cb,
                        const QueryOptions& options = {});

// The same on an already-open connection (which must be read-only); installs the guards.
void run_readonly_query(sql::Db& db, const std::string& sql, const QueryCallbacks& cb,
                        const QueryOptions& options = {});

}  // namespace ss
