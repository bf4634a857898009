// Bounds on a profile's numbers. Every reader does arithmetic on them (an event's end, spans,
// running sums of memory, totals per module or kernel name), so a corrupt or hostile file must be
// refused with a clear error before its values can overflow 64 bits; no real profile comes near:
// - times within +-2^61 ns (+-73 years: Unix-epoch nanoseconds fit), durations 0 .. 2^61 ns, so an
//   end and the difference of two times fit;
// - bytes (a memory event, a collective, a module's parameters) within +-2^50 (1 PiB);
// - a table's durations, or its bytes' magnitudes, add up to at most 2^62, so that any sum over
//   part of a table fits too.
#pragma once

#include <cstdint>
#include <string>

namespace ss {

inline constexpr std::int64_t kMaxAbsTimeNs = std::int64_t{1} << 61;
inline constexpr std::int64_t kMaxAbsBytes = std::int64_t{1} << 50;
inline constexpr std::int64_t kMaxTableTotal = std::int64_t{1} << 62;

inline bool time_in_bounds(std::int64_t t) { return t >= -kMaxAbsTimeNs && t <= kMaxAbsTimeNs; }
inline bool duration_in_bounds(std::int64_t d) { return d >= 0 && d <= kMaxAbsTimeNs; }
inline bool bytes_in_bounds(std::int64_t b) { return b >= -kMaxAbsBytes && b <= kMaxAbsBytes; }

// total += |v| (v already within its bound); false, with total unchanged, once the total would
// pass kMaxTableTotal.
inline bool add_to_total(std::int64_t& total, std::int64_t v) {
  const std::int64_t magnitude = v < 0 ? -v : v;
  if (magnitude > kMaxTableTotal - total) return false;
  total += magnitude;
  return true;
}

// level += bytes for running sums of memory events read straight from SQL (`info`'s peaks, the
// simulator's measured peaks and temporaries), which may run without the loader's checks (the
// simulator loads without memory events): a ProfileError (MalformedTable) naming `path` for an
// event outside +-2^50 bytes or a sum outside +-2^62.
void add_memory_bytes(std::int64_t& level, std::int64_t bytes, const std::string& path);

}  // namespace ss
