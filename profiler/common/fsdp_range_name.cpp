#include "profiler/common/fsdp_range_name.h"

namespace ss {

std::string_view strip_fsdp_group_suffix(std::string_view name) {
  constexpr std::string_view open = " [pg=";
  if (name.empty() || name.back() != ']') return name;
  const std::size_t at = name.rfind(open);
  if (at == std::string_view::npos) return name;
  const std::string_view digits = name.substr(at + open.size(), name.size() - at - open.size() - 1);
  if (digits.empty()) return name;
  for (char c : digits)
    if (c < '0' || c > '9') return name;
  return name.substr(0, at);
}

}  // namespace ss
