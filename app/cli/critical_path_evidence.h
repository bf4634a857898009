// The measured evidence `shardscope plan IN --evidence critical-path` plans from: the FSDP units
// whose all-gathers the recorded step really waited for, from the critical-path analysis
// (plugins/builtin/critical_path), largest time on the path first.
#pragma once

#include <string>
#include <vector>

#include "storage/types.h"

namespace ss::cli {

struct UnitEvidence {
  std::string unit;           // the unit's module FQN
  TimeNs on_path_ns = 0;      // its all-gather time on the measured critical path
  TimeNs all_gather_ns = 0;   // all of its all-gather time
};

// Units with all-gather time on the path (the root and unattributed all-gathers left out: the
// root is never a candidate). Throws ProfileError for an unreadable profile and
// std::runtime_error when the analysis is missing or fails.
std::vector<UnitEvidence> critical_path_evidence(const std::string& profile_path);

}  // namespace ss::cli
