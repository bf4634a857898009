// Which collectives recorded on different ranks are one operation. Profiles match them by
// (process group, sequence number): the stragglers and critical-path analyses, the timeline's
// "same collective on other ranks". That assumes every rank numbers a group's operations alike;
// gloo numbers a group's sends and receives with its collectives in each rank's own order
// (torchtitan's pipeline group: a send at the number of its peer's all-reduce, two receives at one
// number, a 172-byte send at an 8-byte receive's: 38 of 222 numbers on a dp 2 x pp 2 recording).
#pragma once

#include <cstdint>

#include "storage/types.h"

namespace ss {

// A one-way transfer between two ranks (a pipeline's stages): its time is mostly waiting for the
// peer. NCCL's SendRecv kernel is not one: torch issues all-to-all (MoE, Ulysses attention) and
// ring exchanges as grouped sends and receives, one symmetric kernel on every rank.
inline bool is_point_to_point(CollectiveType t) { return t == CollectiveType::Send || t == CollectiveType::Recv; }

// The same type (a send with a receive for point-to-point) and, where every rank holds one size
// (all-reduce, all-gather, reduce-scatter, broadcast, reduce, send / receive), the same bytes when
// both are known.
inline bool same_operation(CollectiveType a, std::int64_t bytes_a, CollectiveType b, std::int64_t bytes_b) {
  const bool p2p = is_point_to_point(a);
  if (p2p != is_point_to_point(b) || (p2p ? a == b : a != b)) return false;
  const bool one_size = p2p || (a >= CollectiveType::AllReduce && a <= CollectiveType::Reduce);
  return !one_size || bytes_a <= 0 || bytes_b <= 0 || bytes_a == bytes_b;
}

}  // namespace ss
