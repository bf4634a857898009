// The peak-bandwidth table of copy-bandwidth (plugins/builtin/copy_bandwidth/gpu_peaks.h): names
// as the importers record them map to the right entry, and unknown GPUs to none.
#include <catch2/catch.hpp>
#include <string>

#include "plugins/builtin/copy_bandwidth/gpu_peaks.h"

using namespace ss::analysis;

namespace {
std::string entry(const char* name, std::int64_t memory = 0) {
  const GpuPeaks* g = gpu_peaks(name, memory);
  return g ? g->name : "(none)";
}
}  // namespace

TEST_CASE("GPU names map to their peak bandwidths", "[plugins][copy]") {
  // The A100 in the DDP trace says neither 40 nor 80 GB in its name: its 39.4 GiB decide.
  CHECK(entry("NVIDIA A100-PG509-200", 42297524224) == "A100 40GB");
  CHECK(entry("NVIDIA A100-SXM4-80GB") == "A100 80GB");
  CHECK(entry("NVIDIA A100-SXM4", std::int64_t{80} << 30) == "A100 80GB");
  CHECK(entry("Tesla V100-SXM2-16GB") == "V100");
  CHECK(entry("NVIDIA H100 80GB HBM3") == "H100 SXM");
  CHECK(entry("NVIDIA H100 PCIe") == "H100 PCIe");
  CHECK(entry("NVIDIA H800") == "H800");
  CHECK(entry("NVIDIA H200") == "H200");
  CHECK(entry("NVIDIA B200") == "B200");
  CHECK(entry("NVIDIA GB200") == "(none)");
  CHECK(entry("NVIDIA GeForce RTX 4090") == "(none)");
  CHECK(entry("") == "(none)");
  const GpuPeaks* a = gpu_peaks("nvidia a100-sxm4-40gb", 0);  // case does not matter
  REQUIRE(a);
  CHECK(a->hbm == 1555);
  CHECK(a->pcie == 31.5);
  CHECK(a->nvlink == 300);
}
