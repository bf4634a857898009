// PyTorch's memory snapshot (torch.cuda.memory._snapshot(), pickled by _dump_snapshot) as typed
// values, read from a parsed pickle. The layout (torch/csrc/cuda/Module.cpp, _cuda_memorySnapshot):
//   {"segments": [{device, address, total_size, allocated_size, active_size, requested_size,
//                  stream, segment_type, segment_pool_id, is_expandable, frames?,
//                  blocks: [{address?, size, requested_size, state, frames?}]}],
//    "device_traces": [[{action, addr | device_free, size, stream, time_us?, frames?,
//                        compile_context?, user_metadata?}] per device],
//    "external_annotations": [{name, stage: "START" | "END", device, time_us}]   (record_function)
//    "allocator_settings": {...}}
// A bare list is the older memory_snapshot() form: the segments alone. Frames are
// {filename, line, name}, innermost first. Keys this importer does not use are ignored.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "profiler/import/snapshot/pickle_reader.h"

namespace ss::import::snapshot {

struct Frame {
  std::string filename;
  // PyTorch keeps a frame's line as uint64_t (torch/csrc/profiler/unwind/unwind.h) and writes a
  // Python frame without one (PyCode_Addr2Line's -1) as 2^64 - 1: read as the same 64 bits,
  // that is kUnknownLine. Every negative line counts as unknown.
  std::int64_t line = 0;
  std::string name;
};
inline constexpr std::int64_t kUnknownLine = -1;

enum class Action : std::uint8_t {
  Alloc,
  FreeRequested,
  FreeCompleted,
  SegmentAlloc,
  SegmentFree,
  SegmentMap,
  SegmentUnmap,
  Snapshot,
  Oom,
  Other,  // actions added by later PyTorch versions ("annotate", ...): counted, not used
};

struct TraceEntry {
  Action action = Action::Other;
  std::int64_t addr = 0;
  std::int64_t size = 0;
  std::int64_t stream = 0;
  std::optional<std::int64_t> time_us;
  int frames = -1;       // index into Snapshot::frame_lists, -1 for none
  std::string category;  // the memory profiler's category (torch.cuda._memory_viz._profile_to_snapshot)
};

struct Block {
  std::int64_t address = 0;
  std::int64_t size = 0;
  std::int64_t requested_size = 0;
  std::string state;  // active_allocated, active_pending_free, inactive
  int frames = -1;
};

struct Segment {
  std::int64_t device = 0;
  std::int64_t address = 0;
  std::int64_t total_size = 0;
  std::int64_t allocated_size = 0;
  std::int64_t active_size = 0;
  std::int64_t stream = 0;
  std::string segment_type;
  std::vector<Block> blocks;
};

struct Annotation {
  std::int64_t device = 0;
  std::optional<std::int64_t> time_us;
  std::string name;
  bool start = true;  // stage START (else END)
};

struct Snapshot {
  std::vector<Segment> segments;
  std::vector<std::vector<TraceEntry>> device_traces;  // index = device
  std::vector<Annotation> annotations;
  // Each distinct frames list once (the pickle's memo shares them between entries).
  std::vector<std::vector<Frame>> frame_lists;
  std::int64_t unknown_actions = 0;
  // allocator_settings' scalar entries (PYTORCH_CUDA_ALLOC_CONF, expandable_segments, ...) as text.
  std::vector<std::pair<std::string, std::string>> allocator_settings;
};

// Reads the typed snapshot. Throws pickle::PickleError naming the key and the offending value's
// type for a value of the wrong type or range. Values the pickle shares through its memo are
// visited once per reference; the visits are capped at a small multiple of the values parsed,
// so a hostile pickle of lists referencing lists cannot expand into unbounded work.
Snapshot read_snapshot(const pickle::Document& doc, const std::string& label);

}  // namespace ss::import::snapshot
