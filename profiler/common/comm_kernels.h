// Communication kernels that are not NCCL's: DeepEP, NVSHMEM, MSCCL++ and the custom all-reduce
// kernels of inference and training stacks, recognised by name so that their time counts as
// communication (not compute) and their kernels become collectives.
//
// Rules are "family, a substring of the kernel name, the collective type" and are tried in order:
// the built-in list first, then the user's. Users add rules in a text file, one per line:
//     # family   kernel name contains     type (optional: all_reduce, all_to_all, ...)
//     myep       my_ep::dispatch          all_to_all
// named by the environment variable SHARDSCOPE_COMM_KERNELS or `shardscope import --comm-kernels`.
// Importers store the rules in effect in the profile (meta key comm_kernel_rules, same format),
// so `shardscope info` can say which rule matched each kernel.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "storage/types.h"

namespace ss {

struct CommKernelRule {
  std::string family;    // "deepep", "nvshmem", "mscclpp", "custom_allreduce", or the user's
  std::string contains;  // a substring of the kernel name (case-sensitive)
  CollectiveType type = CollectiveType::Unknown;
  bool builtin = true;
};

// Parses the rules text format above; throws std::invalid_argument naming the line on error.
std::vector<CommKernelRule> parse_comm_kernel_rules(std::string_view text);
std::string format_comm_kernel_rules(const std::vector<CommKernelRule>& rules);

// The rules in effect: built-ins, then SHARDSCOPE_COMM_KERNELS's file (read once), then those
// added with add_user_comm_kernel_rules.
const std::vector<CommKernelRule>& comm_kernel_rules();
// Adds the rules of a file (throws std::runtime_error when it cannot be read or parsed).
void add_user_comm_kernel_rules_file(const std::string& path);

// The first rule whose substring the name contains; nullptr when none (NCCL kernels are matched
// by classify_nccl_kernel before these rules).
const CommKernelRule* match_comm_kernel(std::string_view kernel_name);
const CommKernelRule* match_comm_kernel(std::string_view kernel_name, const std::vector<CommKernelRule>& rules);

}  // namespace ss
