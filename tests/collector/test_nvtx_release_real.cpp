// nvtx_release.h against NVTX's own implementation (the CUDA toolkit's NVTX 3 headers, compiled into
// this test as into libtorch or NCCL), with a statically injected tool in CUPTI's place
// (nvtx_static_tool.cpp): NVTX initialises, hands its core table and its payload extension's slots
// to the tool, the tool's handlers get the calls; after release_nvtx_tables() the same calls
// return NVTX's "no tool" answers and reach nobody. test_nvtx_release.cpp covers the registry's
// edge cases on hand-made tables.
#include <catch2/catch.hpp>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include "profiler/collector/cupti/nvtx_release.h"
#include "tests/collector/nvtx_static_tool.h"

TEST_CASE("NVTX's own implementation stops calling the tool once its tables are released", "[collector][nvtx]") {
  auto& c = nvtx_static_tool::calls();
  nvtxDomainHandle_t domain = nvtxDomainCreateA("ShardScopeTest");

  CHECK(nvtxRangePushA("before") == 1);  // the tool's answer: its count
  CHECK(nvtxRangePop() == 1);
  CHECK(c.core_inits == 1);
  CHECK(nvtxDomainIsEnabled(domain) == 1);
  CHECK(nvtxRangePushPayload(domain, nullptr, 0) == 1);
  CHECK(c.extension_inits == 1);
  CHECK(c.domain_enabled == 1);

  const int released = ss::collector::release_nvtx_tables();
  CHECK(released >= 2 + 2);  // at least the two core and two payload slots the tool set

  CHECK(nvtxRangePushA("after") < 0);  // NVTX_NO_PUSH_POP_TRACKING: no tool
  CHECK(nvtxRangePop() < 0);
  CHECK(nvtxDomainIsEnabled(domain) == 0);
  CHECK(nvtxRangePushPayload(domain, nullptr, 0) < 0);
  CHECK(c.pushes == 1);
  CHECK(c.pops == 1);
  CHECK(c.payload_pushes == 1);
  CHECK(c.domain_enabled == 1);
  CHECK(c.core_inits == 1);  // and NVTX did not initialise again
  CHECK(c.extension_inits == 1);
}
