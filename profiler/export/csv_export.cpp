#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "profiler/export/atomic_output.h"
#include "profiler/export/export.h"
#include "storage/profile_reader.h"
#include "storage/schema.h"

namespace ss::exporting {

std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
  std::string r = "\"";
  for (char c : s) {
    if (c == '"') r += '"';
    r += c;
  }
  r += '"';
  return r;
}

std::vector<std::string> export_csv(const std::string& profile, const std::string& dir) {
  sql::Db db = open_profile_readonly(profile);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (::mkdir(dir.c_str(), 0755) != 0)
      throw ProfileError(ProfileErrorKind::Io, "cannot create directory '" + dir + "': " + std::strerror(errno));
  } else if (!S_ISDIR(st.st_mode)) {
    throw ProfileError(ProfileErrorKind::Io, "'" + dir + "' exists and is not a directory");
  }
  std::vector<std::string> written;
  for (const auto& table : schema::tables()) {
    const std::string path = dir + "/" + std::string(table.name) + ".csv";
    AtomicOutput out(path);
    auto& o = out.stream();
    std::string cols;
    for (std::size_t i = 0; i < table.columns.size(); ++i) {
      if (i) {
        o << ',';
        cols += ", ";
      }
      o << csv_field(table.columns[i].name);
      cols += table.columns[i].name;
    }
    o << "\r\n";
    const std::string order = table.columns.front().name == "id" ? " ORDER BY id" : "";
    // A table added after a file was written (schema::Table::optional) exports as a header only.
    sql::Stmt exists(db.get(), "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?");
    exists.bind(1, table.name);
    const bool present = exists.step() && exists.col_int(0) > 0;
    sql::Stmt s(db.get(), present ? "SELECT " + cols + " FROM " + std::string(table.name) + order : std::string("SELECT 1 WHERE 0"));
    const int n = static_cast<int>(table.columns.size());
    while (s.step()) {
      for (int i = 0; i < n; ++i) {
        if (i) o << ',';
        if (!s.col_null(i)) o << csv_field(s.col_text(i));
      }
      o << "\r\n";
    }
    out.commit();
    written.push_back(path);
  }
  return written;
}

}  // namespace ss::exporting
