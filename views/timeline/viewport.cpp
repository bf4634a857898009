#include "views/timeline/viewport.h"

#include <algorithm>

namespace ss::timeline {

void Viewport::fit(double t0, double t1) {
  if (t1 <= t0) t1 = t0 + 1;
  start_ns = t0;
  ns_per_px = std::clamp((t1 - t0) / std::max(1.0, width_px), kMinNsPerPx, kMaxNsPerPx);
}

void Viewport::zoom_around(double x, double factor) {
  const double anchor = time_at(x);
  ns_per_px = std::clamp(ns_per_px * factor, kMinNsPerPx, kMaxNsPerPx);
  start_ns = anchor - x * ns_per_px;
}

void Viewport::pan_px(double dx) { start_ns -= dx * ns_per_px; }

}  // namespace ss::timeline
