// The visible time window of the timeline: which time sits at x = 0 and how many nanoseconds one
// pixel spans. Times are kept as double nanoseconds so that zooming to a fraction of a
// nanosecond per pixel stays smooth; a double holds integer nanoseconds exactly up to ~104 days.
#pragma once

#include "storage/types.h"

namespace ss::timeline {

struct Viewport {
  double start_ns = 0;    // time at x = 0
  double ns_per_px = 1;   // > 0
  double width_px = 1000; // drawable width of the event area

  double x_of(double t) const { return (t - start_ns) / ns_per_px; }
  double time_at(double x) const { return start_ns + x * ns_per_px; }
  double end_ns() const { return start_ns + width_px * ns_per_px; }

  // Shows [t0, t1] across the full width.
  void fit(double t0, double t1);
  // Multiplies the visible span by `factor` (< 1 zooms in) while the time under `x` stays put.
  // The scale is clamped to [kMinNsPerPx, kMaxNsPerPx].
  void zoom_around(double x, double factor);
  // Moves the view by `dx` pixels (positive: content moves right, the window moves back in time).
  void pan_px(double dx);

  static constexpr double kMinNsPerPx = 0.01;
  static constexpr double kMaxNsPerPx = 1e12;
};

}  // namespace ss::timeline
