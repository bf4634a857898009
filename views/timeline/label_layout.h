// Where text labels may go on the timeline: a label is drawn only where it fits inside its box
// and does not overlap a label already drawn on the same row (range, marker, step and selection
// labels would otherwise pile up into an unreadable smear).
#pragma once

#include <cmath>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ss::timeline {

class LabelRows {
 public:
  void clear() { rows_.clear(); }
  // Reserves [x0, x1) on the row at `y` and returns true when that span overlaps no label placed
  // there before; otherwise places nothing and returns false.
  bool place(float y, float x0, float x1) {
    auto& row = rows_[static_cast<long>(std::lround(y))];
    for (const auto& [a, b] : row)
      if (x0 < b && a < x1) return false;
    row.emplace_back(x0, x1);
    return true;
  }

 private:
  std::unordered_map<long, std::vector<std::pair<float, float>>> rows_;
};

// True when a label `text_width` wide fits in the box [x0, x1] with `pad` on each side.
inline bool label_fits(float text_width, float x0, float x1, float pad = 3.0f) { return text_width + 2 * pad <= x1 - x0; }

}  // namespace ss::timeline
