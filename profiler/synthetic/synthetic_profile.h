// A synthetic profile generator for tests and benchmarks: a Llama-style FSDP step pattern
// (per-layer all-gather, forward and backward kernels inside module ranges, reduce-scatter,
// optimizer, memory events) repeated until the requested size. Deterministic for a seed; its
// origin says "synthetic" so it can never be mistaken for a measurement.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace ss {

struct SyntheticSpec {
  int ranks = 2;
  int layers = 8;
  int steps = 2;                  // minimum number of steps
  std::int64_t min_kernels = 0;   // keep adding steps until at least this many kernels in total
  int kernels_per_module = 4;     // compute kernels per module per forward pass
  std::uint64_t seed = 1;
  bool memory = true;
  std::string gpu_name = "NVIDIA H100 80GB HBM3";
};

struct SyntheticStats {
  std::int64_t kernels = 0;
  std::int64_t ranges = 0;
  std::int64_t collectives = 0;
  std::int64_t memory_events = 0;
  std::int64_t steps = 0;
};

SyntheticStats write_synthetic_profile(const std::string& path, const SyntheticSpec& spec,
                                       const std::function<void(double)>& progress = {});

}  // namespace ss
