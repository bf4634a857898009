#include "storage/types.h"

#include <array>

namespace ss {
namespace {
constexpr std::array<std::string_view, kKernelCategoryCount> kKernelCategory{"compute", "collective", "memcpy",
                                                                             "memset"};
constexpr std::array<std::string_view, kStreamKindCount> kStreamKind{"unknown", "compute", "nccl", "copy"};
constexpr std::array<std::string_view, kRangeKindCount> kRangeKind{"annotation", "module", "fsdp",
                                                                   "cpu_op",     "nccl",   "gpu_annotation"};
constexpr std::array<std::string_view, kRangePhaseCount> kRangePhase{"none", "forward", "backward", "recompute",
                                                                     "optimizer"};
constexpr std::array<std::string_view, kMemoryCategoryCount> kMemoryCategory{
    "unknown",    "sharded_parameter", "unsharded_parameter",   "gradient", "optimizer_state",
    "activation", "all_gather_buffer", "reduce_scatter_buffer", "temporary"};
constexpr std::array<std::string_view, kCollectiveTypeCount> kCollectiveType{
    "unknown", "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all",
    "send_recv", "send", "recv", "gather", "scatter", "barrier"};
constexpr std::array<std::string_view, kOriginKindCount> kOriginKind{"measured", "imported", "simulated",
                                                                     "synthetic"};

template <typename E, std::size_t N>
std::string_view label(const std::array<std::string_view, N>& labels, E v) {
  auto i = static_cast<std::size_t>(v);
  return i < N ? labels[i] : std::string_view{"invalid"};
}

template <typename E, std::size_t N>
std::optional<E> parse(const std::array<std::string_view, N>& labels, std::string_view s) {
  for (std::size_t i = 0; i < N; ++i)
    if (labels[i] == s) return static_cast<E>(i);
  return std::nullopt;
}
}  // namespace

std::string_view to_string(KernelCategory v) { return label(kKernelCategory, v); }
std::string_view to_string(StreamKind v) { return label(kStreamKind, v); }
std::string_view to_string(RangeKind v) { return label(kRangeKind, v); }
std::string_view to_string(RangePhase v) { return label(kRangePhase, v); }
std::string_view to_string(MemoryCategory v) { return label(kMemoryCategory, v); }
std::string_view to_string(CollectiveType v) { return label(kCollectiveType, v); }
std::string_view to_string(OriginKind v) { return label(kOriginKind, v); }
std::optional<OriginKind> origin_kind_from_string(std::string_view s) { return parse<OriginKind>(kOriginKind, s); }
std::optional<RangePhase> range_phase_from_string(std::string_view s) { return parse<RangePhase>(kRangePhase, s); }
std::optional<MemoryCategory> memory_category_from_string(std::string_view s) {
  return parse<MemoryCategory>(kMemoryCategory, s);
}
std::optional<CollectiveType> collective_type_from_string(std::string_view s) {
  return parse<CollectiveType>(kCollectiveType, s);
}

}  // namespace ss
