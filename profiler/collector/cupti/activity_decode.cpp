#include "profiler/collector/cupti/activity_decode.h"

#include <cupti_metrics.h>
#include <nvtx3/nvToolsExtPayload.h>

#include <cstdlib>
#include <cstring>

namespace ss::collector {
namespace {

TimeNs ns(std::uint64_t t) { return static_cast<TimeNs>(t); }

// Fields that memcpy and memset records share (the CUPTI structs differ, the names do not).
template <typename Record>
void fill_copy_common(CopyRecord& r, const Record& m) {
  r.bytes = static_cast<std::int64_t>(m.bytes);
  r.start = ns(m.start);
  r.end = ns(m.end);
  r.device = m.deviceId;
  r.stream = m.streamId;
  r.correlation = m.correlationId;
}

}  // namespace

DecodeResult decode_activity(const CUpti_Activity* record, RecordVisitor& v) {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      // Forced flushes hand back records of kernels that never finished: start = end = 0.
      if (k->start == 0 || k->end < k->start) return DecodeResult::InvalidTimestamps;
      KernelRecord r;
      r.start = ns(k->start);
      r.end = ns(k->end);
      r.device = k->deviceId;
      r.context = k->contextId;
      r.stream = k->streamId;
      r.correlation = k->correlationId;
      r.name = k->name ? k->name : "";
      r.config = {k->gridX, k->gridY, k->gridZ, k->blockX, k->blockY, k->blockZ,
                  k->staticSharedMemory + k->dynamicSharedMemory, k->registersPerThread};
      r.graph_id = k->graphId;
      v.on_kernel(std::move(r));
      return DecodeResult::Decoded;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      if (m->start == 0 || m->end < m->start) return DecodeResult::InvalidTimestamps;
      CopyRecord r;
      r.copy_kind = m->copyKind;
      r.src_kind = m->srcKind;
      r.dst_kind = m->dstKind;
      fill_copy_common(r, *m);
      v.on_copy(r);
      return DecodeResult::Decoded;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      if (m->start == 0 || m->end < m->start) return DecodeResult::InvalidTimestamps;
      CopyRecord r;
      r.is_memset = true;
      fill_copy_common(r, *m);
      v.on_copy(r);
      return DecodeResult::Decoded;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
      ApiRecord r;
      r.cbid = a->cbid;
      r.driver = record->kind == CUPTI_ACTIVITY_KIND_DRIVER;
      r.start = ns(a->start);
      r.end = ns(a->end);
      r.tid = a->threadId;
      r.correlation = a->correlationId;
      v.on_api(r);
      return DecodeResult::Decoded;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
      auto* m = reinterpret_cast<const CUpti_ActivityMarker2*>(record);
      MarkerRecord r;
      r.flags = static_cast<std::uint32_t>(m->flags);
      r.timestamp = ns(m->timestamp);
      r.id = m->id;
      if (m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || m->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS)
        r.tid = m->objectId.pt.threadId;
      r.name = m->name ? m->name : "";
      r.domain = m->domain ? m->domain : "";
      v.on_marker(std::move(r));
      return DecodeResult::Decoded;
    }
    case CUPTI_ACTIVITY_KIND_MARKER_DATA: {
      auto* d = reinterpret_cast<const CUpti_ActivityMarkerData2*>(record);
      if (d->payloadKind != CUPTI_METRIC_VALUE_KIND_NVTX_EXTENDED_PAYLOAD) return DecodeResult::Ignored;
      auto* p = reinterpret_cast<nvtxPayloadData_t*>(static_cast<std::uintptr_t>(d->payload.metricValueNvtxExtendedPayload));
      if (!p) return DecodeResult::Ignored;
      MarkerPayload r;
      r.marker_id = d->id;
      r.schema_id = p->schemaId;
      if (p->payload && p->size > 0 && p->size < (1u << 20)) {
        auto* bytes = static_cast<const std::uint8_t*>(p->payload);
        r.bytes.assign(bytes, bytes + p->size);
      }
      std::free(const_cast<void*>(p->payload));
      std::free(p);
      v.on_marker_payload(std::move(r));
      return DecodeResult::Decoded;
    }
    case CUPTI_ACTIVITY_KIND_MEMORY2: {
      auto* m = reinterpret_cast<const CUpti_ActivityMemory4*>(record);
      MemoryRecord r;
      r.allocation = m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
      if (!r.allocation && m->memoryOperationType != CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE)
        return DecodeResult::Ignored;
      r.address = m->address;
      r.bytes = static_cast<std::int64_t>(m->bytes);
      r.timestamp = ns(m->timestamp);
      r.device = m->deviceId;
      r.stream = m->isAsync ? static_cast<std::int64_t>(m->streamId) : -1;
      r.correlation = m->correlationId;
      r.is_async = m->isAsync != 0;
      r.memory_kind = m->memoryKind;
      if (m->memoryPoolConfig.memoryPoolType == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL) {
        r.pool_size = m->memoryPoolConfig.pool.size;
        r.pool_used = m->memoryPoolConfig.utilizedSize;
      }
      v.on_memory(r);
      return DecodeResult::Decoded;
    }
    case CUPTI_ACTIVITY_KIND_MEMORY_POOL: {
      auto* m = reinterpret_cast<const CUpti_ActivityMemoryPool3*>(record);
      MemoryPoolRecord r;
      r.operation = m->memoryPoolOperationType;
      r.address = m->address;
      r.size = m->size;
      r.used = m->utilizedSize;
      r.timestamp = ns(m->timestamp);
      r.device = m->deviceId;
      v.on_memory_pool(r);
      return DecodeResult::Decoded;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
      auto* o = reinterpret_cast<const CUpti_ActivityOverhead3*>(record);
      OverheadRecord r;
      r.kind = o->overheadKind;
      r.start = ns(o->start);
      r.end = ns(o->end);
      if (o->overheadData) std::free(o->overheadData);  // owned by the client (research 2.0 table)
      v.on_overhead(r);
      return DecodeResult::Decoded;
    }
    case CUPTI_ACTIVITY_KIND_DEVICE: {
      auto* d = reinterpret_cast<const CUpti_ActivityDevice5*>(record);
      DeviceRecord r;
      r.id = d->id;
      r.name = d->name ? d->name : "";
      r.memory_bytes = d->globalMemorySize;
      r.sm_count = static_cast<int>(d->numMultiprocessors);
      r.compute_major = static_cast<int>(d->computeCapabilityMajor);
      r.compute_minor = static_cast<int>(d->computeCapabilityMinor);
      v.on_device(r);
      return DecodeResult::Decoded;
    }
    default: return DecodeResult::Ignored;
  }
}

}  // namespace ss::collector
