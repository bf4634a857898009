// CUPTI activity record -> tool-neutral record (core/records.h). Only reads the structs of the
// CUPTI headers this was compiled against (CUDA 13.0: Kernel10, Memcpy6, Memset4, Marker2,
// MarkerData2, Memory4, MemoryPool3, API, Overhead3, Device5), so it is part of the CUDA-free
// core library and tested with hand-made records. Iterating a buffer (cuptiActivityGetNextRecord)
// is the collector's job.
#pragma once

#include <cupti_activity.h>

#include <cstdint>

#include "profiler/collector/core/records.h"

namespace ss::collector {

class RecordVisitor {
 public:
  virtual ~RecordVisitor() = default;
  virtual void on_api(const ApiRecord&) {}
  virtual void on_kernel(KernelRecord&&) {}
  virtual void on_copy(const CopyRecord&) {}
  virtual void on_marker(MarkerRecord&&) {}
  virtual void on_marker_payload(MarkerPayload&&) {}
  virtual void on_memory(const MemoryRecord&) {}
  virtual void on_memory_pool(const MemoryPoolRecord&) {}
  virtual void on_overhead(const OverheadRecord&) {}
  virtual void on_device(const DeviceRecord&) {}
};

enum class DecodeResult { Decoded, Ignored, InvalidTimestamps };

// MarkerData2 records with an NVTX extended payload own a malloc'ed nvtxPayloadData_t and its
// payload; they are copied and freed here, as CUPTI requires of the client.
DecodeResult decode_activity(const CUpti_Activity* record, RecordVisitor& visitor);

}  // namespace ss::collector
