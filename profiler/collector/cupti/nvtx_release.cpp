#include "profiler/collector/cupti/nvtx_release.h"

// The injection-side types of NVTX 3 (the export table, the module function tables, the extension
// module info), without NVTX's own implementation.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

namespace ss::collector {
namespace {

// nvtxDetail/nvtxExtImpl.h (not included: it is NVTX's implementation): an extension slot holding
// this value makes the extension's call return at once, as when no tool is attached.
constexpr intptr_t kExtensionDisabled = 1;

struct Remembered {
  std::mutex m;
  std::vector<NvtxFunctionPointer*> core_slots;                // not yet released
  std::vector<std::pair<intptr_t*, size_t>> extension_slots;   // (first slot, count), not yet released
  std::atomic<bool> released{false};
};

Remembered& remembered() {
  static Remembered* r = new Remembered;  // never destroyed: NVTX may initialise during exit
  return *r;
}

int release_locked(Remembered& r) {
  int n = 0;
  for (NvtxFunctionPointer* slot : r.core_slots) {
    __atomic_store_n(slot, static_cast<NvtxFunctionPointer>(nullptr), __ATOMIC_RELEASE);
    ++n;
  }
  for (const auto& [slots, count] : r.extension_slots)
    for (size_t i = 0; i < count; ++i, ++n) __atomic_store_n(&slots[i], kExtensionDisabled, __ATOMIC_RELEASE);
  r.core_slots.clear();
  r.extension_slots.clear();
  return n;
}

}  // namespace

void remember_nvtx_tables(const void* get_export_table) {
  if (!get_export_table) return;
  const auto get = reinterpret_cast<NvtxGetExportTableFunc_t>(const_cast<void*>(get_export_table));
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS));
  if (!callbacks || callbacks->struct_size < sizeof(NvtxExportTableCallbacks) || !callbacks->GetModuleFunctionTable) return;
  std::vector<NvtxFunctionPointer*> slots;
  for (int module = NVTX_CB_MODULE_CORE; module < NVTX_CB_MODULE_SIZE; ++module) {
    NvtxFunctionTable table = nullptr;
    unsigned int size = 0;
    if (!callbacks->GetModuleFunctionTable(static_cast<NvtxCallbackModule>(module), &table, &size) || !table) continue;
    // Entry 0 is the module's invalid id; 1 .. size-1 point at the copy's function pointers (as
    // NVTX's own initialisation walks them).
    for (unsigned int i = 1; i < size; ++i)
      if (table[i]) slots.push_back(table[i]);
  }
  Remembered& r = remembered();
  std::lock_guard<std::mutex> lock(r.m);
  r.core_slots.insert(r.core_slots.end(), slots.begin(), slots.end());
  if (r.released) release_locked(r);
}

void remember_nvtx_extension(void* module_info) {
  const auto* info = static_cast<const nvtxExtModuleInfo_t*>(module_info);
  if (!info || !info->segments) return;
  Remembered& r = remembered();
  std::lock_guard<std::mutex> lock(r.m);
  for (size_t i = 0; i < info->segmentsCount; ++i) {
    const nvtxExtModuleSegment_t& seg = info->segments[i];
    if (seg.functionSlots && seg.slotCount > 0) r.extension_slots.emplace_back(seg.functionSlots, seg.slotCount);
  }
  if (r.released) release_locked(r);
}

int release_nvtx_tables() {
  Remembered& r = remembered();
  std::lock_guard<std::mutex> lock(r.m);
  r.released = true;
  return release_locked(r);
}

bool nvtx_released() { return remembered().released.load(); }

}  // namespace ss::collector
