// Opens a profile read-only, checks that it is a ShardScope profile of a version this build
// understands, and loads it into the in-memory model. Every failure is a ProfileError whose kind
// and message say what is wrong with which file.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "storage/profile_model.h"
#include "storage/sqlite_handle.h"

namespace ss {

struct LoadOptions {
  bool ranges = true;
  bool memory = true;
  bool collectives = true;
  // Called with a fraction in [0, 1] and a short stage name; keep it cheap.
  std::function<void(double, const char*)> progress;
  const std::atomic<bool>* cancel = nullptr;  // set to true to abort with ProfileErrorKind::Cancelled
  // Read only the kernels with row id <= this (0: all): a first part of a big profile to show
  // while the rest loads. Kernel rows are written rank after rank (imports, the synthetic
  // generator) or in time order (the collector), so a prefix is the first rank(s) or steps.
  std::int64_t kernel_id_limit = 0;
};

// Validates `path` (magic, truncation, application id / meta, version, required tables and columns)
// and returns a read-only connection. Used by the loader, `info` and the SQL console.
sql::Db open_profile_readonly(const std::string& path);

// Validates an already-open connection's schema (tables and columns); throws on mismatch.
void validate_profile_schema(sql::Db& db, const std::string& path);

// Rethrows `e` with the file name in front (when missing); SQL errors while reading become Corrupt.
[[noreturn]] void rethrow_with_path(const ProfileError& e, const std::string& path);

Profile load_profile(const std::string& path, const LoadOptions& options = {});

}  // namespace ss
