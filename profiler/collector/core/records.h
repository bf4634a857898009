// Tool-neutral copies of the CUPTI activity records the collector uses. The CUPTI decoder
// (cupti/activity_decode.*) fills them from CUpti_Activity* structs; everything downstream
// (attribution, NCCL matching, writing) works on these, so it builds and is tested without CUDA.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "storage/types.h"

namespace ss::collector {

// CUDA runtime/driver API call (CUpti_ActivityAPI): links a GPU record (by correlation id) to the
// CPU thread and time of its launch.
struct ApiRecord {
  std::uint32_t cbid = 0;
  bool driver = false;
  TimeNs start = 0;
  TimeNs end = 0;
  std::uint32_t tid = 0;  // gettid() (CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)
  std::uint32_t correlation = 0;
  std::string_view name;  // the function ("cudaLaunchKernel"), from a table that outlives the record; may be empty
};

struct KernelRecord {
  TimeNs start = 0;
  TimeNs end = 0;
  std::uint32_t device = 0;
  std::uint32_t context = 0;
  std::uint32_t stream = 0;
  std::uint32_t correlation = 0;
  std::string name;  // as CUPTI gives it (usually mangled)
  LaunchConfig config;
  std::uint32_t graph_id = 0;
};

// MEMCPY and MEMSET records.
struct CopyRecord {
  bool is_memset = false;
  int copy_kind = 0;  // CUpti_ActivityMemcpyKind (memcpy only)
  int src_kind = 0;
  int dst_kind = 0;
  std::int64_t bytes = 0;
  TimeNs start = 0;
  TimeNs end = 0;
  std::uint32_t device = 0;
  std::uint32_t stream = 0;
  std::uint32_t correlation = 0;
};

// NVTX marker (CUpti_ActivityMarker2). Push/pop and start/end ranges give a START and an END
// record with the same id; END records carry no name.
struct MarkerRecord {
  static constexpr std::uint32_t kInstantaneous = 1;
  static constexpr std::uint32_t kStart = 2;
  static constexpr std::uint32_t kEnd = 4;
  std::uint32_t flags = 0;
  TimeNs timestamp = 0;
  std::uint64_t id = 0;
  std::uint32_t tid = 0;
  std::string name;
  std::string domain;  // "" = default domain
};

// NVTX extended payload attached to a marker (CUpti_ActivityMarkerData2 with
// CUPTI_METRIC_VALUE_KIND_NVTX_EXTENDED_PAYLOAD): the raw bytes of NCCL's payload struct.
struct MarkerPayload {
  std::uint64_t marker_id = 0;
  std::uint64_t schema_id = 0;
  std::vector<std::uint8_t> bytes;
};

// CUpti_ActivityMemory4 (MEMORY2).
struct MemoryRecord {
  bool allocation = true;  // false: release
  std::uint64_t address = 0;
  std::int64_t bytes = 0;  // always >= 0 here
  TimeNs timestamp = 0;    // host API time
  std::uint32_t device = 0;
  std::int64_t stream = -1;  // -1 when not stream-ordered
  std::uint32_t correlation = 0;
  bool is_async = false;
  int memory_kind = 0;  // CUpti_ActivityMemoryKind; 3 = device
  std::uint64_t pool_size = 0;
  std::uint64_t pool_used = 0;
};

// CUpti_ActivityMemoryPool3 (MEMORY_POOL): create / destroy / trim.
struct MemoryPoolRecord {
  int operation = 0;  // 1 created, 2 destroyed, 3 trimmed
  std::uint64_t address = 0;
  std::uint64_t size = 0;
  std::uint64_t used = 0;
  TimeNs timestamp = 0;
  std::uint32_t device = 0;
};

struct OverheadRecord {
  int kind = 0;
  TimeNs start = 0;
  TimeNs end = 0;
};

struct DeviceRecord {
  std::uint32_t id = 0;
  std::string name;
  std::uint64_t memory_bytes = 0;
  int sm_count = 0;
  int compute_major = 0;
  int compute_minor = 0;
};

inline constexpr int kMemoryKindDevice = 3;

}  // namespace ss::collector
