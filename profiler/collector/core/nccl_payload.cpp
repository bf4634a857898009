#include "profiler/collector/core/nccl_payload.h"

#include <cstring>
#include <string>

#include "profiler/common/nccl_names.h"

namespace ss::collector {
namespace {

template <typename T>
T read_at(std::span<const std::uint8_t> p, std::size_t offset) {
  T v{};
  std::memcpy(&v, p.data() + offset, sizeof v);
  return v;
}

// Schema ids (NVTX_SID_* in NCCL's nvtx_payload_schemas.h) for a name-independent check.
enum : std::uint64_t { kSidCommInit = 0, kSidAllGather = 4, kSidAllReduce = 5, kSidBroadcast = 6,
                       kSidReduceScatter = 7, kSidReduce = 8, kSidSend = 9, kSidRecv = 10 };

std::optional<std::uint64_t> schema_for_function(std::string_view f) {
  if (f == "ncclAllGather") return kSidAllGather;
  if (f == "ncclAllReduce") return kSidAllReduce;
  if (f == "ncclBroadcast") return kSidBroadcast;
  if (f == "ncclReduceScatter") return kSidReduceScatter;
  if (f == "ncclReduce") return kSidReduce;
  if (f == "ncclSend") return kSidSend;
  if (f == "ncclRecv") return kSidRecv;
  if (f.substr(0, 16) == "ncclCommInitRank") return kSidCommInit;
  return std::nullopt;
}

}  // namespace

bool is_nccl_collective_function(std::string_view f) {
  return f == "ncclAllGather" || f == "ncclAllReduce" || f == "ncclBroadcast" || f == "ncclReduceScatter" ||
         f == "ncclReduce" || f == "ncclSend" || f == "ncclRecv" || f == "ncclAlltoAll" || f == "ncclGather" ||
         f == "ncclScatter";
}

std::optional<NcclCall> decode_nccl_payload(std::string_view function, std::uint64_t schema_id,
                                            std::span<const std::uint8_t> p) {
  auto sid = schema_for_function(function);
  if (!sid) return std::nullopt;
  if (schema_id != 0 && schema_id != kNvtxSchemaStaticStart + *sid) return std::nullopt;

  NcclCall c;
  if (*sid == kSidCommInit) {
    c.is_comm_init = true;
    if (p.size() == 12) {  // {int rank; int nranks; int cudaDev}
      c.rank = read_at<std::int32_t>(p, 0);
      c.nranks = read_at<std::int32_t>(p, 4);
    } else if (p.size() == 24 || p.size() == 20) {  // {u64 newcomm; int nranks; int myrank; int cudaDev}
      c.has_comm = true;
      c.comm = read_at<std::uint64_t>(p, 0);
      c.nranks = read_at<std::int32_t>(p, 8);
      c.rank = read_at<std::int32_t>(p, 12);
    } else {
      return std::nullopt;
    }
    return c;
  }

  c.type = collective_type_from_label(function);
  // Old layouts: AllGather 8 bytes, everything else 16 (size_t + one or two ints, padded).
  const std::size_t old_size = *sid == kSidAllGather ? 8 : 16;
  std::size_t base = 0;
  if (p.size() == old_size) {
    base = 0;
  } else if (p.size() == old_size + 8) {
    c.has_comm = true;
    c.comm = read_at<std::uint64_t>(p, 0);
    base = 8;
  } else {
    return std::nullopt;
  }
  c.bytes = static_cast<std::int64_t>(read_at<std::uint64_t>(p, base));
  switch (*sid) {
    case kSidAllReduce:
    case kSidReduceScatter: c.reduce_op = read_at<std::int32_t>(p, base + 8); break;
    case kSidReduce:
      c.root = read_at<std::int32_t>(p, base + 8);
      c.reduce_op = read_at<std::int32_t>(p, base + 12);
      break;
    case kSidBroadcast: c.root = read_at<std::int32_t>(p, base + 8); break;
    case kSidSend:
    case kSidRecv: c.peer = read_at<std::int32_t>(p, base + 8); break;
    default: break;
  }
  return c;
}

std::int64_t full_buffer_bytes(const NcclCall& call, int comm_size) {
  if (comm_size > 0 && (call.type == CollectiveType::AllGather || call.type == CollectiveType::ReduceScatter))
    return call.bytes * comm_size;
  return call.bytes;
}

}  // namespace ss::collector
