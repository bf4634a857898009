#include "views/memory/memory_axis.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ss::memview {

ByteUnit byte_unit_for(std::int64_t max_bytes) {
  const double v = static_cast<double>(max_bytes);
  constexpr double kKi = 1024.0;
  if (v >= kKi * kKi * kKi) return {kKi * kKi * kKi, "GiB"};
  if (v >= kKi * kKi) return {kKi * kKi, "MiB"};
  if (v >= kKi) return {kKi, "KiB"};
  return {1, "B"};
}

Ticks nice_ticks(double lo, double hi, int target) {
  Ticks t;
  const double span = hi - lo;
  if (!(span > 0) || target < 1) return t;
  const double raw = span / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / mag;  // in [1, 10)
  const double mult = norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10;
  t.step = mult * mag;
  t.first = std::ceil(lo / t.step - 1e-9) * t.step;
  t.decimals = std::max(0, static_cast<int>(-std::floor(std::log10(t.step) + 1e-9)));
  return t;
}

double nice_ceiling(double hi) {
  if (!(hi > 0)) return 1;
  // The lowest round top over a few tick counts: 107 -> 120 (step 20), not 150 (step 50).
  double best = std::numeric_limits<double>::max();
  for (int target = 4; target <= 8; ++target) {
    const double step = nice_ticks(0, hi, target).step;
    best = std::min(best, std::ceil(hi / step - 1e-9) * step);
  }
  return best;
}

const char* category_label(MemoryCategory c) {
  switch (c) {
    case MemoryCategory::ShardedParameter: return "Sharded parameters";
    case MemoryCategory::UnshardedParameter: return "Unsharded parameters";
    case MemoryCategory::Gradient: return "Gradients";
    case MemoryCategory::OptimizerState: return "Optimizer state";
    case MemoryCategory::Activation: return "Activations";
    case MemoryCategory::AllGatherBuffer: return "All-gather buffers";
    case MemoryCategory::ReduceScatterBuffer: return "Reduce-scatter buffers";
    case MemoryCategory::Temporary: return "Temporary";
    case MemoryCategory::Unknown: break;
  }
  return "Other";
}

MemoryReadout readout_at(const MemorySeries& s, TimeNs t) {
  MemoryReadout r;
  const auto it = std::upper_bound(s.times.begin(), s.times.end(), t);
  if (it == s.times.begin()) return r;
  const auto i = static_cast<std::size_t>(std::prev(it) - s.times.begin());
  r.valid = true;
  r.time = s.times[i];
  for (std::size_t c = 0; c < static_cast<std::size_t>(kMemoryCategoryCount); ++c) {
    r.by_category[c] = s.by_category[c][i];
    r.total += r.by_category[c];
  }
  return r;
}

}  // namespace ss::memview
