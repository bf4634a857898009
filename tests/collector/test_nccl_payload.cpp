// NCCL payload layouts (research/collector.md 4.2), built here from structs written the way NCCL
// declares them in src/include/nvtx_payload_schemas.h, so the byte offsets come from the compiler.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "profiler/collector/core/nccl_payload.h"

using namespace ss;
using namespace ss::collector;

namespace {
struct AllGatherOld { size_t bytes; };
struct AllReduceOld { size_t bytes; int op; };
struct ReduceOld { size_t bytes; int root; int op; };
struct SendOld { size_t bytes; int peer; };
struct CommInitOld { int rank; int nranks; int cudaDev; };
struct AllGatherNew { uint64_t comm; size_t bytes; };
struct ReduceScatterNew { uint64_t comm; size_t bytes; int op; };
struct BroadcastNew { uint64_t comm; size_t bytes; int root; };
struct CommInitNew { uint64_t newcomm; int nranks; int myrank; int cudaDev; };

template <typename T>
std::vector<std::uint8_t> bytes_of(const T& v) {
  std::vector<std::uint8_t> b(sizeof v);
  std::memcpy(b.data(), &v, sizeof v);
  return b;
}
constexpr std::uint64_t S = kNvtxSchemaStaticStart;
}  // namespace

TEST_CASE("NCCL 2.18-2.24 payloads (no communicator)") {
  auto ag = decode_nccl_payload("ncclAllGather", S + 4, bytes_of(AllGatherOld{1 << 20}));
  REQUIRE(ag);
  CHECK(ag->type == CollectiveType::AllGather);
  CHECK(ag->bytes == 1 << 20);
  CHECK_FALSE(ag->has_comm);

  auto ar = decode_nccl_payload("ncclAllReduce", S + 5, bytes_of(AllReduceOld{4096, 4}));
  REQUIRE(ar);
  CHECK(ar->type == CollectiveType::AllReduce);
  CHECK(ar->reduce_op == 4);

  auto red = decode_nccl_payload("ncclReduce", S + 8, bytes_of(ReduceOld{64, 3, 2}));
  REQUIRE(red);
  CHECK(red->root == 3);
  CHECK(red->reduce_op == 2);

  auto send = decode_nccl_payload("ncclSend", S + 9, bytes_of(SendOld{128, 5}));
  REQUIRE(send);
  CHECK(send->type == CollectiveType::Send);
  CHECK(send->peer == 5);

  auto init = decode_nccl_payload("ncclCommInitRank", S + 0, bytes_of(CommInitOld{1, 8, 0}));
  REQUIRE(init);
  CHECK(init->is_comm_init);
  CHECK(init->nranks == 8);
  CHECK(init->rank == 1);
}

TEST_CASE("NCCL 2.25+ payloads carry the communicator hash first") {
  auto ag = decode_nccl_payload("ncclAllGather", S + 4, bytes_of(AllGatherNew{0xabcdef, 3000}));
  REQUIRE(ag);
  CHECK(ag->has_comm);
  CHECK(ag->comm == 0xabcdef);
  CHECK(ag->bytes == 3000);

  auto rs = decode_nccl_payload("ncclReduceScatter", S + 7, bytes_of(ReduceScatterNew{7, 1024, 0}));
  REQUIRE(rs);
  CHECK(rs->type == CollectiveType::ReduceScatter);
  CHECK(rs->comm == 7);
  CHECK(rs->reduce_op == 0);

  auto bc = decode_nccl_payload("ncclBroadcast", S + 6, bytes_of(BroadcastNew{9, 10, 2}));
  REQUIRE(bc);
  CHECK(bc->root == 2);

  auto init = decode_nccl_payload("ncclCommInitRankConfig", 0, bytes_of(CommInitNew{0x55, 16, 3, 1}));
  REQUIRE(init);
  CHECK(init->has_comm);
  CHECK(init->comm == 0x55);
  CHECK(init->nranks == 16);
  CHECK(init->rank == 3);
}

TEST_CASE("mismatched schema ids, sizes and names are refused") {
  CHECK_FALSE(decode_nccl_payload("ncclAllGather", S + 5, bytes_of(AllGatherOld{1})));  // AllReduce's schema
  std::vector<std::uint8_t> odd(13, 0);
  CHECK_FALSE(decode_nccl_payload("ncclAllReduce", 0, odd));
  CHECK_FALSE(decode_nccl_payload("ncclGroupEnd", 0, {}));
}

TEST_CASE("full-buffer bytes and per-communicator sequences") {
  NcclCall ag;
  ag.type = CollectiveType::AllGather;
  ag.bytes = 1000;
  CHECK(full_buffer_bytes(ag, 8) == 8000);
  CHECK(full_buffer_bytes(ag, 0) == 1000);  // size unknown: NCCL's own count
  NcclCall ar;
  ar.type = CollectiveType::AllReduce;
  ar.bytes = 1000;
  CHECK(full_buffer_bytes(ar, 8) == 1000);

  CollectiveSequencer seq;
  CHECK(seq.next(1) == 0);
  CHECK(seq.next(2) == 0);
  CHECK(seq.next(1) == 1);
  CHECK(seq.next(1) == 2);
  CHECK(seq.next(2) == 1);
}
