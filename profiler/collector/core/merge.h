// `shardscope record`'s last step: every rank's collector file (<stem>.ssdb) and Python sidecar
// (<stem>.modules.tsv) in the output directory become one profile on one clock.
//  - Ranks without a collector file but with sidecar ranges (CPU runs, no CUPTI) are built from
//    the sidecar ranges first, so the rest of the merge sees only rank files.
//  - Files with no events and no modules (compile / autotune subprocesses that touched CUDA) are
//    skipped; duplicate or unknown rank numbers get the next free number (with a warning).
//  - Times: out = raw + clock offset (clock_alignment.h) - the earliest corrected origin; the
//    offset is stored in ranks.clock_offset_ns.
//  - Modules are united by fully-qualified name; class, parameter count / bytes and FSDP settings
//    come from the sidecars. Range nesting (depth / parent) is computed per (rank, thread) here.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "profiler/collector/core/rank_identity.h"
#include "storage/types.h"

namespace ss::collector {

struct RankInputs {
  RankIdentity id;
  std::string rank_file;  // "" when absent
  std::string sidecar;    // "" when absent
};

// Pairs the files of one directory by stem, ordered by (rank, pid).
std::vector<RankInputs> find_rank_inputs(const std::string& dir);

struct MergeOptions {
  std::string output;
  std::string command;  // recorded in origin.source_files
  std::string notes;    // origin.notes: what the recording is (record --label)
  bool align_clocks = true;
};

struct MergeResult {
  int ranks = 0;
  std::int64_t kernels = 0;
  std::int64_t ranges = 0;
  std::vector<std::string> warnings;
  std::vector<std::pair<int, TimeNs>> clock_offsets;  // (rank, offset)
};

// Throws ProfileError when an input is unreadable or no rank has any data; the output is written
// under a temporary name and renamed, so a failed merge leaves no half-written profile.
MergeResult merge_rank_files(const std::vector<RankInputs>& inputs, const MergeOptions& options);

// Builds a rank file from a sidecar's ranges (no CUPTI); returns false when it has none. Its clock
// starts at the first range, or at `earliest_unix_ns` when that is earlier (events added later).
bool rank_file_from_sidecar(const std::string& sidecar, const RankIdentity& id, const std::string& out_path,
                            std::optional<TimeNs> earliest_unix_ns = std::nullopt);

}  // namespace ss::collector
