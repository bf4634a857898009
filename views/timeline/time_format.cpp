#include "views/timeline/time_format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ss::timeline {

std::string format_ns(double ns) {
  char buf[64];
  const double a = std::abs(ns);
  if (a >= 1e9)
    std::snprintf(buf, sizeof buf, "%.3f s", ns / 1e9);
  else if (a >= 1e6)
    std::snprintf(buf, sizeof buf, "%.3f ms", ns / 1e6);
  else if (a >= 1e3)
    std::snprintf(buf, sizeof buf, "%.2f us", ns / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.0f ns", ns);
  return buf;
}

double nice_step(double target) {
  target = std::max(target, 1.0);  // times are integer nanoseconds: finer ticks say nothing
  const double p = std::pow(10.0, std::floor(std::log10(target)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (p * m >= target * (1 - 1e-12)) return p * m;
  return p * 10;
}

std::string format_tick(double t, double step) {
  // The unit follows the larger of the time and the step (s, ms, us, ns); the decimals are the
  // fewest for which one step changes the text (a 100 ns step in ms needs 4). More than 4
  // decimals read badly, so such labels drop to the next smaller unit.
  static constexpr double kUnits[] = {1e9, 1e6, 1e3, 1};
  static constexpr const char* kNames[] = {"s", "ms", "us", "ns"};
  const double mag = std::max(std::abs(t), step);
  int u = 0;
  while (u < 3 && mag < kUnits[u]) ++u;
  auto decimals_for = [&](int unit) {
    const double rel = step / kUnits[unit];
    return rel >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(rel) - 1e-9));
  };
  while (u < 3 && decimals_for(u) > 4) ++u;
  const int decimals = std::clamp(decimals_for(u), 0, 9);
  const double v = std::abs(t) < step * 1e-6 ? 0.0 : t / kUnits[u];  // no "-0.00"
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f %s", decimals, v, kNames[u]);
  return buf;
}

std::string format_since(TimeNs t, TimeNs begin) {
  return format_ns(static_cast<double>(std::max<TimeNs>(0, t - begin)));
}

}  // namespace ss::timeline
