// The caching allocator's block behind each allocation of a memory snapshot's trace. The trace
// records what the caller asked for (CUDACachingAllocator's `orig_size`), while
// torch.cuda.memory_allocated / max_memory_allocated count the blocks the allocator handed out:
// the request rounded up to 512 B, and in the large pool (requests over 1 MiB) the whole free
// block when what would be left after it is 1 MiB or less (the allocator does not split that
// off). On an H200 the requested sizes of a launch-bound FSDP2 step peaked 120 MB (1.44 %) below
// max_memory_allocated (docs/gpu-runs.md). The layout that decides the remainder is known from
// the trace: segments (segment_alloc / segment_free) and the blocks live in them; a free region
// runs from an allocation's address to the next live block or the segment's end, because the
// allocator merges neighbouring free blocks and takes an allocation from a free block's start.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ss::import::snapshot {

enum class BlockSizes : std::uint8_t {
  Requested,  // sizes as traced: not the caching allocator's own history, or settings that change its rounding
  Rounded,    // 512-B rounding only (expandable segments: no fixed segment end)
  Layout,     // rounding and the unsplit remainder of the large pool (the default allocator)
};

// Which rule fits a snapshot's allocator_settings (absent: not from torch.cuda.memory._snapshot).
BlockSizes block_sizes_for(const std::vector<std::pair<std::string, std::string>>& allocator_settings);
const char* block_sizes_name(BlockSizes b);

class AllocatorBlocks {
 public:
  explicit AllocatorBlocks(BlockSizes rule) : rule_(rule) {}

  void segment_alloc(std::int64_t address, std::int64_t size);
  void segment_free(std::int64_t address);
  void segment_map();  // expandable segments: the layout rule no longer holds, rounding does
  // A block live before the trace began (its address only matters: it bounds free regions).
  void live_before(std::int64_t address) { live_.insert(address); }
  // The block size of an allocation at `address` of `requested` bytes; the block is live after.
  std::int64_t alloc(std::int64_t address, std::int64_t requested);
  void free(std::int64_t address) { live_.erase(address); }

  BlockSizes rule() const { return rule_; }

 private:
  BlockSizes rule_;
  std::map<std::int64_t, std::int64_t> segments_;  // address -> end
  std::set<std::int64_t> live_;
};

}  // namespace ss::import::snapshot
