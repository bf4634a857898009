#include "profiler/sim/device_table.h"

#include <algorithm>
#include <cctype>

namespace ss::sim {

const std::vector<DeviceSpec>& device_table() {
  // Peak dense BF16 and HBM figures from NVIDIA's datasheets (resources/models/README.md).
  // achievable_fraction 0.55: a typical sustained fraction for large transformer GEMMs with
  // attention and elementwise work mixed in; replace it with a measured figure when available.
  static const std::vector<DeviceSpec> kDevices = {
      {"H100", "NVIDIA H100 SXM5 80GB", 989.4, 0.55, 3.35, 80},
      {"H200", "NVIDIA H200 SXM 141GB", 989.4, 0.55, 4.8, 141},
      {"A100", "NVIDIA A100 SXM4 80GB", 312.0, 0.55, 2.039, 80},
      {"B200", "NVIDIA B200 (HGX) 180GB", 2250.0, 0.55, 8.0, 180},
  };
  return kDevices;
}

std::optional<DeviceSpec> find_device(const std::string& name) {
  auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
  };
  const std::string n = lower(name);
  for (const auto& d : device_table())
    if (lower(d.name) == n || lower(d.full_name) == n) return d;
  // GPU names as profiles store them ("NVIDIA H100 80GB HBM3").
  for (const auto& d : device_table())
    if (n.find(lower(d.name)) != std::string::npos) return d;
  return std::nullopt;
}

}  // namespace ss::sim
