// A profile the Unshard panel cannot simulate: the synthetic pattern (module ranges, steps,
// collectives) with no module marked as an FSDP unit, as a run recorded without fully_shard.
#pragma once

#include <string>

#include "profiler/synthetic/synthetic_profile.h"
#include "storage/sqlite_handle.h"
#include "tests/support/test_paths.h"

namespace ss::test {

inline std::string profile_without_units(const TempDir& dir) {
  const std::string path = dir.file("no-units.ssdb");
  SyntheticSpec spec;
  spec.layers = 3;
  write_synthetic_profile(path, spec);
  sql::Db db(path, SQLITE_OPEN_READWRITE);
  db.exec("UPDATE modules SET is_fsdp_unit = 0, fsdp_unit_id = NULL");
  return path;
}

}  // namespace ss::test
