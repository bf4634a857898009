// What the timeline computes about events besides drawing them: the aggregate table for a
// selected time range, text search over event names, and the peers of a collective on the other
// ranks. Qt-free so tests and benchmarks can drive it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "storage/profile_model.h"
#include "views/timeline/tracks.h"

namespace ss::timeline {

struct AggregateRow {
  std::string name;
  std::int64_t count = 0;
  double total_ns = 0;  // time inside the selected range (events are clipped to it)
  double mean_ns = 0;   // total_ns / count
  double share = 0;     // total_ns / sum of total_ns over all rows
};

struct Aggregate {
  TimeNs t0 = 0, t1 = 0;
  std::vector<AggregateRow> by_kernel;  // sorted by total, largest first
  std::vector<AggregateRow> by_module;  // innermost module at launch; "(no module)" otherwise
  std::int64_t kernel_count = 0;
};

// Kernels on the given stream tracks (Profile::stream_tracks indices) that overlap [t0, t1].
Aggregate aggregate_range(const Profile& profile, const std::vector<std::int32_t>& stream_tracks, TimeNs t0, TimeNs t1);

// A reference to one event: a kernel (stream track) or a range (range track).
struct EventRef {
  TrackKind kind = TrackKind::Stream;
  std::int32_t track = -1;  // Profile::stream_tracks / range_tracks index
  std::uint32_t index = 0;
  bool valid() const { return track >= 0; }
  bool operator==(const EventRef&) const = default;
};

struct EventInfo {
  TimeNs start = 0, end = 0;
  std::uint32_t name = 0;
  std::int32_t module = -1;
  std::uint32_t id = 0;
};
EventInfo event_info(const Profile& profile, const EventRef& ref);

// Every kernel and range whose name contains `query` (ASCII case-insensitive), in start order;
// a range that overlaps a device event of the same name on its rank (a record_function wrapped
// around the collective it times) is that event's match, not a second one.
std::vector<EventRef> find_events(const Profile& profile, std::string_view query);

// The same collective (same process group and sequence number, one operation by
// storage/collective_match.h) on the other ranks, as kernel refs on their NCCL streams; empty when
// `kernel` is not a collective with a known sequence.
std::vector<EventRef> collective_peers(const Profile& profile, const EventRef& kernel);

}  // namespace ss::timeline
