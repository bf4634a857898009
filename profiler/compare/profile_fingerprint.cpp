#include "profiler/compare/profile_fingerprint.h"

#include <cstdio>
#include <filesystem>
#include <system_error>

#include "profiler/compare/compare_error.h"
#include "storage/profile_reader.h"

namespace ss::compare {
namespace {

class Fnv1a64 {
 public:
  void add(std::string_view s) {
    for (unsigned char c : s) {
      h_ ^= c;
      h_ *= 1099511628211ull;
    }
    // A separator so that ("ab", "c") and ("a", "bc") hash differently.
    h_ ^= 0xff;
    h_ *= 1099511628211ull;
  }
  std::string hex() const {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h_));
    return buf;
  }

 private:
  std::uint64_t h_ = 14695981039346656037ull;
};

std::string absolute_path(const std::string& path) {
  std::error_code ec;
  auto p = std::filesystem::absolute(path, ec);
  return ec ? path : p.lexically_normal().string();
}

}  // namespace

ProfileRef fingerprint_profile(const std::string& path) {
  ProfileRef ref;
  ref.path = absolute_path(path);
  std::error_code ec;
  const auto size = std::filesystem::file_size(ref.path, ec);
  if (ec) throw CompareError(CompareErrorKind::ProfileMissing, "profile '" + ref.path + "' does not exist or cannot be read: " + ec.message());
  ref.size_bytes = static_cast<std::int64_t>(size);
  sql::Db db = open_profile_readonly(ref.path);
  Fnv1a64 h;
  {
    sql::Stmt st(db.get(), "SELECT key, value FROM meta ORDER BY key");
    while (st.step()) {
      h.add(st.col_text(0));
      h.add(st.col_text(1));
    }
  }
  {
    sql::Stmt st(db.get(),
                 "SELECT kind, tool, tool_version, source_format, source_files, parameters_json, created_utc, notes"
                 " FROM origin");
    while (st.step())
      for (int i = 0; i < 8; ++i) h.add(st.col_text(i));
  }
  for (const char* table : {"kernels", "ranges", "collectives", "memory_events", "steps", "modules", "strings"}) {
    sql::Stmt st(db.get(), std::string("SELECT coalesce(max(rowid), 0) FROM ") + table);
    st.step();
    h.add(table);
    h.add(std::to_string(st.col_int(0)));
  }
  ref.fingerprint = h.hex();
  return ref;
}

ProfileState check_profile(const ProfileRef& ref, std::string* why) {
  auto say = [&](const std::string& s) {
    if (why) *why = s;
  };
  std::error_code ec;
  if (!std::filesystem::exists(ref.path, ec)) {
    say("profile '" + ref.path + "' no longer exists");
    return ProfileState::Missing;
  }
  ProfileRef now;
  try {
    now = fingerprint_profile(ref.path);
  } catch (const ProfileError& e) {
    say(std::string("profile '") + ref.path + "' cannot be read any more: " + e.what());
    return ProfileState::Unreadable;
  }
  if (now.size_bytes != ref.size_bytes || now.fingerprint != ref.fingerprint) {
    say("profile '" + ref.path + "' changed since it was saved (size " + std::to_string(ref.size_bytes) + " -> " +
        std::to_string(now.size_bytes) + " bytes, fingerprint " + ref.fingerprint + " -> " + now.fingerprint + ")");
    return ProfileState::Changed;
  }
  say("profile '" + ref.path + "' is unchanged");
  return ProfileState::Unchanged;
}

}  // namespace ss::compare
