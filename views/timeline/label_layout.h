// Where text labels may go on the timeline: a label is drawn only where it fits inside its box
// and does not overlap a label already drawn on the same row (range, marker, step and selection
// labels would otherwise pile up into an unreadable smear).
#pragma once

#include <cmath>
#include <string>
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

// `text`, or when wider than `width` (by `measure`) its start and its end around "..", as long
// as fits: a row label keeps its rank and what ends it ("rank 0 ..read 6208", "(10 rows)")
// where clipping would cut the end.
template <typename Measure>
std::string elide_middle(const std::string& text, float width, Measure measure) {
  if (text.size() < 4 || measure(text) <= width) return text;
  std::size_t keep = text.size() - 1;
  while (keep > 2) {
    const std::size_t head = (keep + 1) / 2, tail = keep - head;
    std::string s = text.substr(0, head) + ".." + text.substr(text.size() - tail);
    if (measure(s) <= width) return s;
    --keep;
  }
  return text.substr(0, 1) + "..";
}

}  // namespace ss::timeline
