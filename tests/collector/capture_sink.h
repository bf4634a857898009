// An AttributionSink that keeps everything, for the attribution tests.
#pragma once

#include <vector>

#include "profiler/collector/core/attributor.h"

struct CaptureSink : ss::collector::AttributionSink {
  std::vector<ss::collector::ResolvedKernel> kernels;
  std::vector<ss::collector::ResolvedCollective> collectives;
  std::vector<ss::collector::ResolvedRange> ranges;
  std::vector<ss::collector::ResolvedMemory> memory;
  std::vector<ss::collector::ResolvedStep> steps;
  void on_kernel(const ss::collector::ResolvedKernel& k) override { kernels.push_back(k); }
  void on_collective(const ss::collector::ResolvedCollective& c) override { collectives.push_back(c); }
  void on_range(const ss::collector::ResolvedRange& r) override { ranges.push_back(r); }
  void on_memory(const ss::collector::ResolvedMemory& m) override { memory.push_back(m); }
  void on_step(const ss::collector::ResolvedStep& s) override { steps.push_back(s); }
};
