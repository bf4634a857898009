#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <string>

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
    // A table or column added after a file was written (schema::Table::optional,
    // schema::Column::optional): a header only, or an empty field in every row.
    sql::Stmt info(db.get(), "SELECT name FROM pragma_table_info(?)");
    info.bind(1, table.name);
    std::set<std::string> in_file;
    while (info.step()) in_file.insert(info.col_text(0));
    const bool present = !in_file.empty();
    std::string cols;
    for (std::size_t i = 0; i < table.columns.size(); ++i) {
      if (i) {
        o << ',';
        cols += ", ";
      }
      const std::string name(table.columns[i].name);
      o << csv_field(name);
      cols += in_file.count(name) ? name : "NULL";
    }
    o << "\r\n";
    const std::string order = table.columns.front().name == "id" ? " ORDER BY id" : "";
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
