#include "profiler/common/module_range_name.h"

#include <charconv>

namespace ss::collector {

std::optional<ModuleRangeName> parse_module_range_name(std::string_view m) {
  if (m.size() < 7 || m.substr(0, 3) != "ss:" || m[6] != ':') return std::nullopt;
  const auto tag = m.substr(3, 3);
  const auto rest = m.substr(7);
  ModuleRangeName out;
  if (tag == "opt") {
    std::int64_t n = 0;
    auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), n);
    if (ec != std::errc() || p != rest.data() + rest.size() || n < 0) return std::nullopt;
    out.optimizer = true;
    out.phase = RangePhase::Optimizer;
    out.step = n;
    return out;
  }
  if (tag == "fwd")
    out.phase = RangePhase::Forward;
  else if (tag == "bwd")
    out.phase = RangePhase::Backward;
  else if (tag == "rcp")
    out.phase = RangePhase::Recompute;
  else
    return std::nullopt;
  out.fqn = std::string(rest);
  return out;
}

std::string module_range_display_name(std::string_view fqn) { return fqn.empty() ? std::string("(root)") : std::string(fqn); }

}  // namespace ss::collector
