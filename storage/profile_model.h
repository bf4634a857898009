// The in-memory model of a profile: compact packed events in per-track arrays sorted by start
// time (one track per rank x stream, and per rank x lane x range depth), interned strings, the
// module tree with parent/child links, and per-rank memory counters. Built by ProfileReader;
// immutable afterwards, so views can share it across threads.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "storage/types.h"

namespace ss {

// 32 bytes. Details that a view needs only on demand (grid, correlation, copy bytes) stay in the
// file and are fetched by `id`.
struct KernelEvent {
  TimeNs start;
  TimeNs end;
  std::uint32_t name;    // Profile::strings index
  std::int32_t module;   // Profile::modules index, -1 when unattributed
  std::uint32_t id;      // kernels.id in the file
  KernelCategory category;
  std::uint8_t reserved[3];
};
static_assert(sizeof(KernelEvent) == 32);

struct RangeEvent {
  TimeNs start;
  TimeNs end;
  std::uint32_t name;
  std::int32_t module;
  std::uint32_t id;  // ranges.id
  RangeKind kind;
  RangePhase phase;
  std::uint8_t reserved[2];
};
static_assert(sizeof(RangeEvent) == 32);

struct CounterPoint {
  TimeNs time;
  std::int64_t value;  // bytes allocated after this event
};

struct CollectiveEvent {
  TimeNs start;
  TimeNs end;
  std::int64_t bytes;
  std::int64_t sequence;  // -1 when unknown
  std::int64_t kernel_id; // -1 when unknown
  std::int32_t rank;
  std::int32_t process_group;  // process_groups.id, -1 when unknown
  CollectiveType type;
  std::int32_t group_size;  // ranks in the communicator, 0 when unknown
};

struct StreamTrack {
  RowId stream_id = kNoRow;
  int rank = 0;
  int device = 0;
  std::int64_t native_id = 0;
  StreamKind kind = StreamKind::Unknown;
  std::string name;
  std::vector<KernelEvent> events;  // sorted by start
  TimeNs max_duration = 0;          // lets a window query start its search early enough
};

struct RangeTrack {
  int rank = 0;
  RowId thread_id = kNoRow;  // CPU lane, or
  RowId stream_id = kNoRow;  // GPU lane
  // Framework operators (CpuOp, Fsdp, Nccl) are laid out apart from the structure ranges
  // (modules, annotations) of their lane, each class packed on its own tracks, and `depth` is the
  // track within its class (storage/range_lanes.h); the `ranges` table's depth counts nesting
  // over the whole lane.
  bool operators = false;
  int depth = 0;
  std::vector<RangeEvent> events;  // sorted by start
  TimeNs max_duration = 0;
};

struct ModuleNode {
  RowId id = kNoRow;
  std::int32_t parent = -1;  // index in Profile::modules
  std::vector<std::int32_t> children;
  std::string fqn;
  std::string class_name;
  std::int64_t param_count = 0;
  std::int64_t param_bytes = 0;
  bool is_fsdp_unit = false;
  std::int32_t fsdp_unit = -1;
  std::string reshard_policy;
};

struct RankModel {
  RankInfo info;
  std::vector<std::int32_t> stream_tracks;  // indices in Profile::stream_tracks
  std::vector<std::int32_t> range_tracks;   // indices in Profile::range_tracks, by lane then depth
  std::vector<CounterPoint> memory;         // allocated bytes over time (from memory_events)
  std::vector<StepRow> steps;
};

// Concatenated strings: one allocation instead of one per string.
class StringTable {
 public:
  void add(std::string_view s);
  std::string_view operator[](std::uint32_t id) const;
  std::size_t size() const { return offsets_.empty() ? 0 : offsets_.size() - 1; }
  std::size_t memory_bytes() const { return chars_.capacity() + offsets_.capacity() * sizeof(std::uint32_t); }
  void reserve(std::size_t n, std::size_t chars);

 private:
  std::string chars_;
  std::vector<std::uint32_t> offsets_{0};
};

struct Profile {
  std::string path;
  int schema_version = 0;
  Origin origin;
  std::map<std::string, std::string> meta;
  StringTable strings;
  std::vector<RankModel> ranks;  // sorted by rank
  std::vector<StreamTrack> stream_tracks;
  std::vector<RangeTrack> range_tracks;
  std::vector<ModuleNode> modules;  // parents before children; index 0.. ; roots have parent -1
  std::vector<CollectiveEvent> collectives;  // sorted by (rank, start)
  std::int64_t kernel_count = 0;
  std::int64_t range_count = 0;
  std::int64_t memory_event_count = 0;
  TimeNs time_begin = 0;
  TimeNs time_end = 0;

  const RankModel* rank(int r) const;
  std::int32_t module_index(RowId id) const;  // -1 when absent
  std::int32_t find_module(std::string_view fqn) const;
  // Memory held by the model's arrays, for the bytes-per-event figure.
  std::size_t memory_bytes() const;

  std::vector<std::int64_t> module_index_by_id;  // id -> index (dense ids), -1 for gaps
};

// Events whose closed interval [start, end] intersects the closed window [t0, t1], visited in
// start order. Binary search finds the first candidate: no event can start earlier than
// t0 - max_duration and still reach t0.
template <typename Event, typename Fn>
void for_each_in_window(const std::vector<Event>& events, TimeNs max_duration, TimeNs t0, TimeNs t1, Fn&& fn) {
  auto first = std::lower_bound(events.begin(), events.end(), t0 - max_duration,
                                [](const Event& e, TimeNs t) { return e.start < t; });
  for (auto it = first; it != events.end() && it->start <= t1; ++it)
    if (it->end >= t0) fn(*it);
}

// Index range [first, last) of events that start within [t0, t1].
template <typename Event>
std::pair<std::size_t, std::size_t> start_range(const std::vector<Event>& events, TimeNs t0, TimeNs t1) {
  auto lo = std::lower_bound(events.begin(), events.end(), t0, [](const Event& e, TimeNs t) { return e.start < t; });
  auto hi = std::upper_bound(lo, events.end(), t1, [](TimeNs t, const Event& e) { return t < e.start; });
  return {static_cast<std::size_t>(lo - events.begin()), static_cast<std::size_t>(hi - events.begin())};
}

}  // namespace ss

