// CUPTI reports kernel names mangled ("_Z31ncclDevKernel_AllGather_RING_LL24ncclDevKernelArgs...");
// profiles store them demangled, as Nsight Systems and the PyTorch profiler show them.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>

namespace ss::collector {

// The demangled name, or the input when it is not a mangled C++ name.
std::string demangle(std::string_view name);

// Memoised: a job launches the same few hundred kernels millions of times.
class DemangleCache {
 public:
  const std::string& operator()(const std::string& name);

 private:
  std::unordered_map<std::string, std::string> cache_;
};

}  // namespace ss::collector
