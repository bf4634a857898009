#include "storage/sqlite_handle.h"

namespace ss::sql {

void throw_sqlite(sqlite3* db, int rc, std::string_view context) {
  std::string msg(context);
  msg += ": ";
  msg += db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  switch (rc & 0xff) {
    case SQLITE_CORRUPT: throw ProfileError(ProfileErrorKind::Corrupt, msg);
    case SQLITE_NOTADB: throw ProfileError(ProfileErrorKind::NotSqlite, msg);
    case SQLITE_CANTOPEN:
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_READONLY:
    case SQLITE_PERM: throw ProfileError(ProfileErrorKind::Io, msg);
    case SQLITE_INTERRUPT: throw ProfileError(ProfileErrorKind::Cancelled, msg);
    default: throw ProfileError(ProfileErrorKind::Sql, msg);
  }
}

namespace {
// Debian's SQLite counts every allocation in global statistics behind a mutex (its default
// SQLITE_DEFAULT_MEMSTATUS=1); nothing here reads them. Must run before SQLite initialises: the
// first open does that, so it is done here once; later it is refused (SQLITE_MISUSE), harmlessly.
void configure_sqlite_once() {
  static const bool done = [] {
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    return true;
  }();
  (void)done;
}
}  // namespace

Db::Db(const std::string& path, int flags) {
  configure_sqlite_once();
  int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = "cannot open '" + path + "'";
    sqlite3* failed = db_;
    db_ = nullptr;
    std::string detail = failed ? sqlite3_errmsg(failed) : sqlite3_errstr(rc);
    if (failed) sqlite3_close(failed);
    throw ProfileError(ProfileErrorKind::Io, msg + ": " + detail);
  }
  sqlite3_extended_result_codes(db_, 1);
}

Db::~Db() { close(); }

Db& Db::operator=(Db&& o) noexcept {
  if (this != &o) {
    close();
    db_ = o.db_;
    o.db_ = nullptr;
  }
  return *this;
}

void Db::close() {
  if (db_) {
    sqlite3_close_v2(db_);
    db_ = nullptr;
  }
}

void Db::exec(std::string_view sql) {
  std::string s(sql);
  char* err = nullptr;
  int rc = sqlite3_exec(db_, s.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    throw_sqlite(nullptr, rc, "SQL '" + s.substr(0, 80) + "' failed: " + msg);
  }
}

std::string Db::errmsg() const { return db_ ? sqlite3_errmsg(db_) : "no database"; }

Stmt::Stmt(sqlite3* db, std::string_view sql) {
  int rc = sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &st_,
                              nullptr);
  if (rc != SQLITE_OK) throw_sqlite(db, rc, "prepare '" + std::string(sql.substr(0, 80)) + "'");
}

Stmt::~Stmt() {
  if (st_) sqlite3_finalize(st_);
}

Stmt& Stmt::operator=(Stmt&& o) noexcept {
  if (this != &o) {
    if (st_) sqlite3_finalize(st_);
    st_ = o.st_;
    o.st_ = nullptr;
  }
  return *this;
}

bool Stmt::step() {
  int rc = sqlite3_step(st_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  sqlite3* db = sqlite3_db_handle(st_);
  throw_sqlite(db, rc, "query '" + std::string(sqlite3_sql(st_)).substr(0, 80) + "'");
}

void Stmt::reset() {
  sqlite3_reset(st_);
  sqlite3_clear_bindings(st_);
}

std::string Stmt::col_text(int i) const {
  const unsigned char* t = sqlite3_column_text(st_, i);
  if (!t) return {};
  return std::string(reinterpret_cast<const char*>(t), static_cast<std::size_t>(sqlite3_column_bytes(st_, i)));
}

}  // namespace ss::sql
