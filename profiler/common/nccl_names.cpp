#include "profiler/common/nccl_names.h"

#include "profiler/common/comm_kernels.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>
#include <vector>

namespace ss {
namespace {

std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

bool is_ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// A collective named inside a kernel name ("mscclpp::allreduce7", "AllGatherKernel"), checked
// longest first so "allreduce" is not read as "reduce".
CollectiveType collective_type_in_name(std::string_view name) {
  std::string t;
  for (char c : name)
    if (std::isalpha(static_cast<unsigned char>(c))) t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::array<std::pair<std::string_view, CollectiveType>, 6> kTokens{{
      {"reducescatter", CollectiveType::ReduceScatter},
      {"allreduce", CollectiveType::AllReduce},
      {"allgather", CollectiveType::AllGather},
      {"alltoall", CollectiveType::AllToAll},
      {"broadcast", CollectiveType::Broadcast},
      {"sendrecv", CollectiveType::SendRecv},
  }};
  for (const auto& [k, v] : kTokens)
    if (t.find(k) != std::string::npos) return v;
  return CollectiveType::Unknown;
}

}  // namespace

CollectiveType collective_type_from_label(std::string_view label) {
  std::string s = lower(label);
  if (s.rfind("nccl:", 0) == 0) s.erase(0, 5);
  if (s.rfind("gloo:", 0) == 0) s.erase(0, 5);    // gloo's worker-thread annotations (CPU traces)
  if (s.rfind("c10d::", 0) == 0) s.erase(0, 6);   // the op that issues it: "c10d::_allgather_base_"
  while (!s.empty() && s.back() == '_') s.pop_back();
  if (s.rfind("nccl", 0) == 0) s.erase(0, 4);
  // Drop PyTorch's variant suffixes, then underscores: "_reduce_scatter_base" -> "reducescatter".
  for (std::string_view suffix : {"_into_tensor_coalesced", "_tensor_coalesced", "_into_tensor", "_coalesced",
                                  "_base", "_oop", "_tensor"}) {
    if (auto pos = s.find(suffix); pos != std::string::npos && pos + suffix.size() == s.size()) s.erase(pos);
  }
  if (auto pos = s.find("_into_tensor"); pos != std::string::npos) s.erase(pos);
  std::string t;
  for (char c : s)
    if (std::isalpha(static_cast<unsigned char>(c))) t += c;
  static const std::array<std::pair<std::string_view, CollectiveType>, 15> kMap{{
      {"allreduce", CollectiveType::AllReduce},
      {"allgather", CollectiveType::AllGather},
      {"reducescatter", CollectiveType::ReduceScatter},
      {"broadcast", CollectiveType::Broadcast},
      {"reduce", CollectiveType::Reduce},
      {"alltoall", CollectiveType::AllToAll},
      {"alltoallbase", CollectiveType::AllToAll},
      {"alltoallv", CollectiveType::AllToAll},
      {"sendrecv", CollectiveType::SendRecv},
      {"send", CollectiveType::Send},
      {"recv", CollectiveType::Recv},
      {"gather", CollectiveType::Gather},
      {"scatter", CollectiveType::Scatter},
      {"barrier", CollectiveType::Barrier},
      {"broadcastoop", CollectiveType::Broadcast},
  }};
  for (const auto& [k, v] : kMap)
    if (t == k) return v;
  return CollectiveType::Unknown;
}

NcclKernelInfo classify_nccl_kernel(std::string_view name) {
  NcclKernelInfo info;
  // Find "ncclKernel_", "ncclDevKernel_", "ncclSymDevKernel_" or "ncclSymkDevKernel_" anywhere
  // (mangled names put a length prefix in front, demangled ones "void ").
  static constexpr std::array<std::pair<std::string_view, bool>, 4> kPrefixes{{
      {"ncclSymkDevKernel_", true},
      {"ncclSymDevKernel_", true},
      {"ncclDevKernel_", false},
      {"ncclKernel_", false},
  }};
  std::size_t body = std::string_view::npos;
  for (const auto& [prefix, sym] : kPrefixes) {
    auto pos = name.find(prefix);
    if (pos != std::string_view::npos) {
      body = pos + prefix.size();
      info.symmetric = sym;
      info.rule = std::string(prefix);
      break;
    }
  }
  if (body == std::string_view::npos) {
    if (const CommKernelRule* r = match_comm_kernel(name)) {
      info.is_comm = true;
      info.family = r->family;
      info.rule = r->contains;
      info.type = r->type != CollectiveType::Unknown ? r->type : collective_type_in_name(name);
    }
    return info;
  }
  info.is_comm = true;
  info.family = "nccl";
  std::size_t end = body;
  while (end < name.size() && is_ident(name[end])) ++end;
  std::string_view ident = name.substr(body, end - body);
  // Mangled names run the next length-prefixed token straight on ("..._RING_LL24ncclDevKernelArgs"):
  // cut at the first digit run that is followed by a letter after the last underscore token.
  std::vector<std::string_view> parts;
  for (std::size_t i = 0; i <= ident.size();) {
    std::size_t j = ident.find('_', i);
    if (j == std::string_view::npos) j = ident.size();
    if (j > i) parts.push_back(ident.substr(i, j - i));
    i = j + 1;
  }
  if (!parts.empty()) {
    // Strip a trailing mangling suffix such as "LL24ncclDevKernelArgsStorageILm4096EE".
    std::string_view& last = parts.back();
    for (std::size_t k = 1; k < last.size(); ++k) {
      if (std::isdigit(static_cast<unsigned char>(last[k])) && std::isalpha(static_cast<unsigned char>(last[k - 1]))) {
        std::size_t d = k;
        while (d < last.size() && std::isdigit(static_cast<unsigned char>(last[d]))) ++d;
        if (d < last.size() && std::isalpha(static_cast<unsigned char>(last[d]))) {
          last = last.substr(0, k);
          break;
        }
      }
    }
  }
  if (parts.empty()) return info;
  info.collective = std::string(parts[0]);
  info.type = collective_type_from_label(parts[0]);
  if (parts[0] == "Generic") info.type = CollectiveType::Unknown;
  static constexpr std::array<std::string_view, 8> kAlgos{"RING", "TREE", "COLLNET", "COLLNET_DIRECT",
                                                          "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
  static constexpr std::array<std::string_view, 5> kProtos{"LL", "LL128", "SIMPLE", "LLMC", "LD"};
  static constexpr std::array<std::string_view, 5> kOps{"Sum", "Prod", "Max", "Min", "sum"};
  for (std::size_t i = 1; i < parts.size(); ++i) {
    std::string_view p = parts[i];
    if (std::find(kAlgos.begin(), kAlgos.end(), p) != kAlgos.end() && info.algorithm.empty()) {
      info.algorithm = std::string(p);
    } else if (std::find(kProtos.begin(), kProtos.end(), p) != kProtos.end()) {
      info.protocol = std::string(p);
    } else if (std::find(kOps.begin(), kOps.end(), p) != kOps.end()) {
      info.reduce_op = std::string(p);
      if (i + 1 < parts.size() && dtype_size_bytes(parts[i + 1]) > 0) {
        info.dtype = std::string(parts[++i]);
        // <= 2.18 spells C types with an underscore: "int8_t" splits into "int8" and "t".
        if (i + 1 < parts.size() && parts[i + 1] == "t" && dtype_size_bytes(info.dtype + "_t") > 0) {
          info.dtype += "_t";
          ++i;
        }
      }
    } else if (dtype_size_bytes(p) > 0 && info.dtype.empty() && !info.reduce_op.empty()) {
      info.dtype = std::string(p);
    }
  }
  // ncclKernel_<Coll>_..._Sum_int8_t and friends: the dtype spans two parts ("int8", "t").
  if (info.dtype.empty() && !info.reduce_op.empty()) {
    auto op = name.find("_" + info.reduce_op + "_");
    if (op != std::string_view::npos) {
      std::size_t s = op + info.reduce_op.size() + 2, e = s;
      while (e < name.size() && is_ident(name[e])) ++e;
      std::string_view dt = name.substr(s, e - s);
      if (dtype_size_bytes(dt) > 0) info.dtype = std::string(dt);
    }
  }
  return info;
}

int dtype_size_bytes(std::string_view dtype) {
  std::string s = lower(dtype);
  for (std::string_view prefix : {"torch.", "c10::", "at::", "__nv_"})
    if (s.rfind(prefix, 0) == 0) s.erase(0, prefix.size());
  // C++ spellings that older PyTorch profilers write in "Input type" ("long int", "unsigned char").
  if (s == "long int" || s == "long long" || s == "long long int" || s == "unsigned long" || s == "c10::long")
    return 8;
  if (s == "short int" || s == "unsigned short") return 2;
  if (s == "unsigned char" || s == "signed char") return 1;
  if (s == "unsigned int") return 4;
  static const std::array<std::pair<std::string_view, int>, 40> kSizes{{
      {"float", 4},     {"float32", 4}, {"f32", 4},      {"fp32", 4},     {"double", 8},  {"float64", 8},
      {"f64", 8},       {"half", 2},    {"float16", 2},  {"f16", 2},      {"fp16", 2},    {"bfloat16", 2},
      {"bf16", 2},      {"int8_t", 1},  {"int8", 1},     {"char", 1},     {"uint8_t", 1}, {"uint8", 1},
      {"u8", 1},        {"byte", 1},    {"bool", 1},     {"int32_t", 4},  {"int32", 4},   {"int", 4},
      {"uint32_t", 4},  {"uint32", 4},  {"u32", 4},      {"int64_t", 8},  {"int64", 8},   {"long", 8},
      {"uint64_t", 8},  {"uint64", 8},  {"u64", 8},      {"f8e4m3", 1},   {"f8e5m2", 1},  {"float8_e4m3fn", 1},
      {"float8_e5m2", 1}, {"fp8", 1},   {"short", 2},    {"int16", 2},
  }};
  for (const auto& [k, v] : kSizes)
    if (s == k) return v;
  return 0;
}

}  // namespace ss
