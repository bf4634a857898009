// Checks the level-of-detail draw lists of one track (views/timeline/span_lod.h) against the exact
// path (draw_items.h) and against the covered time computed from the events, by the rules listed
// at the top of span_lod.h. Shared by the synthetic tests and the real-trace tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "views/timeline/span_lod.h"

namespace ss::test {

// The union of a track's events as disjoint intervals, for the covered time of any window.
class CoveredTime {
 public:
  template <typename Event>
  explicit CoveredTime(const std::vector<Event>& ev) {
    for (const auto& e : ev) {  // in start order
      if (e.end <= e.start) continue;
      if (!iv_.empty() && static_cast<double>(e.start) <= iv_.back().second)
        iv_.back().second = std::max(iv_.back().second, static_cast<double>(e.end));
      else
        iv_.emplace_back(static_cast<double>(e.start), static_cast<double>(e.end));
    }
    prefix_.push_back(0);
    for (const auto& [a, b] : iv_) prefix_.push_back(prefix_.back() + (b - a));
  }
  double before(double t) const {
    const auto it = std::upper_bound(iv_.begin(), iv_.end(), t, [](double v, const auto& p) { return v < p.first; });
    const auto k = static_cast<std::size_t>(it - iv_.begin());  // intervals starting at or before t
    if (k == 0) return 0;
    return prefix_[k - 1] + std::min(t, iv_[k - 1].second) - iv_[k - 1].first;
  }
  double in(double a, double b) const { return before(b) - before(a); }

 private:
  std::vector<std::pair<double, double>> iv_;
  std::vector<double> prefix_;
};

// "" when the level-of-detail items of `ev` (ends sorted) at `vp`, and their density columns
// when `cols` is given, follow the rules; otherwise what differs.
template <typename Event>
std::string lod_mismatch(const std::vector<Event>& ev, const CoveredTime& covered, const timeline::Viewport& vp,
                         const std::vector<timeline::SpanItem>& lod_items, const std::vector<timeline::DensityColumn>* cols) {
  using namespace ss::timeline;
  std::ostringstream err;
  const auto block_ends = build_span_index(ev);
  TimeNs max_duration = 0;
  for (const auto& e : ev) max_duration = std::max(max_duration, e.end - e.start);
  std::vector<SpanItem> exact;
  build_span_items(ev, max_duration, true, vp, exact, kMinVisiblePx, &block_ends);
  if (exact.size() != lod_items.size()) {
    err << "items: exact " << exact.size() << ", level of detail " << lod_items.size();
    return err.str();
  }
  std::size_t hi = 0;  // first event starting after the view
  while (hi < ev.size() && static_cast<double>(ev[hi].start) <= vp.end_ns()) ++hi;
  for (std::size_t i = 0; i < exact.size(); ++i) {
    const SpanItem& a = exact[i];
    const SpanItem& b = lod_items[i];
    const bool last = i + 1 == exact.size();
    const bool past_edge = last && b.first + b.count == hi && a.count >= b.count;  // the fold over the right edge
    if (a.first != b.first || a.x0 != b.x0 || (a.count != b.count && !past_edge)) {
      err << "item " << i << ": exact first " << a.first << " count " << a.count << " x0 " << a.x0 << ", level of detail first "
          << b.first << " count " << b.count << " x0 " << b.x0;
      return err.str();
    }
    if (past_edge)
      for (std::size_t k = b.first + b.count; k < a.first + a.count; ++k)
        if (static_cast<double>(ev[k].start) <= vp.end_ns()) {
          err << "item " << i << " leaves out event " << k << " inside the view";
          return err.str();
        }
    const float want_x1 = b.count == 1 ? a.x1 : detail::clamp_x(vp.x_of(static_cast<double>(ev[b.first + b.count - 1].end)), vp.width_px);
    if (b.x1 != want_x1 || b.x1 < a.x1) {
      err << "item " << i << " (count " << b.count << "): x1 " << b.x1 << ", exact " << a.x1 << ", its last end at " << want_x1;
      return err.str();
    }
  }
  if (!cols) return "";
  // Density: the columns under the folds where events cover time, each within 1/16.
  std::vector<int> want;
  int next_col = 0;
  for (const SpanItem& s : lod_items) {
    if (s.count <= 1) continue;
    const auto [c0, c1] = fold_columns(vp.x_of(static_cast<double>(ev[s.first].start)),
                                       std::max(vp.x_of(static_cast<double>(ev[s.first + s.count - 1].end)), static_cast<double>(s.x1)), next_col, vp);
    for (int c = c0; c < c1; ++c)
      if (covered.in(vp.time_at(c), vp.time_at(c + 1)) > 0) want.push_back(c);
    next_col = std::max(next_col, c1);
  }
  if (cols->size() != want.size()) {
    err << "density: " << cols->size() << " columns, events cover " << want.size();
    for (std::size_t k = 0; k < std::min(cols->size(), want.size()); ++k)
      if (static_cast<int>((*cols)[k].x) != want[k]) {
        err << "; first difference at " << k << ": column " << (*cols)[k].x << ", want " << want[k];
        break;
      }
    return err.str();
  }
  for (std::size_t k = 0; k < cols->size(); ++k) {
    const DensityColumn& col = (*cols)[k];
    const double truth = std::min(1.0, covered.in(vp.time_at(col.x), vp.time_at(col.x + 1)) / vp.ns_per_px);
    if (static_cast<int>(col.x) != want[k] || std::abs(col.busy - truth) > 1.0 / 16 + 1e-6) {
      err << "density column " << col.x << ": " << col.busy << ", covered " << truth;
      return err.str();
    }
  }
  return "";
}

// Both draw lists from the summaries, checked as above; density only where the summaries apply.
template <typename Event>
std::string lod_mismatch(const std::vector<Event>& ev, const timeline::SpanLod& lod, const CoveredTime& covered,
                         const timeline::Viewport& vp) {
  using namespace ss::timeline;
  const auto block_ends = build_span_index(ev);
  std::vector<SpanItem> items;
  build_span_items_lod(ev, lod, block_ends, vp, items);
  if (!lod.applies(vp.ns_per_px)) return lod_mismatch(ev, covered, vp, items, nullptr);
  std::vector<DensityColumn> cols;
  build_density_lod(ev, lod, block_ends, items, vp, cols);
  return lod_mismatch(ev, covered, vp, items, &cols);
}

}  // namespace ss::test
