// `shardscope info`'s account of communication kernels: each rule that matched (NCCL's kernel
// prefixes, or a communication-kernel rule from profiler/common/comm_kernels.h as stored in the
// profile at import), with its kernels' count and time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "storage/types.h"

namespace ss::cli {

struct CommKernelGroup {
  std::string family;  // "nccl", "deepep", ... "(unmatched)" for collective kernels no rule names
  std::string rule;    // the prefix or substring that matched
  std::int64_t kernels = 0;
  TimeNs total_ns = 0;
};

// Groups the profile's communication kernels (category collective) by the rule that matches
// their name, with the rules stored in the profile (the built-in ones when it stores none).
std::vector<CommKernelGroup> comm_kernel_groups(const std::string& profile_path);

}  // namespace ss::cli
