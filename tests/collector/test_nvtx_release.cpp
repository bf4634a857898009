// Taking CUPTI out of NVTX at the collector's detach (profiler/collector/cupti/nvtx_release.h),
// against NVTX copies laid out as NVTX lays them out (nvtxDetail/nvtxImpl.h, nvtxExtImplPayload_v1.h):
// per module an array {invalid, &fn_ptr_1, ..., &fn_ptr_n, 0} reached through the export table's
// GetModuleFunctionTable, and extension slots {module state, fn_1, ..., fn_n} handed over in a
// module info that lives on NVTX's stack. The registry is one per process, so the scenario is one
// test case, in order.
#include <catch2/catch.hpp>

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include <cstdint>

#include "profiler/collector/cupti/nvtx_release.h"

namespace {

namespace col = ss::collector;

int tool_calls = 0;
void tool_handler() { ++tool_calls; }  // what CUPTI's handler stands for
const auto kTool = reinterpret_cast<NvtxFunctionPointer>(&tool_handler);

// One copy of NVTX (libtorch's, NCCL's, ...): its function pointers and its tables.
template <int Copy>
struct FakeNvtx {
  static inline NvtxFunctionPointer core[3] = {};
  static inline NvtxFunctionPointer cudart[1] = {};
  static inline NvtxFunctionPointer* core_table[5] = {nullptr, &core[0], &core[1], &core[2], nullptr};
  static inline NvtxFunctionPointer* cudart_table[3] = {nullptr, &cudart[0], nullptr};

  static int NVTX_API module_table(NvtxCallbackModule module, NvtxFunctionTable* out, unsigned int* size) {
    // NVTX's own answer: the table and (its size in pointers) - 1.
    switch (module) {
      case NVTX_CB_MODULE_CORE: *out = core_table; *size = 4; return 1;
      case NVTX_CB_MODULE_CUDART: *out = cudart_table; *size = 2; return 1;
      default: return 0;
    }
  }
  static inline NvtxExportTableCallbacks callbacks{sizeof(NvtxExportTableCallbacks), &module_table};
  static const void* NVTX_API export_table(uint32_t id) { return id == NVTX_ETID_CALLBACKS ? &callbacks : nullptr; }
  static const void* as_arg() { return reinterpret_cast<const void*>(&export_table); }

  static void attach_tool() {  // what cuptiNvtxInitialize2 does with the tables
    for (auto& f : core) f = kTool;
    cudart[0] = kTool;
  }
  static bool all(NvtxFunctionPointer v) { return core[0] == v && core[1] == v && core[2] == v && cudart[0] == v; }
  static void call_a_range() {  // nvtxRangePushA as NVTX implements it: a null pointer is "no tool"
    if (core[1]) core[1]();
  }
};

// NCCL's payload extension: slot 0 is the module's state, then the function slots.
constexpr intptr_t kLoaded = 3, kDisabled = 1;
intptr_t payload_slots[1 + 3];

void hand_over_the_payload_extension() {  // on NVTX's stack, as nvtxExtPayloadInitOnce does
  nvtxExtModuleSegment_t segment{0, 3, payload_slots + 1};
  nvtxExtModuleInfo_t info{};
  info.segmentsCount = 1;
  info.segments = &segment;
  payload_slots[0] = kLoaded;
  for (int i = 1; i <= 3; ++i) payload_slots[i] = reinterpret_cast<intptr_t>(&tool_handler);
  col::remember_nvtx_extension(&info);
}

const void* NVTX_API no_export_table(uint32_t) { return nullptr; }

}  // namespace

TEST_CASE("at the detach every NVTX slot handed to CUPTI is set to 'no tool', and later copies get none",
          "[collector][nvtx]") {
  // Nothing to remember: no crash, nothing kept.
  col::remember_nvtx_tables(nullptr);
  col::remember_nvtx_tables(reinterpret_cast<const void*>(&no_export_table));
  col::remember_nvtx_extension(nullptr);

  FakeNvtx<1>::attach_tool();
  col::remember_nvtx_tables(FakeNvtx<1>::as_arg());
  hand_over_the_payload_extension();
  FakeNvtx<1>::call_a_range();
  CHECK(tool_calls == 1);
  CHECK_FALSE(col::nvtx_released());

  CHECK(col::release_nvtx_tables() == 3 + 1 + 3);  // core, CUDART, the payload extension's functions
  CHECK(col::nvtx_released());
  CHECK(FakeNvtx<1>::all(nullptr));
  CHECK(payload_slots[0] == kLoaded);  // the module's state is NVTX's, left alone
  CHECK(payload_slots[1] == kDisabled);
  CHECK(payload_slots[2] == kDisabled);
  CHECK(payload_slots[3] == kDisabled);
  FakeNvtx<1>::call_a_range();
  CHECK(tool_calls == 1);  // the range went nowhere

  // A copy whose tables reach the registry after the release (an NVTX init racing the detach)
  // is released at once.
  FakeNvtx<2>::attach_tool();
  col::remember_nvtx_tables(FakeNvtx<2>::as_arg());
  CHECK(FakeNvtx<2>::all(nullptr));
  CHECK(col::release_nvtx_tables() == 0);  // nothing left
}
