// A stream's kind from what ran on it, the same rule for every importer: NCCL when collective
// kernels are at least half of its kernels (PyTorch may run a collective on the compute stream
// itself, e.g. sequence-parallel all-to-all; that stream stays a compute stream), compute when it
// ran other kernels, copy when it ran only copies and memsets. The kernels' own category says
// what each one is either way.
#pragma once

#include <cstdint>

#include "storage/types.h"

namespace ss {

inline StreamKind stream_kind_of(std::int64_t kernels, std::int64_t nccl_kernels) {
  if (kernels == 0) return StreamKind::Copy;
  return 2 * nccl_kernels >= kernels ? StreamKind::Nccl : StreamKind::Compute;
}

}  // namespace ss
