// `record --steps A:B` (SHARDSCOPE_STEPS): profile steps A to B-1 (end -1: to the end of the run),
// time the others with the wall clock only (profiler/python/shardscope/_window.py). Read by the
// launcher (the option) and the collector (which traces nothing before step A).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ss::collector {

struct StepWindow {
  std::int64_t first = 0;
  std::int64_t end = -1;
  std::string text() const;  // "A:B", "A:"
};

// "A:B" (0 <= A < B), "A:" or ":B"; std::nullopt for anything else.
std::optional<StepWindow> parse_step_window(const std::string& text);

// The first profiled step of SHARDSCOPE_STEPS: the collector traces nothing before it. 0 when the
// variable is absent or malformed: the Python side then profiles every step too (_window.py), and
// the collector must not miss what it profiles.
std::int64_t first_captured_step(const char* steps);

// What the window switches on, by SHARDSCOPE_TRACE_KINDS (a measurement switch, bench/gpu):
// unset (every group but overhead), "all", "none", or a comma list of groups (kernel, memcpy,
// memset, marker, api, overhead). overhead is CUPTI's records of its own overhead: only counted in
// meta, and on an H200 kernel + overhead cost the launch-bound job +26 % against +14 % for kernel
// alone (docs/gpu-runs.md, third loan), so it is opt-in as in Kineto.
bool trace_group_on(const std::string& kinds, const std::string& group);

}  // namespace ss::collector
