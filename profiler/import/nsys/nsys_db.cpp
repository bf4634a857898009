#include "profiler/import/nsys/nsys_db.h"

#include <algorithm>
#include <cctype>

#include "profiler/import/import.h"

namespace ss::import::nsys {

namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// Length of the valid UTF-8 sequence at s[i], 0 when the bytes there are not one.
std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t n;
  std::uint32_t cp;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;  // overlong, out of range or a surrogate
  return n;
}

}  // namespace

std::string sanitize_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (std::size_t i = 0; i < bytes.size();) {
    std::size_t n = utf8_sequence_length(bytes, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
      ++i;
    } else {
      out.append(bytes.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string column_utf8(sqlite3_stmt* st, int i) {
  if (sqlite3_column_type(st, i) == SQLITE_NULL) return {};
  // column_blob returns the stored bytes unchanged whether the value is TEXT or BLOB.
  const void* p = sqlite3_column_blob(st, i);
  const int n = sqlite3_column_bytes(st, i);
  if (!p || n <= 0) return {};
  return sanitize_utf8(std::string_view(static_cast<const char*>(p), static_cast<std::size_t>(n)));
}

NsysDb::NsysDb(const std::string& path) : path_(path) {
  try {
    db_ = sql::Db(path, SQLITE_OPEN_READONLY);
    sql::Stmt s(db_.get(), "SELECT name FROM sqlite_schema WHERE type IN ('table', 'view')");
    while (s.step()) tables_.insert(s.col_text(0));
  } catch (const ImportError&) {
    throw;
  } catch (const ProfileError& e) {
    fail(std::string("cannot read it as SQLite: ") + e.what());
  }
  if (!has_table("StringIds")) fail("not an Nsight Systems export: it has no StringIds table");
  if (!has_table("CUPTI_ACTIVITY_KIND_KERNEL"))
    fail("no CUDA kernels in it (no CUPTI_ACTIVITY_KIND_KERNEL table); profile with `nsys profile --trace=cuda`");
  string_stmt_ = sql::Stmt(db_.get(), "SELECT value FROM StringIds WHERE id = ?");
}

void NsysDb::fail(const std::string& what) const { throw ImportError("'" + path_ + "': " + what); }

bool NsysDb::has_column(const std::string& table, const std::string& column) {
  if (!has_table(table)) return false;
  auto it = columns_.find(table);
  if (it == columns_.end()) {
    std::set<std::string> cols;
    sql::Stmt s(db_.get(), "SELECT name FROM pragma_table_info(?)");
    s.bind(1, table);
    while (s.step()) cols.insert(s.col_text(0));
    it = columns_.emplace(table, std::move(cols)).first;
  }
  return it->second.count(column) != 0;
}

std::string NsysDb::pick_column(const std::string& table, std::initializer_list<const char*> candidates) {
  for (const char* c : candidates)
    if (has_column(table, c)) return c;
  return {};
}

std::string NsysDb::column_or_null(const std::string& table, const std::string& column) {
  return has_column(table, column) ? column : std::string("NULL");
}

void NsysDb::load_enum(const std::string& enum_table) {
  if (enums_.count(enum_table)) return;
  auto& rows = enums_[enum_table];
  if (!has_table(enum_table)) return;
  const std::string label = pick_column(enum_table, {"label", "name"});
  const std::string name = pick_column(enum_table, {"name", "label"});
  if (label.empty() || !has_column(enum_table, "id")) return;
  sql::Stmt s(db_.get(), "SELECT id, " + label + ", " + name + " FROM " + enum_table);
  while (s.step()) {
    rows.emplace_back(s.col_int(0), s.col_text(1));
    if (name != label) rows.emplace_back(s.col_int(0), s.col_text(2));  // match the symbolic name too
  }
}

std::optional<std::int64_t> NsysDb::enum_value(const std::string& enum_table, std::string_view label) {
  load_enum(enum_table);
  for (const auto& [value, l] : enums_[enum_table])
    if (iequals(l, label)) return value;
  return std::nullopt;
}

std::string NsysDb::enum_label(const std::string& enum_table, std::int64_t value) {
  load_enum(enum_table);
  for (const auto& [v, l] : enums_[enum_table])
    if (v == value) return l;  // the label comes first for each value
  return {};
}

const std::string& NsysDb::string_by_id(std::int64_t id) {
  auto it = strings_.find(id);
  if (it != strings_.end()) return it->second;
  std::string value;
  string_stmt_.bind(1, id);
  if (string_stmt_.step()) value = column_utf8(string_stmt_.get(), 0);
  string_stmt_.reset();
  return strings_.emplace(id, std::move(value)).first->second;
}

std::int64_t NsysDb::count_rows(const std::string& table) {
  if (!has_table(table)) return 0;
  sql::Stmt s(db_.get(), "SELECT count(*) FROM " + table);
  return s.step() ? s.col_int(0) : 0;
}

}  // namespace ss::import::nsys
