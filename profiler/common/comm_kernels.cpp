#include "profiler/common/comm_kernels.h"

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "profiler/common/nccl_names.h"

namespace ss {
namespace {

// Names as they appear in traces (sources in docs/analyses.md, "Communication kernels").
std::vector<CommKernelRule> builtin_rules() {
  return {
      // DeepSeek's expert-parallel all-to-all (DeepEP): dispatch / combine kernels, in the H800
      // trace as `dpsk::ep::...`, in the open-source library as `deep_ep::...`.
      {"deepep", "dpsk::ep::", CollectiveType::AllToAll},
      {"deepep", "deep_ep::", CollectiveType::AllToAll},
      // NVSHMEM device-initiated communication (used by DeepEP's low-latency mode, Triton-distributed).
      {"nvshmem", "nvshmem", CollectiveType::Unknown},
      // Microsoft's MSCCL++ kernels.
      {"mscclpp", "mscclpp", CollectiveType::Unknown},
      // Custom one-shot / two-shot all-reduce kernels: vLLM / SGLang (`cross_device_reduce_1stage`),
      // PyTorch symmetric memory (`one_shot_all_reduce`, `two_shot_all_reduce`, `multimem_all_reduce`),
      // TensorRT-LLM (`allreduce_fusion_kernel`, `lamport` variants).
      {"custom_allreduce", "cross_device_reduce", CollectiveType::AllReduce},
      {"custom_allreduce", "custom_all_reduce", CollectiveType::AllReduce},
      {"custom_allreduce", "one_shot_all_reduce", CollectiveType::AllReduce},
      {"custom_allreduce", "two_shot_all_reduce", CollectiveType::AllReduce},
      {"custom_allreduce", "multimem_all_reduce", CollectiveType::AllReduce},
      {"custom_allreduce", "allreduce_fusion_kernel", CollectiveType::AllReduce},
  };
}

std::mutex g_mutex;
std::vector<CommKernelRule>* g_rules = nullptr;

std::vector<CommKernelRule> read_rules_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read communication-kernel rules '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    auto rules = parse_comm_kernel_rules(ss.str());
    for (auto& r : rules) r.builtin = false;
    return rules;
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error("communication-kernel rules '" + path + "': " + e.what());
  }
}

std::vector<CommKernelRule>& rules_locked() {
  if (!g_rules) {
    g_rules = new std::vector<CommKernelRule>(builtin_rules());
    if (const char* env = std::getenv("SHARDSCOPE_COMM_KERNELS"); env && *env)
      for (auto& r : read_rules_file(env)) g_rules->push_back(std::move(r));
  }
  return *g_rules;
}

}  // namespace

std::vector<CommKernelRule> parse_comm_kernel_rules(std::string_view text) {
  std::vector<CommKernelRule> out;
  std::istringstream in{std::string(text)};
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream fields(line);
    std::string family, contains, type, extra;
    if (!(fields >> family)) continue;  // blank or comment
    if (!(fields >> contains))
      throw std::invalid_argument("line " + std::to_string(n) + ": expected 'FAMILY SUBSTRING [TYPE]'");
    CommKernelRule r{family, contains, CollectiveType::Unknown, false};
    if (fields >> type) {
      r.type = collective_type_from_label(type);
      if (r.type == CollectiveType::Unknown && type != "unknown")
        throw std::invalid_argument("line " + std::to_string(n) + ": unknown collective type '" + type +
                                    "' (all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv, ...)");
    }
    if (fields >> extra)
      throw std::invalid_argument("line " + std::to_string(n) + ": unexpected '" + extra +
                                  "' (a substring cannot contain spaces)");
    out.push_back(std::move(r));
  }
  return out;
}

std::string format_comm_kernel_rules(const std::vector<CommKernelRule>& rules) {
  std::string out;
  for (const auto& r : rules)
    out += r.family + " " + r.contains + " " + std::string(to_string(r.type)) + (r.builtin ? "" : "  # user") + "\n";
  return out;
}

const std::vector<CommKernelRule>& comm_kernel_rules() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return rules_locked();
}

void add_user_comm_kernel_rules_file(const std::string& path) {
  auto rules = read_rules_file(path);
  std::lock_guard<std::mutex> lock(g_mutex);
  auto& all = rules_locked();
  for (auto& r : rules) all.push_back(std::move(r));
}

const CommKernelRule* match_comm_kernel(std::string_view name, const std::vector<CommKernelRule>& rules) {
  for (const auto& r : rules)
    if (!r.contains.empty() && name.find(r.contains) != std::string_view::npos) return &r;
  return nullptr;
}

const CommKernelRule* match_comm_kernel(std::string_view name) { return match_comm_kernel(name, comm_kernel_rules()); }

}  // namespace ss
