// The library's only exported symbols.
//  - shardscope_collector_capture: the Python side's switch for `record --steps A:B`
//    (shardscope/_collector.py finds this library, already loaded, by CUDA_INJECTION64_PATH).
//  - InitializeInjection: the CUDA driver calls it at cuInit when CUDA_INJECTION64_PATH names
//    this library (research/collector.md 1.1).
//  - InitializeInjectionNvtx / Nvtx2 / NvtxExtension: NVTX (in libtorch, libnccl, ...) calls them at
//    its first use when NVTX_INJECTION64_PATH names this library; we start the collector (NVTX may
//    run before cuInit) and hand NVTX over to CUPTI, whose extension init is what makes NCCL's
//    payloads decodable (1.2). These CUPTI functions are exported by libcupti but not declared in
//    its headers.
#include <cupti.h>

#include "profiler/collector/cupti/collector.h"
#include "profiler/collector/cupti/nvtx_release.h"

namespace {
// Hands an NVTX copy's tables to CUPTI and remembers them, so that the collector can take CUPTI out
// of them again when it detaches (nvtx_release.h). A copy that first calls NVTX after that gets no
// tool (returning 0 makes NVTX a no-op in that copy), as does any copy when the collector is off.
int hand_nvtx_to_cupti(CUptiResult (*cupti_init)(void*), void (*remember)(void*), void* arg) {
  if (ss::collector::nvtx_released() || !ss::collector::start_collector()) return 0;
  if (cupti_init(arg) != CUPTI_SUCCESS) return 0;
  remember(arg);
  return 1;
}
void remember_tables(void* get_export_table) { ss::collector::remember_nvtx_tables(get_export_table); }
}  // namespace

extern "C" {
CUptiResult cuptiNvtxInitialize(void* pfnGetExportTable);
CUptiResult cuptiNvtxInitialize2(void* pfnGetExportTable);
CUptiResult cuptiNvtxExtensionInitialize(void* moduleInfo);

__attribute__((visibility("default"))) int InitializeInjection(void) {
  ss::collector::start_collector();
  return 1;  // never fail the driver's init: a disabled collector must leave the job untouched
}

__attribute__((visibility("default"))) int InitializeInjectionNvtx(void* p) {
  return hand_nvtx_to_cupti(cuptiNvtxInitialize, remember_tables, p);
}

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(void* p) {
  return hand_nvtx_to_cupti(cuptiNvtxInitialize2, remember_tables, p);
}

__attribute__((visibility("default"))) int InitializeInjectionNvtxExtension(void* module_info) {
  return hand_nvtx_to_cupti(cuptiNvtxExtensionInitialize, ss::collector::remember_nvtx_extension, module_info);
}

// 1 on / 0 off; returns 1 when done (or already so), 0 when the collector is not recording.
__attribute__((visibility("default"))) int shardscope_collector_capture(int on) {
  return ss::collector::set_capture(on != 0) ? 1 : 0;
}
}
