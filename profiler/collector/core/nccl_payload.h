// Decoding of NCCL's NVTX payloads (research/collector.md section 4.2). NCCL opens one range per
// API call in the "NCCL" domain, named after the function (ncclAllGather, ...), with a binary
// payload whose layout is a static schema:
//   2.18-2.24  AllGather {size_t bytes}            AllReduce/ReduceScatter {size_t bytes; int op}
//              Reduce {size_t bytes; int root; int op}   Broadcast {size_t bytes; int root}
//              Send/Recv {size_t bytes; int peer}        CommInitRank {int rank; int nranks; int dev}
//   2.25+      the same with a leading uint64_t comm (the communicator hash); CommInitRank becomes
//              {uint64_t newcomm; int nranks; int myrank; int dev}.
// The two generations are told apart by the payload size (every 2.25+ struct is 8 bytes larger).
// `bytes` is count x typesize: the per-rank send size for AllGather and the per-rank receive size
// for ReduceScatter.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string_view>

#include "storage/types.h"

namespace ss::collector {

inline constexpr std::uint64_t kNvtxSchemaStaticStart = 1ull << 24;

struct NcclCall {
  CollectiveType type = CollectiveType::Unknown;
  bool is_comm_init = false;
  bool has_comm = false;       // payload carried a communicator hash (NCCL >= 2.25)
  std::uint64_t comm = 0;
  std::int64_t bytes = 0;      // count x typesize as NCCL reports it
  int root = -1;
  int peer = -1;
  int reduce_op = -1;          // 0 sum, 1 prod, 2 max, 3 min, 4 avg
  int nranks = 0;              // CommInitRank only
  int rank = -1;               // CommInitRank only
};

// `function` is the NVTX range name (ncclAllGather, ...); schema_id as NCCL registered it
// (kNvtxSchemaStaticStart + NVTX_SID_*), or 0 when unknown (the name then decides). Returns
// nullopt for ranges that are not collectives or communicator inits, or a payload whose size
// matches neither layout generation.
std::optional<NcclCall> decode_nccl_payload(std::string_view function, std::uint64_t schema_id,
                                            std::span<const std::uint8_t> payload);

// True for the NCCL API names that launch a collective (not group / comm management).
bool is_nccl_collective_function(std::string_view function);

// Per-communicator sequence numbers: the k-th collective a rank issues on one communicator gets
// k on every rank, so the same collective can be matched across ranks.
class CollectiveSequencer {
 public:
  std::int64_t next(std::uint64_t comm) { return counters_[comm]++; }

 private:
  std::map<std::uint64_t, std::int64_t> counters_;
};

// Full-buffer bytes on this rank (CollectiveRow::bytes) from NCCL's per-rank count: AllGather and
// ReduceScatter multiply by the communicator size when it is known.
std::int64_t full_buffer_bytes(const NcclCall& call, int comm_size);

}  // namespace ss::collector
