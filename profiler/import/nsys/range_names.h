// What an NVTX range name says: PyTorch's emit_nvtx() suffixes (", seq = N, op_id = N, sizes = ..."),
// FSDP hook ranges ("FSDP::pre_forward (blocks.3)") and ProfilerStep#N.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "storage/types.h"

namespace ss::import::nsys {

// The name without emit_nvtx()'s per-call suffix, so that one operator is one interned name:
// "aten::mm, seq = 12, op_id = 34, sizes = [[2, 3]]" -> "aten::mm".
std::string_view strip_emit_nvtx_suffix(std::string_view name);

enum class FsdpHook { None, PreForward, PostForward, PreBackward, PostBackward, Other };

struct FsdpRangeName {
  FsdpHook hook = FsdpHook::None;  // None: not an FSDP:: range
  std::string fqn;                 // from the parenthesised part, "" when there is none
};

// "FSDP::pre_forward (blocks.3._checkpoint_wrapped_module)" -> {PreForward, "blocks.3._checkpoint_wrapped_module"}.
FsdpRangeName parse_fsdp_range_name(std::string_view name);

// Forward for pre/post_forward, Backward for pre/post_backward, None otherwise.
RangePhase phase_of(FsdpHook hook);

// "ProfilerStep#12" -> 12.
std::optional<std::int64_t> profiler_step_number(std::string_view name);

// "blocks.3.attn" -> "blocks.3"; "blocks" -> ""; "" -> nullopt (the root has no parent).
std::optional<std::string> parent_fqn(std::string_view fqn);

}  // namespace ss::import::nsys
