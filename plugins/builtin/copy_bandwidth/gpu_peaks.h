// Peak data-path bandwidths of common data-centre GPUs, in GB/s (10^9 bytes/s), per direction,
// for copy-bandwidth's percentage of peak. Matched on the profile's GPU name (case-insensitive
// substring, first match wins, so the more specific names come first); an unknown GPU gets no
// percentage. Sources (vendor data sheets; PCIe from the link rate):
//   V100:  NVIDIA Tesla V100 data sheet: HBM2 900 GB/s; NVLink 2 300 GB/s total (150 per direction);
//          PCIe 3.0 x16 = 8 GT/s x 16 lanes x 128/130 / 8 = 15.75 GB/s per direction.
//   A100:  NVIDIA A100 data sheet: 40 GB HBM2 1555 GB/s, 80 GB HBM2e 2039 GB/s (SXM); NVLink 3
//          600 GB/s total (300 per direction); PCIe 4.0 x16 = 31.5 GB/s per direction.
//          A800: NVLink limited to 400 GB/s total (200 per direction).
//   H100:  NVIDIA H100 data sheet: SXM5 HBM3 3350 GB/s, NVLink 4 900 GB/s total (450 per
//          direction); PCIe card HBM2e 2000 GB/s, NVLink bridge 600 GB/s (300); PCIe 5.0 x16 =
//          63 GB/s per direction. H800: NVLink 400 GB/s total (200 per direction).
//   H200:  NVIDIA H200 data sheet: HBM3e 4800 GB/s; NVLink 900 GB/s (450); PCIe 5.0 63 GB/s.
//   B200:  NVIDIA HGX B200 data sheet: HBM3e 8 TB/s per GPU; NVLink 5 1.8 TB/s total (900 per
//          direction); host link taken as PCIe 5.0 x16, 63 GB/s (what current hosts offer; the
//          GPU supports PCIe 6.0). GB200 (host link NVLink-C2C) is not in the table.
//   A100 40 GB vs 80 GB: told apart by the rank's GPU memory size (the 40 GB parts report about
//   39.4 GiB), since names such as "A100-PG509-200" or "A100-SXM4" do not say.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>

namespace ss::analysis {

struct GpuPeaks {
  const char* name;   // the table entry that matched, e.g. "A100 80GB"
  double hbm = 0;     // device memory bandwidth
  double nvlink = 0;  // GPU-to-GPU per direction
  double pcie = 0;    // host link per direction
};

inline bool contains_ci(std::string_view hay, std::string_view needle) {
  auto it = std::search(hay.begin(), hay.end(), needle.begin(), needle.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
  return it != hay.end();
}

// nullptr when the GPU is not in the table.
inline const GpuPeaks* gpu_peaks(std::string_view gpu_name, std::int64_t memory_bytes) {
  static const GpuPeaks kB200{"B200", 8000, 900, 63};
  static const GpuPeaks kH200{"H200", 4800, 450, 63};
  static const GpuPeaks kH800{"H800", 3350, 200, 63};
  static const GpuPeaks kH100Pcie{"H100 PCIe", 2000, 300, 63};
  static const GpuPeaks kH100{"H100 SXM", 3350, 450, 63};
  static const GpuPeaks kA800{"A800", 2039, 200, 31.5};
  static const GpuPeaks kA100_80{"A100 80GB", 2039, 300, 31.5};
  static const GpuPeaks kA100_40{"A100 40GB", 1555, 300, 31.5};
  static const GpuPeaks kV100{"V100", 900, 150, 15.75};
  if (contains_ci(gpu_name, "GB200")) return nullptr;
  if (contains_ci(gpu_name, "B200")) return &kB200;
  if (contains_ci(gpu_name, "H200")) return &kH200;
  if (contains_ci(gpu_name, "H800")) return &kH800;
  if (contains_ci(gpu_name, "H100")) return contains_ci(gpu_name, "PCIe") ? &kH100Pcie : &kH100;
  if (contains_ci(gpu_name, "A800")) return &kA800;
  if (contains_ci(gpu_name, "A100")) {
    if (contains_ci(gpu_name, "80GB")) return &kA100_80;
    if (contains_ci(gpu_name, "40GB")) return &kA100_40;
    return memory_bytes > (std::int64_t{60} << 30) ? &kA100_80 : &kA100_40;
  }
  if (contains_ci(gpu_name, "V100")) return &kV100;
  return nullptr;
}

}  // namespace ss::analysis
