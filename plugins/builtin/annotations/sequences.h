// Frequent kernel sequences: runs of kMinLength..kMaxLength consecutive work items on one stream
// whose names repeat (the candidates for CUDA graphs or fusion). Occurrences are counted
// non-overlapping, left to right on each stream (an occurrence counts when it starts at or after
// the end of the previous counted one of the same sequence on that stream), and a sequence is
// ranked by the GPU time its counted occurrences cover (sum of their items' durations). Only
// sequences with at least 2 occurrences are candidates. A longer one that only repeats a shorter
// period is dropped (A B A B: A B A is listed, not A B A B). Then, best first, a candidate is
// listed unless at least half of the work items its counted occurrences cover are already
// covered by the occurrences of sequences listed before it: so the loop A B C shows as A B C,
// not also as its rotations B C A and C A B, a sub-run of a listed run is not listed again
// unless it also repeats elsewhere, and a loop body longer than kMaxLength shows as a few
// windows, not as every shifted window of it.
#pragma once

#include <cstdint>
#include <vector>

namespace ss::analysis {

inline constexpr std::size_t kMinLength = 3, kMaxLength = 8, kMaxSequences = 20;

struct SeqItem {
  std::int64_t name;  // strings.id
  std::int64_t start, end;
};

struct StreamItems {
  std::int64_t stream;
  int rank;
  std::vector<SeqItem> items;  // in start order
};

struct SeqMark {
  std::int64_t start, end;
  int rank;
};

struct Sequence {
  std::vector<std::int64_t> names;
  std::int64_t occurrences = 0, gpu_ns = 0, streams = 0, span_ns = 0;  // span: sum of (last end - first start)
  std::int64_t first_start = 0, first_end = 0;
  int first_rank = 0;
  std::vector<SeqMark> marks;                               // every counted occurrence
  std::vector<std::pair<std::uint32_t, std::uint32_t>> at;  // (stream index, first item) per occurrence
};

// At most kMaxSequences, best first (ties: more occurrences, then shorter, then names).
std::vector<Sequence> frequent_sequences(const std::vector<StreamItems>& streams);

}  // namespace ss::analysis
