// The critical path of each step (definition in plugins/builtin/critical_path/critical_path.cpp
// and docs/analyses.md), shared by the critical-path analysis and the unshard advisor, which
// takes its all-gather ranking as measured evidence.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "plugins/builtin/common/launch_records.h"
#include "plugins/builtin/common/profile_access.h"

namespace ss::analysis {

enum PathKind { kPathCompute, kPathCommunication, kPathCopy, kPathLaunch, kPathHost, kPathIdle, kPathKinds };
const char* path_kind_name(PathKind k);

struct PathSegment {
  int rank;
  std::int64_t start, end;
  PathKind kind;
  std::uint32_t kernel;  // kernels.id for kernel segments, else 0
  std::string kernel_name;
};

struct StepPath {
  std::int64_t step = -1;  // -1: no steps in the profile, the selection as one step
  std::int64_t start = 0, end = 0;
  std::array<std::int64_t, kPathKinds> by_kind{};
  std::int64_t peer_wait = 0;
  int ranks_on_path = 0;
  std::vector<PathSegment> segments;  // latest first; they tile [start, end]
};

struct UnitOnPath {
  std::string unit;        // FSDP unit name (ProfileAccess::module_name)
  std::int64_t on_path_ns = 0;
  std::int64_t gathers_on_path = 0;
  std::int64_t all_gather_ns = 0;  // all of the unit's all-gather kernel time, every rank
};

struct CriticalPath {
  LaunchRecords launch_records = LaunchRecords::NoTable;
  std::vector<StepPath> steps;
  std::vector<UnitOnPath> all_gathers;  // by on_path_ns, largest first
};

CriticalPath compute_critical_path(const ss::plugin::Host& host, ProfileAccess& p);

}  // namespace ss::analysis
