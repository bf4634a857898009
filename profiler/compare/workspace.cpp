#include "profiler/compare/workspace.h"

#include <filesystem>
#include <system_error>

#include "profiler/compare/compare_error.h"
#include "storage/profile_writer.h"

namespace ss::compare {
namespace {

constexpr const char* kSchema =
    "CREATE TABLE workspace_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE comparisons ("
    " id INTEGER PRIMARY KEY,"
    " name TEXT NOT NULL UNIQUE,"
    " created_utc TEXT NOT NULL,"
    " updated_utc TEXT NOT NULL,"
    " a_path TEXT NOT NULL, a_size_bytes INTEGER NOT NULL, a_fingerprint TEXT NOT NULL,"
    " b_path TEXT NOT NULL, b_size_bytes INTEGER NOT NULL, b_fingerprint TEXT NOT NULL,"
    " step_a INTEGER, step_b INTEGER,"
    " rank_a INTEGER NOT NULL DEFAULT 0, rank_b INTEGER NOT NULL DEFAULT 0,"
    " plan_json TEXT, notes TEXT NOT NULL DEFAULT '');";

constexpr const char* kColumns =
    "id, name, created_utc, updated_utc, a_path, a_size_bytes, a_fingerprint, b_path, b_size_bytes, b_fingerprint,"
    " step_a, step_b, rank_a, rank_b, coalesce(plan_json, ''), notes";

[[noreturn]] void not_workspace(const std::string& path, const std::string& why) {
  throw CompareError(CompareErrorKind::NotWorkspace, "'" + path + "' is not a ShardScope workspace: " + why);
}

std::int64_t pragma_int(sql::Db& db, const char* pragma) {
  sql::Stmt st(db.get(), std::string("PRAGMA ") + pragma);
  st.step();
  return st.col_int(0);
}

void create_schema(sql::Db& db) {
  db.exec("PRAGMA application_id = " + std::to_string(kWorkspaceApplicationId));
  db.exec("PRAGMA user_version = " + std::to_string(kWorkspaceVersion));
  db.exec("BEGIN");
  db.exec(kSchema);
  sql::Stmt st(db.get(), "INSERT INTO workspace_meta (key, value) VALUES (?, ?)");
  for (auto [k, v] : {std::pair<std::string, std::string>{"format", std::string(kWorkspaceFormatName)},
                      {"version", std::to_string(kWorkspaceVersion)},
                      {"created_utc", utc_now_iso8601()}}) {
    st.bind(1, k);
    st.bind(2, v);
    st.step();
    st.reset();
  }
  db.exec("COMMIT");
}

void check_schema(sql::Db& db, const std::string& path) {
  const std::int64_t app = pragma_int(db, "application_id");
  if (app == 0x53534450) not_workspace(path, "it is a ShardScope profile (open it with `shardscope info`)");
  if (app != kWorkspaceApplicationId) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%08llx", static_cast<unsigned long long>(app));
    not_workspace(path, std::string("its SQLite application_id is ") + buf + ", expected 0x53535753 ('SSWS')");
  }
  const std::int64_t version = pragma_int(db, "user_version");
  if (version > kWorkspaceVersion)
    throw CompareError(CompareErrorKind::NewerWorkspace,
                       "'" + path + "': workspace version " + std::to_string(version) +
                           " is newer than this build of ShardScope reads (up to " +
                           std::to_string(kWorkspaceVersion) + "); update ShardScope");
  sql::Stmt st(db.get(), "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN ('workspace_meta', 'comparisons')");
  st.step();
  if (st.col_int(0) != 2) not_workspace(path, "the 'workspace_meta' or 'comparisons' table is missing");
}

std::optional<std::int64_t> col_opt(const sql::Stmt& st, int i) {
  if (st.col_null(i)) return std::nullopt;
  return st.col_int(i);
}

SavedComparison read_row(const sql::Stmt& st) {
  SavedComparison c;
  c.id = st.col_int(0);
  c.name = st.col_text(1);
  c.created_utc = st.col_text(2);
  c.updated_utc = st.col_text(3);
  c.a = {st.col_text(4), st.col_int(5), st.col_text(6)};
  c.b = {st.col_text(7), st.col_int(8), st.col_text(9)};
  c.alignment.step_a = col_opt(st, 10);
  c.alignment.step_b = col_opt(st, 11);
  c.alignment.rank_a = static_cast<int>(st.col_int(12));
  c.alignment.rank_b = static_cast<int>(st.col_int(13));
  c.plan_json = st.col_text(14);
  c.notes = st.col_text(15);
  return c;
}

void bind_opt(sql::Stmt& st, int i, const std::optional<std::int64_t>& v) {
  if (v)
    st.bind(i, *v);
  else
    st.bind_null(i);
}

}  // namespace

SavedComparison make_saved_comparison(std::string name, const std::string& profile_a, const std::string& profile_b,
                                      const Alignment& alignment, std::string plan_json, std::string notes) {
  SavedComparison c;
  c.name = std::move(name);
  c.a = fingerprint_profile(profile_a);
  c.b = fingerprint_profile(profile_b);
  c.alignment = alignment;
  c.plan_json = std::move(plan_json);
  c.notes = std::move(notes);
  return c;
}

Workspace::Workspace(const std::string& path, Mode mode) : path_(path) {
  std::error_code ec;
  const bool exists = std::filesystem::exists(path, ec);
  const bool empty = exists && std::filesystem::is_regular_file(path, ec) && std::filesystem::file_size(path, ec) == 0;
  if (!exists && mode == Mode::OpenExisting)
    throw CompareError(CompareErrorKind::NotWorkspace, "workspace '" + path + "' does not exist");
  if (exists && std::filesystem::is_directory(path, ec))
    throw ProfileError(ProfileErrorKind::Io, "cannot open workspace '" + path + "': it is a directory");
  if (exists && !empty) {
    // Look at the header first so that a JSON file or a trace gets a clear message, not SQLite's.
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) throw ProfileError(ProfileErrorKind::Io, "cannot open workspace '" + path + "' for reading");
    char magic[16] = {};
    const std::size_t got = std::fread(magic, 1, sizeof magic, f);
    std::fclose(f);
    if (got < 16 || std::string_view(magic, 15) != "SQLite format 3") not_workspace(path, "not a SQLite database");
  }
  db_ = sql::Db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX);
  sqlite3_db_config(db_.get(), SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(db_.get(), SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_db_config(db_.get(), SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, nullptr);
  sqlite3_busy_timeout(db_.get(), 2000);
  if (!exists || empty) {
    create_schema(db_);
    return;
  }
  try {
    check_schema(db_, path);
  } catch (const CompareError&) {
    throw;
  } catch (const ProfileError& e) {
    not_workspace(path, e.what());  // SQLite could not read it (corrupt, truncated, ...)
  }
}

std::vector<SavedComparison> Workspace::list() const {
  std::vector<SavedComparison> out;
  sql::Stmt st(db_.get(), std::string("SELECT ") + kColumns + " FROM comparisons ORDER BY name");
  while (st.step()) out.push_back(read_row(st));
  return out;
}

SavedComparison Workspace::get(std::string_view name) const {
  sql::Stmt st(db_.get(), std::string("SELECT ") + kColumns + " FROM comparisons WHERE name = ?");
  st.bind(1, name);
  if (!st.step()) {
    std::string have;
    for (const auto& c : list()) have += (have.empty() ? "" : ", ") + ("'" + c.name + "'");
    throw CompareError(CompareErrorKind::NoSuchComparison, "workspace '" + path_ + "' has no comparison named '" +
                                                               std::string(name) + "' (it has: " +
                                                               (have.empty() ? "none" : have) + ")");
  }
  return read_row(st);
}

std::int64_t Workspace::save(const SavedComparison& c) {
  if (c.name.empty()) throw CompareError(CompareErrorKind::InvalidArgument, "a saved comparison needs a name");
  if (!c.plan_json.empty()) {
    sql::Stmt v(db_.get(), "SELECT json_valid(?)");
    v.bind(1, c.plan_json);
    v.step();
    if (v.col_int(0) != 1)
      throw CompareError(CompareErrorKind::InvalidArgument,
                         "the plan of comparison '" + c.name + "' is not valid JSON");
  }
  const std::string now = utc_now_iso8601();
  db_.exec("BEGIN IMMEDIATE");
  try {
    // Upsert by name: an existing row keeps its id and created_utc.
    sql::Stmt st(db_.get(),
                 "INSERT INTO comparisons (name, created_utc, updated_utc, a_path, a_size_bytes, a_fingerprint,"
                 " b_path, b_size_bytes, b_fingerprint, step_a, step_b, rank_a, rank_b, plan_json, notes)"
                 " VALUES (?1, ?2, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"
                 " ON CONFLICT(name) DO UPDATE SET updated_utc = excluded.updated_utc, a_path = excluded.a_path,"
                 " a_size_bytes = excluded.a_size_bytes, a_fingerprint = excluded.a_fingerprint,"
                 " b_path = excluded.b_path, b_size_bytes = excluded.b_size_bytes, b_fingerprint = excluded.b_fingerprint,"
                 " step_a = excluded.step_a, step_b = excluded.step_b, rank_a = excluded.rank_a,"
                 " rank_b = excluded.rank_b, plan_json = excluded.plan_json, notes = excluded.notes");
    st.bind(1, c.name);
    st.bind(2, now);
    st.bind(3, c.a.path);
    st.bind(4, c.a.size_bytes);
    st.bind(5, c.a.fingerprint);
    st.bind(6, c.b.path);
    st.bind(7, c.b.size_bytes);
    st.bind(8, c.b.fingerprint);
    bind_opt(st, 9, c.alignment.step_a);
    bind_opt(st, 10, c.alignment.step_b);
    st.bind(11, c.alignment.rank_a);
    st.bind(12, c.alignment.rank_b);
    if (c.plan_json.empty())
      st.bind_null(13);
    else
      st.bind(13, c.plan_json);
    st.bind(14, c.notes);
    st.step();
    sql::Stmt id(db_.get(), "SELECT id FROM comparisons WHERE name = ?");
    id.bind(1, c.name);
    id.step();
    const std::int64_t result = id.col_int(0);
    db_.exec("COMMIT");
    return result;
  } catch (...) {
    db_.exec("ROLLBACK");
    throw;
  }
}

bool Workspace::remove(std::string_view name) {
  sql::Stmt st(db_.get(), "DELETE FROM comparisons WHERE name = ?");
  st.bind(1, name);
  st.step();
  return sqlite3_changes(db_.get()) > 0;
}

void verify_profiles(const SavedComparison& c) {
  for (const auto& [side, ref] : {std::pair<char, const ProfileRef*>{'A', &c.a}, {'B', &c.b}}) {
    std::string why;
    const ProfileState s = check_profile(*ref, &why);
    if (s == ProfileState::Unchanged) continue;
    throw CompareError(s == ProfileState::Missing ? CompareErrorKind::ProfileMissing : CompareErrorKind::ProfileChanged,
                       "saved comparison '" + c.name + "': " + why + " (side " + side + ")");
  }
}

}  // namespace ss::compare
