// stable_sort_runs gives std::stable_sort's exact result (equal keys in input order) on every
// shape of input: sorted, reversed, a few runs, a short unsorted part before a long sorted run
// (a lane's module ranges, then its operators), many short runs, all keys equal. strictly_sorted
// is true only when no two neighbours are out of order or equal.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "storage/sorted_runs.h"

namespace {

using Item = std::pair<int, int>;  // (key, input position): the position shows the order of ties
bool by_key(const Item& a, const Item& b) { return a.first < b.first; }

std::vector<Item> tagged(const std::vector<int>& keys) {
  std::vector<Item> v;
  for (int i = 0; i < static_cast<int>(keys.size()); ++i) v.emplace_back(keys[static_cast<std::size_t>(i)], i);
  return v;
}

void check_like_stable_sort(const std::vector<int>& keys) {
  std::vector<Item> expected = tagged(keys), got = tagged(keys);
  std::stable_sort(expected.begin(), expected.end(), by_key);
  ss::stable_sort_runs(got.begin(), got.end(), by_key);
  CHECK(got == expected);
}

}  // namespace

TEST_CASE("stable_sort_runs equals std::stable_sort on every input shape", "[storage][sort]") {
  std::mt19937 rng(7);
  auto keys = [&](int n, int range) {
    std::vector<int> k(static_cast<std::size_t>(n));
    for (int& x : k) x = static_cast<int>(rng() % static_cast<unsigned>(range));
    return k;
  };
  check_like_stable_sort({});
  check_like_stable_sort({5});
  for (int n : {2, 63, 64, 65, 1000, 20000}) {
    INFO("n = " << n);
    std::vector<int> k = keys(n, n / 3 + 1);  // ties
    check_like_stable_sort(k);                // random: many short runs
    std::vector<int> sorted = k;
    std::sort(sorted.begin(), sorted.end());
    check_like_stable_sort(sorted);
    check_like_stable_sort(std::vector<int>(sorted.rbegin(), sorted.rend()));
    check_like_stable_sort(std::vector<int>(static_cast<std::size_t>(n), 3));  // all equal
    // A short unsorted part, then a long sorted run (and the other way round).
    std::vector<int> head = keys(n / 10 + 1, 50), mixed = head;
    mixed.insert(mixed.end(), sorted.begin(), sorted.end());
    check_like_stable_sort(mixed);
    std::vector<int> tail = sorted;
    tail.insert(tail.end(), head.begin(), head.end());
    check_like_stable_sort(tail);
    // A few long sorted runs of overlapping keys (copies of one sorted trace, shifted).
    std::vector<int> runs;
    for (int r = 0; r < 5; ++r)
      for (int x : sorted) runs.push_back(x + r);
    check_like_stable_sort(runs);
    // Long runs between stretches of short ones, more than the pieces merged at most.
    std::vector<int> patchwork;
    for (int r = 0; r < 100; ++r) {
      for (int x = 0; x < 70; ++x) patchwork.push_back(x + r);
      for (int x : keys(5, 20)) patchwork.push_back(x);
    }
    check_like_stable_sort(patchwork);
  }
}

TEST_CASE("strictly_sorted refuses equal neighbours", "[storage][sort]") {
  auto less = [](int a, int b) { return a < b; };
  const std::vector<int> empty, one{1}, strict{1, 2, 5}, tie{1, 2, 2, 5}, down{1, 3, 2};
  CHECK(ss::strictly_sorted(empty.begin(), empty.end(), less));
  CHECK(ss::strictly_sorted(one.begin(), one.end(), less));
  CHECK(ss::strictly_sorted(strict.begin(), strict.end(), less));
  CHECK(!ss::strictly_sorted(tie.begin(), tie.end(), less));
  CHECK(!ss::strictly_sorted(down.begin(), down.end(), less));
}
