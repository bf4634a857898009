#include "storage/errors.h"

namespace ss {
const char* to_string(ProfileErrorKind kind) {
  switch (kind) {
    case ProfileErrorKind::Io: return "io";
    case ProfileErrorKind::NotSqlite: return "not-sqlite";
    case ProfileErrorKind::NotProfile: return "not-a-profile";
    case ProfileErrorKind::NewerVersion: return "newer-version";
    case ProfileErrorKind::MissingTable: return "missing-table";
    case ProfileErrorKind::MalformedTable: return "malformed-table";
    case ProfileErrorKind::Truncated: return "truncated";
    case ProfileErrorKind::Corrupt: return "corrupt";
    case ProfileErrorKind::Cancelled: return "cancelled";
    case ProfileErrorKind::Sql: return "sql";
  }
  return "unknown";
}
}  // namespace ss
