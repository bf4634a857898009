#include "profiler/import/nsys/range_names.h"

#include <charconv>

namespace ss::import::nsys {

std::string_view strip_emit_nvtx_suffix(std::string_view name) {
  std::size_t cut = name.size();
  for (std::string_view marker : {std::string_view(", seq = "), std::string_view(", op_id = "),
                                  std::string_view(", sizes = ")}) {
    std::size_t p = name.find(marker);
    if (p != std::string_view::npos && p < cut) cut = p;
  }
  return name.substr(0, cut);
}

FsdpRangeName parse_fsdp_range_name(std::string_view name) {
  FsdpRangeName r;
  constexpr std::string_view prefix = "FSDP::";
  if (name.substr(0, prefix.size()) != prefix) return r;
  name = strip_emit_nvtx_suffix(name);
  std::string_view rest = name.substr(prefix.size());
  std::string_view hook = rest;
  const std::size_t open = rest.find(" (");
  if (open != std::string_view::npos) {
    hook = rest.substr(0, open);
    const std::size_t close = rest.rfind(')');
    if (close != std::string_view::npos && close > open + 2) r.fqn = std::string(rest.substr(open + 2, close - open - 2));
  }
  if (hook == "pre_forward")
    r.hook = FsdpHook::PreForward;
  else if (hook == "post_forward")
    r.hook = FsdpHook::PostForward;
  else if (hook == "pre_backward")
    r.hook = FsdpHook::PreBackward;
  else if (hook == "post_backward")
    r.hook = FsdpHook::PostBackward;
  else
    r.hook = FsdpHook::Other;
  return r;
}

RangePhase phase_of(FsdpHook hook) {
  switch (hook) {
    case FsdpHook::PreForward:
    case FsdpHook::PostForward: return RangePhase::Forward;
    case FsdpHook::PreBackward:
    case FsdpHook::PostBackward: return RangePhase::Backward;
    default: return RangePhase::None;
  }
}

std::optional<std::int64_t> profiler_step_number(std::string_view name) {
  constexpr std::string_view prefix = "ProfilerStep#";
  if (name.substr(0, prefix.size()) != prefix) return std::nullopt;
  name = strip_emit_nvtx_suffix(name.substr(prefix.size()));
  std::int64_t n = 0;
  auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), n);
  if (ec != std::errc() || p != name.data() + name.size() || n < 0) return std::nullopt;
  return n;
}

std::optional<std::string> parent_fqn(std::string_view fqn) {
  if (fqn.empty()) return std::nullopt;
  const std::size_t dot = fqn.rfind('.');
  if (dot == std::string_view::npos) return std::string();
  return std::string(fqn.substr(0, dot));
}

}  // namespace ss::import::nsys
