// Hand-made CUPTI records (structs from the CUDA 13 headers) through the decoder.
#include <catch2/catch.hpp>
#include <nvtx3/nvToolsExtPayload.h>

#include <cstdlib>
#include <cstring>

#include "profiler/collector/cupti/activity_decode.h"
#include <cupti_runtime_cbid.h>

using namespace ss;
using namespace ss::collector;

namespace {
struct Collect : RecordVisitor {
  std::vector<ApiRecord> apis;
  std::vector<KernelRecord> kernels;
  std::vector<CopyRecord> copies;
  std::vector<MarkerRecord> markers;
  std::vector<MarkerPayload> payloads;
  std::vector<MemoryRecord> memory;
  std::vector<DeviceRecord> devices;
  void on_api(const ApiRecord& r) override { apis.push_back(r); }
  void on_kernel(KernelRecord&& r) override { kernels.push_back(std::move(r)); }
  void on_copy(const CopyRecord& r) override { copies.push_back(r); }
  void on_marker(MarkerRecord&& r) override { markers.push_back(std::move(r)); }
  void on_marker_payload(MarkerPayload&& p) override { payloads.push_back(std::move(p)); }
  void on_memory(const MemoryRecord& r) override { memory.push_back(r); }
  void on_device(const DeviceRecord& d) override { devices.push_back(d); }
};
template <typename T>
const CUpti_Activity* as_activity(const T& t) {
  return reinterpret_cast<const CUpti_Activity*>(&t);
}
}  // namespace

TEST_CASE("CONCURRENT_KERNEL records (CUpti_ActivityKernel10)") {
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = 1'700'000'000'000'000'100ull;
  k.end = 1'700'000'000'000'000'900ull;
  k.deviceId = 1;
  k.streamId = 13;
  k.correlationId = 77;
  k.gridX = 108;
  k.gridY = 2;
  k.gridZ = 1;
  k.blockX = 256;
  k.blockY = 1;
  k.blockZ = 1;
  k.staticSharedMemory = 1024;
  k.dynamicSharedMemory = 2048;
  k.registersPerThread = 64;
  k.name = "_Z6kernelv";
  Collect c;
  REQUIRE(decode_activity(as_activity(k), c) == DecodeResult::Decoded);
  REQUIRE(c.kernels.size() == 1);
  const auto& r = c.kernels[0];
  CHECK(r.start == 1'700'000'000'000'000'100ll);
  CHECK(r.end - r.start == 800);
  CHECK(r.device == 1);
  CHECK(r.stream == 13);
  CHECK(r.correlation == 77);
  CHECK(r.name == "_Z6kernelv");
  CHECK(r.config.grid_x == 108);
  CHECK(r.config.grid_y == 2);
  CHECK(r.config.block_x == 256);
  CHECK(r.config.shared_mem_bytes == 3072);
  CHECK(r.config.registers_per_thread == 64);

  k.start = 0;  // a forced flush of an unfinished kernel
  k.end = 0;
  CHECK(decode_activity(as_activity(k), c) == DecodeResult::InvalidTimestamps);
  CHECK(c.kernels.size() == 1);
}

TEST_CASE("MEMCPY, MEMSET and RUNTIME records") {
  CUpti_ActivityMemcpy6 m;
  std::memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  m.bytes = 1 << 20;
  m.start = 10;
  m.end = 20;
  m.streamId = 3;
  m.correlationId = 5;
  CUpti_ActivityMemset4 s;
  std::memset(&s, 0, sizeof s);
  s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  s.bytes = 64;
  s.start = 30;
  s.end = 31;
  s.correlationId = 6;
  CUpti_ActivityAPI a;
  std::memset(&a, 0, sizeof a);
  a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  a.start = 5;
  a.end = 9;
  a.threadId = 4242;
  a.correlationId = 5;
  Collect c;
  CHECK(decode_activity(as_activity(m), c) == DecodeResult::Decoded);
  CHECK(decode_activity(as_activity(s), c) == DecodeResult::Decoded);
  CHECK(decode_activity(as_activity(a), c) == DecodeResult::Decoded);
  REQUIRE(c.copies.size() == 2);
  CHECK(c.copies[0].copy_kind == 1);
  CHECK(c.copies[0].bytes == 1 << 20);
  CHECK_FALSE(c.copies[0].is_memset);
  CHECK(c.copies[1].is_memset);
  CHECK(c.copies[1].bytes == 64);
  REQUIRE(c.apis.size() == 1);
  CHECK(c.apis[0].tid == 4242);
  CHECK(c.apis[0].correlation == 5);
  CHECK(c.apis[0].cbid == 211);
}

TEST_CASE("MARKER records and NVTX extended payloads (MarkerData2)") {
  CUpti_ActivityMarker2 m;
  std::memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MARKER;
  m.flags = CUPTI_ACTIVITY_FLAG_MARKER_START;
  m.timestamp = 1234;
  m.id = 42;
  m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  m.objectId.pt.threadId = 777;
  m.name = "ncclAllGather";
  m.domain = "NCCL";
  CUpti_ActivityMarker2 e = m;
  e.flags = CUPTI_ACTIVITY_FLAG_MARKER_END;
  e.name = nullptr;
  e.domain = nullptr;

  // CUPTI hands the payload over in malloc'ed memory that the client frees.
  struct { uint64_t comm; size_t bytes; } body{0xbeef, 4096};
  auto* p = static_cast<nvtxPayloadData_t*>(std::malloc(sizeof(nvtxPayloadData_t)));
  void* copy = std::malloc(sizeof body);
  std::memcpy(copy, &body, sizeof body);
  p->schemaId = (1ull << 24) + 4;
  p->size = sizeof body;
  p->payload = copy;
  CUpti_ActivityMarkerData2 d;
  std::memset(&d, 0, sizeof d);
  d.kind = CUPTI_ACTIVITY_KIND_MARKER_DATA;
  d.id = 42;
  d.payloadKind = CUPTI_METRIC_VALUE_KIND_NVTX_EXTENDED_PAYLOAD;
  d.payload.metricValueNvtxExtendedPayload = reinterpret_cast<std::uintptr_t>(p);

  Collect c;
  CHECK(decode_activity(as_activity(m), c) == DecodeResult::Decoded);
  CHECK(decode_activity(as_activity(e), c) == DecodeResult::Decoded);
  CHECK(decode_activity(as_activity(d), c) == DecodeResult::Decoded);
  REQUIRE(c.markers.size() == 2);
  CHECK(c.markers[0].flags == MarkerRecord::kStart);
  CHECK(c.markers[0].tid == 777);
  CHECK(c.markers[0].name == "ncclAllGather");
  CHECK(c.markers[0].domain == "NCCL");
  CHECK(c.markers[1].flags == MarkerRecord::kEnd);
  CHECK(c.markers[1].name.empty());
  REQUIRE(c.payloads.size() == 1);
  CHECK(c.payloads[0].marker_id == 42);
  CHECK(c.payloads[0].schema_id == (1ull << 24) + 4);
  REQUIRE(c.payloads[0].bytes.size() == sizeof body);
  decltype(body) back;
  std::memcpy(&back, c.payloads[0].bytes.data(), sizeof back);
  CHECK(back.bytes == 4096);
  CHECK(back.comm == 0xbeef);
}

TEST_CASE("MEMORY2 records: device allocations with their pool") {
  CUpti_ActivityMemory4 m;
  std::memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.address = 0x7f0000000000ull;
  m.bytes = 1 << 21;
  m.timestamp = 99;
  m.isAsync = 1;
  m.streamId = 7;
  m.correlationId = 3;
  m.memoryPoolConfig.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
  m.memoryPoolConfig.pool.size = 1 << 30;
  m.memoryPoolConfig.utilizedSize = 1 << 22;
  CUpti_ActivityMemory4 f = m;
  f.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  Collect c;
  decode_activity(as_activity(m), c);
  decode_activity(as_activity(f), c);
  REQUIRE(c.memory.size() == 2);
  CHECK(c.memory[0].allocation);
  CHECK(c.memory[0].memory_kind == kMemoryKindDevice);
  CHECK(c.memory[0].stream == 7);
  CHECK(c.memory[0].pool_size == (1u << 30));
  CHECK(c.memory[0].pool_used == (1u << 22));
  CHECK_FALSE(c.memory[1].allocation);
  CHECK(c.memory[1].bytes == 1 << 21);
}

TEST_CASE("kinds the collector does not use are ignored") {
  CUpti_ActivityAPI a;
  std::memset(&a, 0, sizeof a);
  a.kind = CUPTI_ACTIVITY_KIND_CDP_KERNEL;
  Collect c;
  CHECK(decode_activity(as_activity(a), c) == DecodeResult::Ignored);
}
