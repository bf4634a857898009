// Sorting what usually arrives sorted: a trace's events in file order are in time order per
// thread, or a few sorted runs one after another (a lane's module ranges, then its operators).
// Both functions give exactly what the standard sorts give, only faster on such input.
#pragma once

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <vector>

namespace ss {

// True when every element is strictly before the next (`less(a[i], a[i+1])`). std::sort on such
// a range leaves it as it is; on a range with equal neighbours its order among them is its own,
// so only strictly sorted input may skip it.
template <typename It, typename Less>
bool strictly_sorted(It first, It last, Less less) {
  if (first == last) return true;
  for (It next = std::next(first); next != last; ++first, ++next)
    if (!less(*first, *next)) return false;
  return true;
}

// std::stable_sort's result (unique: by `less`, equal elements in input order), found from the
// input's non-decreasing runs: each stretch of short runs is stable-sorted on its own, then the
// long runs and the sorted stretches are merged. O(n) on sorted input; a long sorted run after a
// short unsorted part (a lane's module ranges, then its operators) costs the part's sort and one
// merge. Unsorted input is one stretch: std::stable_sort of the whole.
template <typename It, typename Less>
void stable_sort_runs(It first, It last, Less less) {
  constexpr std::ptrdiff_t kLongRun = 64;    // shorter runs are sorted with their neighbours
  constexpr std::size_t kMaxPieces = 64;     // sorted pieces merged at most; beyond, stable_sort
  std::vector<It> starts{first};  // where each sorted piece begins; `last` ends the last one
  It stretch = last;              // start of the current stretch of short runs (last: none)
  auto close_stretch = [&](It end) {
    if (stretch == last) return;
    std::stable_sort(stretch, end, less);
    stretch = last;
  };
  for (It run = first; run != last;) {
    It end = std::next(run);
    while (end != last && !less(*end, *std::prev(end))) ++end;
    if (std::distance(run, end) >= kLongRun) {
      close_stretch(run);
      if (run != first) starts.push_back(run);
    } else if (stretch == last) {
      stretch = run;
      if (run != first) starts.push_back(run);
    }
    if (starts.size() > kMaxPieces) {
      std::stable_sort(first, last, less);
      return;
    }
    run = end;
  }
  close_stretch(last);
  // Merge neighbouring pieces pairwise until one is left. std::inplace_merge is stable and keeps
  // the left piece's elements before equal ones of the right piece: input order, as stable_sort.
  while (starts.size() > 1) {
    std::vector<It> merged;
    for (std::size_t k = 0; k < starts.size(); k += 2) {
      merged.push_back(starts[k]);
      if (k + 1 < starts.size()) std::inplace_merge(starts[k], starts[k + 1], k + 2 < starts.size() ? starts[k + 2] : last, less);
    }
    starts.swap(merged);
  }
}

}  // namespace ss
