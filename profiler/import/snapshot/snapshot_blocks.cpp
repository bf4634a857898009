#include "profiler/import/snapshot/snapshot_blocks.h"

#include <algorithm>

namespace ss::import::snapshot {

namespace {
// c10/cuda/CUDACachingAllocator.cpp: kMinBlockSize (every block a multiple of it) and kSmallSize
// (the largest small-pool request; a large-pool block is split only if more than this is left).
constexpr std::int64_t kMinBlockSize = 512;
constexpr std::int64_t kSmallSize = 1 << 20;
}  // namespace

BlockSizes block_sizes_for(const std::vector<std::pair<std::string, std::string>>& settings) {
  if (settings.empty()) return BlockSizes::Requested;
  BlockSizes rule = BlockSizes::Layout;
  for (const auto& [key, value] : settings) {
    // Settings that change the rounding or the splitting: the requested sizes are the honest figure.
    if (key == "max_split_size" && value != "-1" && !value.empty()) return BlockSizes::Requested;
    if (key == "PYTORCH_CUDA_ALLOC_CONF" &&
        (value.find("roundup_power2_divisions") != std::string::npos || value.find("max_split_size") != std::string::npos))
      return BlockSizes::Requested;
    if (key == "expandable_segments" && (value == "True" || value == "true" || value == "1")) rule = BlockSizes::Rounded;
  }
  return rule;
}

const char* block_sizes_name(BlockSizes b) {
  switch (b) {
    case BlockSizes::Requested: return "requested";
    case BlockSizes::Rounded: return "allocator blocks (512-B rounding)";
    case BlockSizes::Layout: return "allocator blocks";
  }
  return "requested";
}

void AllocatorBlocks::segment_alloc(std::int64_t address, std::int64_t size) {
  if (size > 0 && address <= INT64_MAX - size) segments_[address] = address + size;
}

void AllocatorBlocks::segment_free(std::int64_t address) { segments_.erase(address); }

void AllocatorBlocks::segment_map() {
  if (rule_ == BlockSizes::Layout) rule_ = BlockSizes::Rounded;
}

std::int64_t AllocatorBlocks::alloc(std::int64_t address, std::int64_t requested) {
  live_.insert(address);
  if (rule_ == BlockSizes::Requested || requested > INT64_MAX - kMinBlockSize) return requested;
  const std::int64_t rounded = std::max(kMinBlockSize, (requested + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize);
  if (rule_ == BlockSizes::Rounded || rounded <= kSmallSize) return rounded;  // the small pool always splits
  auto seg = segments_.upper_bound(address);
  // No known segment holds it (one allocated before the trace and freed before the snapshot).
  if (seg == segments_.begin()) return rounded;
  --seg;
  if (address >= seg->second) return rounded;
  auto next = live_.upper_bound(address);
  const std::int64_t end = next != live_.end() ? std::min(*next, seg->second) : seg->second;
  const std::int64_t region = end - address;
  if (region < rounded) return rounded;  // the trace contradicts the layout: keep the rounding
  return region - rounded > kSmallSize ? rounded : region;
}

}  // namespace ss::import::snapshot
