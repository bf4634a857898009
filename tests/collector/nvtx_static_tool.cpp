#include "tests/collector/nvtx_static_tool.h"

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include <cstdint>

#include "profiler/collector/cupti/nvtx_release.h"

namespace nvtx_static_tool {

Calls& calls() {
  static Calls c;
  return c;
}

namespace {

int NVTX_API push(const char*) { return ++calls().pushes; }
int NVTX_API pop() { return ++calls().pops; }
int NVTX_API push_payload(nvtxDomainHandle_t, const nvtxPayloadData_t*, size_t) { return ++calls().payload_pushes; }
uint8_t NVTX_API domain_enabled(nvtxDomainHandle_t) {
  ++calls().domain_enabled;
  return 1;
}

int NVTX_API init_core(NvtxGetExportTableFunc_t get) {
  ++calls().core_inits;
  const auto* cb = static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS));
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!cb || !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) || size <= NVTX_CBID_CORE_RangePop) return 0;
  *table[NVTX_CBID_CORE_RangePushA] = reinterpret_cast<NvtxFunctionPointer>(&push);
  *table[NVTX_CBID_CORE_RangePop] = reinterpret_cast<NvtxFunctionPointer>(&pop);
  ss::collector::remember_nvtx_tables(reinterpret_cast<const void*>(get));
  return 1;
}

int NVTX_API init_extension(nvtxExtModuleInfo_t* info) {
  ++calls().extension_inits;
  if (!info || info->moduleId != NVTX_EXT_PAYLOAD_MODULEID || info->segmentsCount < 1) return 0;
  intptr_t* slots = info->segments[0].functionSlots;
  slots[NVTX3EXT_CBID_nvtxRangePushPayload] = reinterpret_cast<intptr_t>(&push_payload);
  slots[NVTX3EXT_CBID_nvtxDomainIsEnabled] = reinterpret_cast<intptr_t>(&domain_enabled);
  ss::collector::remember_nvtx_extension(info);
  return 1;
}

}  // namespace
}  // namespace nvtx_static_tool

// Strong definitions: they take the place of NVTX's weak null ones in the test's NVTX copy.
extern "C" {
NvtxInitializeInjectionNvtxFunc_t InitializeInjectionNvtx2_fnptr = &nvtx_static_tool::init_core;
NvtxExtInitializeInjectionFunc_t InitializeInjectionNvtxExtension_fnptr = &nvtx_static_tool::init_extension;
}
