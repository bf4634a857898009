#include "profiler/collector/launcher/record_env.h"

#include "profiler/collector/core/rank_identity.h"

#include <sstream>

extern char** environ;

namespace ss::record {
namespace {

std::string trim(std::string s) {
  auto b = s.find_first_not_of(" \t");
  auto e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

}  // namespace

std::string memory_mode_name(MemoryMode m) {
  switch (m) {
    case MemoryMode::PerTensor: return "per-tensor";
    case MemoryMode::History: return "history";
    case MemoryMode::Segments: return "segments";
    case MemoryMode::Off: return "off";
  }
  return "per-tensor";
}

std::string alloc_conf_with_async_backend(const std::string& conf, std::vector<std::string>& warnings) {
  std::vector<std::string> kept;
  std::stringstream ss(conf);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item = trim(item);
    if (item.empty()) continue;
    const std::string key = trim(item.substr(0, item.find(':')));
    if (key == "backend") {
      if (item.find("cudaMallocAsync") == std::string::npos)
        warnings.push_back("PYTORCH_CUDA_ALLOC_CONF: '" + item + "' replaced by backend:cudaMallocAsync (--memory per-tensor)");
      continue;
    }
    // Options of PyTorch's native caching allocator; cudaMallocAsync rejects or ignores them.
    if (key == "expandable_segments" || key == "max_split_size_mb" || key == "roundup_power2_divisions" ||
        key == "garbage_collection_threshold" || key == "pinned_use_cuda_host_register") {
      if (key != "pinned_use_cuda_host_register") {
        warnings.push_back("PYTORCH_CUDA_ALLOC_CONF: '" + item +
                           "' applies to the native allocator only; dropped for --memory per-tensor (use --memory segments to keep it)");
        continue;
      }
    }
    kept.push_back(item);
  }
  std::string out = "backend:cudaMallocAsync";
  for (const auto& k : kept) out += "," + k;
  return out;
}

RecordEnvironment build_record_env(const std::map<std::string, std::string>& current, const RecordSettings& s) {
  RecordEnvironment r;
  r.env = current;
  auto& e = r.env;
  e["SHARDSCOPE_OUTPUT_DIR"] = s.output_dir;
  e["SHARDSCOPE_MEMORY"] = memory_mode_name(s.memory);
  e["SHARDSCOPE_MODULES"] = s.modules ? "1" : "0";
  e["SHARDSCOPE_BACKWARD_RANGES"] = s.unit_backward_ranges ? "units" : "modules";
  if (s.steps) e["SHARDSCOPE_STEPS"] = s.steps->text();
  else e.erase("SHARDSCOPE_STEPS");
  e.erase(ss::collector::kEnvRankPid);  // a record run from inside a recorded rank records its own ranks
  if (!s.collector_library.empty()) {
    for (const char* var : {"CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH"}) {
      auto it = current.find(var);
      if (it != current.end() && !it->second.empty() && it->second != s.collector_library)
        r.warnings.push_back(std::string(var) + " was set to '" + it->second +
                             "' (another profiler?); replaced by the shardscope collector. CUPTI serves one tool at a time.");
      e[var] = s.collector_library;
    }
    e["SHARDSCOPE_COLLECTOR"] = "1";
  } else {
    e.erase("SHARDSCOPE_COLLECTOR");
  }
  if (!s.python_dir.empty()) {
    auto it = current.find("PYTHONPATH");
    // The folder with sitecustomize.py first, then the one holding the shardscope package.
    const std::string ours = s.python_dir + "/shardscope/_site:" + s.python_dir;
    e["PYTHONPATH"] = (it == current.end() || it->second.empty()) ? ours : ours + ":" + it->second;
  }
  if (s.memory == MemoryMode::PerTensor) {
    auto it = current.find("PYTORCH_CUDA_ALLOC_CONF");
    e["PYTORCH_CUDA_ALLOC_CONF"] = alloc_conf_with_async_backend(it == current.end() ? "" : it->second, r.warnings);
  }
  if (auto it = current.find("NCCL_NVTX_DISABLE"); it != current.end() && it->second == "1")
    r.warnings.push_back("NCCL_NVTX_DISABLE=1: collective sizes and communicators will be unknown (kernel names only)");
  return r;
}

std::map<std::string, std::string> current_environment() {
  std::map<std::string, std::string> out;
  for (char** p = environ; p && *p; ++p) {
    std::string kv(*p);
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    out.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return out;
}

}  // namespace ss::record
