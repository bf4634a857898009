// The environment `shardscope record` gives the recorded command. Pure: takes the current
// environment and the settings, returns the new one plus warnings, so it is unit-tested.
//   SHARDSCOPE_OUTPUT_DIR     where every rank writes <stem>.ssdb / <stem>.modules.tsv
//   SHARDSCOPE_MEMORY         history (default) | per-tensor | segments | off
//   SHARDSCOPE_MODULES        1 | 0 (--no-modules)
//   SHARDSCOPE_BACKWARD_RANGES modules (default) | units (--backward-ranges)
//   SHARDSCOPE_COLLECTOR      1 when the CUPTI collector is injected
//   SHARDSCOPE_STEPS          A:B with --steps (the capture window; removed without it)
//   CUDA_INJECTION64_PATH     the collector library (the driver loads it at cuInit)
//   NVTX_INJECTION64_PATH     the same library (NVTX in libtorch / libnccl reaches CUPTI through it)
//   PYTHONPATH                the shardscope package first, so its sitecustomize runs at startup
//   PYTORCH_CUDA_ALLOC_CONF   per-tensor: backend:cudaMallocAsync, the user's other options kept
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "profiler/collector/core/step_window.h"

namespace ss::record {

// History (the default): the job's own allocator, per-tensor events from its history
// (allocator_history.h); nothing the job sees changes. PerTensor: PyTorch's cudaMallocAsync backend,
// one CUPTI record per tensor; on an H100 that changed the job's own max_memory_allocated (-1.4 %,
// and 5x with activation checkpointing) and its step time (docs/gpu-runs.md), so it is opt-in.
// Segments: the native allocator's cudaMalloc segments only. Off: none.
enum class MemoryMode { PerTensor, History, Segments, Off };

using collector::parse_step_window;  // record --steps A:B (core/step_window.h)
using collector::StepWindow;

struct RecordSettings {
  std::string output_dir;
  MemoryMode memory = MemoryMode::History;
  bool modules = true;
  bool unit_backward_ranges = false;  // --backward-ranges units: backward ranges for FSDP units only
  std::optional<StepWindow> steps;  // --steps A:B; every step profiled without it
  std::string collector_library;  // "" when the collector is not available
  std::string python_dir;         // contains shardscope/ and sitecustomize.py
};

struct RecordEnvironment {
  std::map<std::string, std::string> env;
  std::vector<std::string> warnings;
};

RecordEnvironment build_record_env(const std::map<std::string, std::string>& current, const RecordSettings& settings);

// "a:b,backend:native,c:d" with backend forced to cudaMallocAsync; options that only the native
// allocator understands are dropped with a warning.
std::string alloc_conf_with_async_backend(const std::string& conf, std::vector<std::string>& warnings);

std::map<std::string, std::string> current_environment();
std::string memory_mode_name(MemoryMode m);

}  // namespace ss::record
