#include "tests/import/import_test_util.h"

#include <dirent.h>
#include <zlib.h>

#include <algorithm>
#include <stdexcept>

#include "storage/sqlite_handle.h"

namespace ss::test {

void write_gzip(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  if (!f) throw std::runtime_error("cannot write " + path);
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

std::string gzip_bytes(const std::string& bytes) {
  z_stream zs{};
  deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, bytes.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  zs.avail_in = static_cast<uInt>(bytes.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

std::int64_t query_int(const std::string& profile, const std::string& sql) {
  sql::Db db(profile, SQLITE_OPEN_READONLY);
  sql::Stmt s(db.get(), sql);
  if (!s.step() || s.col_null(0)) return -1;
  return s.col_int(0);
}

std::string query_text(const std::string& profile, const std::string& sql) {
  sql::Db db(profile, SQLITE_OPEN_READONLY);
  sql::Stmt s(db.get(), sql);
  if (!s.step() || s.col_null(0)) return "<null>";
  return s.col_text(0);
}

std::vector<std::string> query_column(const std::string& profile, const std::string& sql) {
  sql::Db db(profile, SQLITE_OPEN_READONLY);
  sql::Stmt s(db.get(), sql);
  std::vector<std::string> r;
  while (s.step()) r.push_back(s.col_null(0) ? "<null>" : s.col_text(0));
  return r;
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> r;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") r.push_back(n);
    }
    closedir(d);
  }
  std::sort(r.begin(), r.end());
  return r;
}

}  // namespace ss::test
