#include "storage/units.h"

#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace ss {

std::string format_duration_ns(std::int64_t ns) {
  char buf[48];
  const double v = static_cast<double>(ns);
  const double a = std::fabs(v);
  if (a < 1e3)
    std::snprintf(buf, sizeof buf, "%lld ns", static_cast<long long>(ns));
  else if (a < 1e6)
    std::snprintf(buf, sizeof buf, "%.3g us", v / 1e3);
  else if (a < 1e9)
    std::snprintf(buf, sizeof buf, "%.3f ms", v / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.3f s", v / 1e9);
  return buf;
}

std::string count_of(std::int64_t n, std::string_view singular, std::string_view plural) {
  std::string out = std::to_string(n) + " ";
  if (n == 1) return out.append(singular);
  if (!plural.empty()) return out.append(plural);
  return out.append(singular).append("s");
}

std::string format_bytes(std::int64_t bytes) {
  static constexpr std::array<const char*, 6> kUnits{"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  std::size_t u = 0;
  while (std::fabs(v) >= 1024.0 && u + 1 < kUnits.size()) {
    v /= 1024.0;
    ++u;
  }
  char buf[48];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  else
    std::snprintf(buf, sizeof buf, "%.3g %s", v, kUnits[u]);
  return buf;
}

namespace {

// "12.5 ms" -> (12.5, "ms"): a non-negative finite number and its unit, lower-cased, spaces dropped.
std::optional<std::pair<double, std::string>> number_and_unit(std::string_view text) {
  std::string s(text);
  const char* begin = s.c_str();
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(v) || v < 0) return std::nullopt;
  std::string unit;
  for (const char* p = end; *p; ++p)
    if (!std::isspace(static_cast<unsigned char>(*p))) unit += static_cast<char>(std::tolower(static_cast<unsigned char>(*p)));
  return std::make_pair(v, unit);
}

}  // namespace

std::optional<std::int64_t> parse_bytes(std::string_view text) {
  const auto nu = number_and_unit(text);
  if (!nu) return std::nullopt;
  const auto& [v, unit] = *nu;
  double mult = 1;
  if (unit.empty() || unit == "b") mult = 1;
  else if (unit == "k" || unit == "kb") mult = 1e3;
  else if (unit == "m" || unit == "mb") mult = 1e6;
  else if (unit == "g" || unit == "gb") mult = 1e9;
  else if (unit == "t" || unit == "tb") mult = 1e12;
  else if (unit == "kib") mult = 1024.0;
  else if (unit == "mib") mult = 1024.0 * 1024;
  else if (unit == "gib") mult = 1024.0 * 1024 * 1024;
  else if (unit == "tib") mult = 1024.0 * 1024 * 1024 * 1024;
  else return std::nullopt;
  const double bytes = v * mult;
  if (bytes > 9.2e18) return std::nullopt;
  return static_cast<std::int64_t>(std::llround(bytes));
}

std::optional<std::int64_t> parse_duration_ns(std::string_view text) {
  const auto nu = number_and_unit(text);
  if (!nu) return std::nullopt;
  const auto& [v, unit] = *nu;
  double mult = 1;
  if (unit.empty() || unit == "ns") mult = 1;
  else if (unit == "us" || unit == "\xc2\xb5s") mult = 1e3;
  else if (unit == "ms") mult = 1e6;
  else if (unit == "s") mult = 1e9;
  else return std::nullopt;
  const double ns = v * mult;
  if (ns > 9.2e18) return std::nullopt;
  return static_cast<std::int64_t>(std::llround(ns));
}

}  // namespace ss
