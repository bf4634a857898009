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

namespace {

constexpr double kUnits[] = {1e9, 1e6, 1e3, 1};
constexpr const char* kNames[] = {"s", "ms", "us", "ns"};

int decimals_for(double step, int unit) {
  const double rel = step / kUnits[unit];
  return rel >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(rel) - 1e-9));
}

// The unit of a tick label: the one of the larger of the time and the step (s, ms, us, ns), or a
// smaller one when that would need more than 4 decimals to tell neighbouring ticks apart.
int tick_unit(double t, double step) {
  const double mag = std::max(std::abs(t), step);
  int u = 0;
  while (u < 3 && mag < kUnits[u]) ++u;
  while (u < 3 && decimals_for(step, u) > 4) ++u;
  return u;
}

}  // namespace

bool tick_needs_base(double t, double step) { return std::abs(t) / kUnits[tick_unit(t, step)] >= 1e4; }

std::string format_compound(double t, double step) {
  std::string out = t < 0 ? "-" : "";
  // Whole nanoseconds, split into s / ms / us / ns down to the largest unit not above the step.
  long long rest = std::llround(std::abs(t));
  int last = 0;
  while (last < 3 && kUnits[last] > step) ++last;
  bool any = false;
  for (int u = 0; u <= last; ++u) {
    const long long unit = static_cast<long long>(kUnits[u]);
    const long long v = rest / unit;
    rest %= unit;
    if (v == 0 && !any && u < last) continue;
    if (any) out += ' ';
    out += std::to_string(v) + " " + kNames[u];
    any = true;
  }
  return out;
}

std::string format_tick(double t, double step) {
  // The decimals are the fewest for which one step changes the text (a 100 ns step in ms needs 4).
  const int u = tick_unit(t, step);
  const int decimals = std::clamp(decimals_for(step, u), 0, 9);
  const double v = std::abs(t) < step * 1e-6 ? 0.0 : t / kUnits[u];  // no "-0.00"
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f %s", decimals, v, kNames[u]);
  return buf;
}

std::string format_since(TimeNs t, TimeNs begin) {
  return format_ns(static_cast<double>(std::max<TimeNs>(0, t - begin)));
}

}  // namespace ss::timeline
