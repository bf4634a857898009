// Taking CUPTI out of NVTX when the collector detaches it (collector.cpp, after a `--steps` window).
//
// NVTX_INJECTION64_PATH names our library, so every copy of NVTX in the job (libtorch's, NCCL's,
// ...) hands its function tables to CUPTI through our InitializeInjectionNvtx* (injection.cpp),
// and from then on calls CUPTI's handlers for every range, mark and NCCL payload. cuptiFinalize
// does not give those tables back, and NVTX has no call to detach a tool: left alone, NCCL's
// per-collective ranges would keep entering a finalized CUPTI (which may attach itself again, the
// slowdown the detach is for). So the tables are remembered as they are handed over, and just
// before cuptiFinalize every slot is set to what NVTX itself uses for "no tool": a null function
// pointer in the core modules, NVTX_EXTENSION_DISABLED in extension modules. NVTX calls then
// return at once.
//
// No CUPTI call here (tested without a GPU: tests/collector/test_nvtx_release.cpp).
#pragma once

namespace ss::collector {

// From InitializeInjectionNvtx / InitializeInjectionNvtx2: `get_export_table` is that NVTX copy's
// NvtxGetExportTableFunc_t. The addresses of its slots are kept (they are the copy's globals).
// After release_nvtx_tables(), the new copy's slots are released at once.
void remember_nvtx_tables(const void* get_export_table);
// From InitializeInjectionNvtxExtension: `module_info` is an nvtxExtModuleInfo_t that NVTX builds on
// its stack, so its segments' slot arrays (globals) are copied out now.
void remember_nvtx_extension(void* module_info);
// Sets every remembered slot to "no tool"; returns how many slots it set. Later calls release only
// what was remembered since.
int release_nvtx_tables();
// True once release_nvtx_tables() ran: an NVTX copy that initialises later must not reach CUPTI.
bool nvtx_released();

}  // namespace ss::collector
