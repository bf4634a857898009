#include "storage/readonly_query.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstring>
#include <string_view>

#include "storage/profile_reader.h"

namespace ss {
namespace {

// Introspection pragmas. The first list reads a named table or index (its argument is a name);
// the second only reads when it has no argument (with one it would be an assignment).
constexpr std::array<std::string_view, 7> kIntrospectionPragmas = {
    "table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo", "foreign_key_list"};
constexpr std::array<std::string_view, 7> kReadOnlyPragmas = {
    "application_id", "user_version", "page_size", "page_count", "database_list", "function_list", "schema_version"};

template <std::size_t N>
bool listed(const std::array<std::string_view, N>& list, const char* name) {
  return name && std::find(list.begin(), list.end(), std::string_view(name)) != list.end();
}

struct AuthState {
  std::string refusal;  // first refused action, for the error message
};

int authorize(void* user, int action, const char* a3, const char* a4, const char*, const char*) {
  auto* st = static_cast<AuthState*>(user);
  auto refuse = [&](std::string what) {
    if (st->refusal.empty()) st->refusal = std::move(what);
    return SQLITE_DENY;
  };
  switch (action) {
    case SQLITE_SELECT:
    case SQLITE_READ:
    case SQLITE_RECURSIVE:
      return SQLITE_OK;
    case SQLITE_FUNCTION:
      if (a4 && (std::strcmp(a4, "load_extension") == 0 || std::strcmp(a4, "readfile") == 0 ||
                 std::strcmp(a4, "writefile") == 0 || std::strcmp(a4, "edit") == 0))
        return refuse(std::string("function ") + a4);
      return SQLITE_OK;
    case SQLITE_PRAGMA:
      if (listed(kIntrospectionPragmas, a3) || (!a4 && listed(kReadOnlyPragmas, a3))) return SQLITE_OK;
      return refuse(std::string("PRAGMA ") + (a3 ? a3 : "") + (a4 ? std::string(" = ") + a4 : std::string()));
    case SQLITE_INSERT: return refuse("INSERT");
    case SQLITE_UPDATE: return refuse("UPDATE");
    case SQLITE_DELETE: return refuse("DELETE");
    case SQLITE_ATTACH: return refuse("ATTACH");
    case SQLITE_DETACH: return refuse("DETACH");
    case SQLITE_TRANSACTION: return refuse("transaction control");
    case SQLITE_SAVEPOINT: return refuse("SAVEPOINT");
    case SQLITE_ALTER_TABLE: return refuse("ALTER TABLE");
    case SQLITE_ANALYZE: return refuse("ANALYZE");
    case SQLITE_REINDEX: return refuse("REINDEX");
    default: return refuse("schema change or write (authorizer action " + std::to_string(action) + ")");
  }
}

bool starts_with_keyword(std::string_view sql, std::string_view kw) {
  std::size_t i = 0;
  while (i < sql.size() && (std::isspace(static_cast<unsigned char>(sql[i])) != 0)) ++i;
  if (sql.size() - i < kw.size()) return false;
  for (std::size_t k = 0; k < kw.size(); ++k)
    if (std::toupper(static_cast<unsigned char>(sql[i + k])) != kw[k]) return false;
  return true;
}

}  // namespace

void run_readonly_query(sql::Db& db, const std::string& sql_text, const QueryCallbacks& cb,
                        const QueryOptions& options) {
  sqlite3* h = db.get();
  sqlite3_limit(h, SQLITE_LIMIT_ATTACHED, 0);
  sqlite3_db_config(h, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(h, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, nullptr);
  sqlite3_db_config(h, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  AuthState auth;
  sqlite3_set_authorizer(h, authorize, &auth);
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(options.timeout_seconds));
  struct Guard {
    sqlite3* h;
    ~Guard() {
      sqlite3_set_authorizer(h, nullptr, nullptr);
      sqlite3_progress_handler(h, 0, nullptr, nullptr);
    }
  } guard{h};
  if (options.timeout_seconds > 0)
    sqlite3_progress_handler(
        h, 10000, [](void* d) { return Clock::now() > *static_cast<const Clock::time_point*>(d) ? 1 : 0; },
        const_cast<Clock::time_point*>(&deadline));

  const char* tail = sql_text.c_str();
  const char* end = tail + sql_text.size();
  while (tail < end) {
    sqlite3_stmt* raw = nullptr;
    const char* stmt_start = tail;
    int rc = sqlite3_prepare_v2(h, tail, static_cast<int>(end - tail), &raw, &tail);
    std::string text(stmt_start, static_cast<std::size_t>(tail - stmt_start));
    if (rc != SQLITE_OK) {
      std::string msg = auth.refusal.empty()
                            ? std::string(sqlite3_errmsg(h))
                            : "refused: the SQL console is read-only (" + auth.refusal + " is not allowed)";
      if (raw) sqlite3_finalize(raw);
      throw ProfileError(ProfileErrorKind::Sql, msg);
    }
    if (!raw) continue;  // whitespace or comment
    struct Fin {
      sqlite3_stmt* s;
      ~Fin() { sqlite3_finalize(s); }
    } fin{raw};
    // VACUUM INTO writes a copy of the database elsewhere; the authorizer has no code for it.
    if (!sqlite3_stmt_readonly(raw) || starts_with_keyword(text, "VACUUM"))
      throw ProfileError(ProfileErrorKind::Sql,
                         "refused: the SQL console is read-only (statement would write: " + text.substr(0, 60) + ")");
    const int ncol = sqlite3_column_count(raw);
    if (ncol > 0 && cb.on_columns) {
      std::vector<std::string> cols;
      for (int i = 0; i < ncol; ++i) cols.emplace_back(sqlite3_column_name(raw, i));
      cb.on_columns(cols);
    }
    std::vector<SqlValue> row(static_cast<std::size_t>(ncol));
    while (true) {
      rc = sqlite3_step(raw);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) {
        if (rc == SQLITE_INTERRUPT)
          throw ProfileError(ProfileErrorKind::Sql, "query stopped after the " +
                                                        std::to_string(options.timeout_seconds) + " s time limit");
        throw ProfileError(ProfileErrorKind::Sql, sqlite3_errmsg(h));
      }
      for (int i = 0; i < ncol; ++i) {
        auto& v = row[static_cast<std::size_t>(i)];
        switch (sqlite3_column_type(raw, i)) {
          case SQLITE_INTEGER: v = static_cast<std::int64_t>(sqlite3_column_int64(raw, i)); break;
          case SQLITE_FLOAT: v = sqlite3_column_double(raw, i); break;
          case SQLITE_NULL: v = std::monostate{}; break;
          case SQLITE_BLOB: {
            const auto* b = static_cast<const unsigned char*>(sqlite3_column_blob(raw, i));
            int n = sqlite3_column_bytes(raw, i);
            std::string hex = "x'";
            static constexpr char kHex[] = "0123456789abcdef";
            for (int k = 0; k < n; ++k) {
              hex += kHex[b[k] >> 4];
              hex += kHex[b[k] & 15];
            }
            v = hex + "'";
            break;
          }
          default: {
            const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(raw, i));
            v = std::string(t ? t : "", static_cast<std::size_t>(sqlite3_column_bytes(raw, i)));
          }
        }
      }
      if (cb.on_row) cb.on_row(row);
    }
  }
}

void run_readonly_query(const std::string& path, const std::string& sql_text, const QueryCallbacks& cb,
                        const QueryOptions& options) {
  sql::Db db = open_profile_readonly(path);
  run_readonly_query(db, sql_text, cb, options);
}

}  // namespace ss
