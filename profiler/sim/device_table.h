// Accelerator figures for model descriptions: dense BF16 peak, the achievable fraction used for
// compute estimates, HBM bandwidth and capacity. Sources in resources/models/README.md.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ss::sim {

struct DeviceSpec {
  std::string name;           // "H100"
  std::string full_name;      // "NVIDIA H100 SXM5 80GB"
  double peak_bf16_tflops;    // dense
  double achievable_fraction; // of peak, for transformer GEMM-heavy layers (an assumption; calibrate)
  double hbm_TBps;
  double memory_GiB;
  double achievable_tflops() const { return peak_bf16_tflops * achievable_fraction; }
};

const std::vector<DeviceSpec>& device_table();
// Case-insensitive match on name or full name; nullopt when unknown.
std::optional<DeviceSpec> find_device(const std::string& name);

}  // namespace ss::sim
