// A rank whose device is the CPU (a run without GPUs, collectives over gloo) carries this name in
// ranks.gpu_name; the importer writes it and the simulator and the CLI read it.
#pragma once

#include <string_view>

namespace ss {

inline constexpr std::string_view kCpuDeviceName = "CPU";
inline bool is_cpu_device(std::string_view device_name) { return device_name == kCpuDeviceName; }

}  // namespace ss
