// The per-rank file written by the Python package (profiler/python/shardscope/_sidecar.py):
// tab-separated lines, one record each. It carries what NVTX cannot: the module tree with
// classes, parameter counts / bytes and FSDP2 settings, and (when no CUPTI collector runs, e.g.
// on CPU) the module and optimizer ranges themselves.
//   # shardscope-sidecar 1
//   meta    <key>  <value>
//   module  <fqn>  <class>  <param_count>  <param_bytes>  <is_fsdp_unit 0|1>  <reshard_policy>  [<unit_owner>]
//           unit_owner: for a member of a grouped unit (fully_shard([norm, output])) other than the
//           one that stands for it, that member's fqn (the unit's parameters include this module's)
//   range   <tid>  <start_unix_ns>  <end_unix_ns>  <nvtx message, e.g. ss:fwd:layers.0>
//   step    <number>  <start_unix_ns>  <end_unix_ns>  [<model_calls>]
//           a step outside `record --steps A:B`'s capture window, timed by the wall clock only:
//           from when the job had control back after step number-1 to the end of its optimizer step;
//           model_calls: how many times the job called its model in it (absent: not counted)
// The file may end in a partial line (the rank was killed while writing): that line is ignored.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "storage/types.h"

namespace ss::collector {

struct SidecarModule {
  std::string fqn;
  std::string class_name;
  std::int64_t param_count = 0;
  std::int64_t param_bytes = 0;
  bool is_fsdp_unit = false;
  std::string reshard_policy;
  std::string unit_owner;  // grouped units: the member standing for the unit ("" = none)
};

struct SidecarRange {
  std::uint32_t tid = 0;
  TimeNs start = 0;
  TimeNs end = 0;
  std::string message;
};

struct SidecarStep {
  std::int64_t number = 0;
  TimeNs start = 0;
  TimeNs end = 0;
  std::int64_t model_calls = -1;  // -1: not counted (a sidecar written before the field)
};

struct Sidecar {
  std::map<std::string, std::string> meta;
  std::vector<SidecarModule> modules;  // later lines with the same fqn replace earlier ones
  std::vector<SidecarRange> ranges;
  std::vector<SidecarStep> steps;      // unobserved steps (outside the capture window)
};

// Throws ProfileError (file, line, what was expected) on malformed content.
Sidecar read_sidecar(const std::string& path);
Sidecar parse_sidecar(const std::string& text, const std::string& path_for_errors);

}  // namespace ss::collector
