// Thin RAII wrappers over the SQLite C API: a connection and a prepared statement.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "storage/errors.h"

namespace ss::sql {

class Db {
 public:
  Db() = default;
  // flags: SQLITE_OPEN_* ; path may be a file: URI when SQLITE_OPEN_URI is set.
  Db(const std::string& path, int flags);
  ~Db();
  Db(Db&& o) noexcept : db_(o.db_) { o.db_ = nullptr; }
  Db& operator=(Db&& o) noexcept;
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  sqlite3* get() const { return db_; }
  explicit operator bool() const { return db_ != nullptr; }
  void exec(std::string_view sql);
  std::string errmsg() const;
  void close();

 private:
  sqlite3* db_ = nullptr;
};

class Stmt {
 public:
  Stmt() = default;
  Stmt(sqlite3* db, std::string_view sql);
  ~Stmt();
  Stmt(Stmt&& o) noexcept : st_(o.st_) { o.st_ = nullptr; }
  Stmt& operator=(Stmt&& o) noexcept;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  sqlite3_stmt* get() const { return st_; }
  // Returns true when a row is available, false when done; throws on error.
  bool step();
  void reset();
  void bind(int i, std::int64_t v) { sqlite3_bind_int64(st_, i, v); }
  void bind(int i, int v) { sqlite3_bind_int64(st_, i, v); }
  void bind(int i, double v) { sqlite3_bind_double(st_, i, v); }
  void bind(int i, std::string_view v) {
    sqlite3_bind_text(st_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void bind_null(int i) { sqlite3_bind_null(st_, i); }
  // Binds NULL for a negative id (kNoRow), the id otherwise.
  void bind_id(int i, std::int64_t id) {
    if (id < 0)
      sqlite3_bind_null(st_, i);
    else
      sqlite3_bind_int64(st_, i, id);
  }
  std::int64_t col_int(int i) const { return sqlite3_column_int64(st_, i); }
  double col_double(int i) const { return sqlite3_column_double(st_, i); }
  bool col_null(int i) const { return sqlite3_column_type(st_, i) == SQLITE_NULL; }
  std::string col_text(int i) const;
  // NULL -> fallback
  std::int64_t col_int_or(int i, std::int64_t fallback) const { return col_null(i) ? fallback : col_int(i); }

 private:
  sqlite3_stmt* st_ = nullptr;
};

// Maps a SQLite result code to our error kinds (corruption and truncation get their own).
[[noreturn]] void throw_sqlite(sqlite3* db, int rc, std::string_view context);

}  // namespace ss::sql
