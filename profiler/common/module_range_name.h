// The NVTX message convention between the Python hooks and the collector:
//   "ss:fwd:<fqn>"  module forward         "ss:bwd:<fqn>"  module backward
//   "ss:rcp:<fqn>"  recompute (activation checkpointing)
//   "ss:opt:<n>"    optimizer step n (0-based; the end of step n closes iteration n)
// The root module has the empty fqn ("ss:fwd:"). Anything else is an ordinary annotation.
// Keep in step with profiler/python/shardscope/_names.py.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "storage/types.h"

namespace ss::collector {

struct ModuleRangeName {
  bool optimizer = false;
  RangePhase phase = RangePhase::None;
  std::string fqn;          // module ranges
  std::int64_t step = -1;   // optimizer ranges
};

std::optional<ModuleRangeName> parse_module_range_name(std::string_view message);

// The name written to the profile's ranges table for a module range: the fqn, "(root)" for "".
std::string module_range_display_name(std::string_view fqn);

}  // namespace ss::collector
