// FSDP2's record_function names: "FSDP::<action> (<fqn>[, <fqn>...])", and since per-parameter
// meshes (fully_shard's shard_placement_fn returning a ShardPlacementResult, as torchtitan's
// expert parallelism does) a unit with several parameter groups names each group's ranges with
// its mesh size appended: "FSDP::all_gather (layers.0) [pg=2]".
#pragma once

#include <string_view>

namespace ss {

// The name without a trailing " [pg=<digits>]"; any other name unchanged.
std::string_view strip_fsdp_group_suffix(std::string_view name);

}  // namespace ss
