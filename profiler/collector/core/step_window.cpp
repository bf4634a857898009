#include "profiler/collector/core/step_window.h"

#include <algorithm>
#include <charconv>
#include <string_view>

namespace ss::collector {

std::string StepWindow::text() const {
  return std::to_string(first) + ":" + (end < 0 ? std::string() : std::to_string(end));
}

std::optional<StepWindow> parse_step_window(const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) return std::nullopt;
  auto number = [](std::string_view s, std::int64_t& out) {
    if (s.empty()) return true;  // an open side
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size() && out >= 0;
  };
  StepWindow w;
  const std::string_view all(text);
  if (!number(all.substr(0, colon), w.first) || !number(all.substr(colon + 1), w.end)) return std::nullopt;
  if (colon + 1 == text.size()) w.end = -1;
  else if (w.end <= w.first) return std::nullopt;
  return w;
}

std::int64_t first_captured_step(const char* steps) {
  if (!steps) return 0;
  const auto w = parse_step_window(steps);
  return w ? w->first : 0;
}

bool trace_group_on(const std::string& kinds, const std::string& group) {
  if (kinds.empty()) return group != "overhead";
  if (kinds == "all") return true;
  std::size_t at = 0;
  while (at <= kinds.size()) {
    const std::size_t comma = std::min(kinds.find(',', at), kinds.size());
    if (kinds.compare(at, comma - at, group) == 0) return true;
    at = comma + 1;
  }
  return false;
}

}  // namespace ss::collector
