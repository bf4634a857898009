// A stand-in for CUPTI as an NVTX tool, linked statically into test_nvtx_release_real (NVTX's
// static-injection hook: InitializeInjectionNvtx2_fnptr / InitializeInjectionNvtxExtension_fnptr).
// Like CUPTI it writes its handlers into the tables NVTX hands it; like our injection.cpp it then
// hands the tables to the collector's NVTX registry (nvtx_release.h).
#pragma once

namespace nvtx_static_tool {

struct Calls {
  int core_inits = 0, extension_inits = 0;
  int pushes = 0, pops = 0, payload_pushes = 0, domain_enabled = 0;
};
Calls& calls();

}  // namespace nvtx_static_tool
