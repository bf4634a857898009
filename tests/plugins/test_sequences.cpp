// The frequent-sequence finder of the annotations analysis (plugins/builtin/annotations/
// sequences.h) on name lists whose answers are worked out by hand; every item lasts 1 ns and
// item i starts at i, so GPU time covered = number of items covered.
#include <catch2/catch.hpp>

#include "plugins/builtin/annotations/sequences.h"

using namespace ss::analysis;

namespace {

StreamItems stream(const std::string& names, std::int64_t id = 1) {
  StreamItems s{id, 0, {}};
  std::int64_t t = 0;
  for (char c : names) s.items.push_back({c, t, t + 1}), ++t;
  return s;
}

std::string text(const Sequence& s) {
  std::string out;
  for (auto n : s.names) out += static_cast<char>(n);
  return out;
}

}  // namespace

TEST_CASE("a loop is listed once, not as its rotations", "[plugins][sequences]") {
  // ABCABCABCD: ABC at 0, 3, 6; BCA at 1, 4 and CAB at 2, 5 cover only items ABC covers.
  auto v = frequent_sequences({stream("ABCABCABCD")});
  REQUIRE(v.size() == 1);
  CHECK(text(v[0]) == "ABC");
  CHECK(v[0].occurrences == 3);
  CHECK(v[0].gpu_ns == 9);
  CHECK(v[0].span_ns == 9);  // three spans of 3
}

TEST_CASE("occurrences are counted non-overlapping and periodic runs are not repeated", "[plugins][sequences]") {
  // ABABABAB: ABA at 0, (2 overlaps), 4 -> 2; BAB at 1, (3), 5 -> 2, 4 of its 6 items already
  // under ABA -> hidden. ABAB and longer have period 2 -> dropped.
  auto v = frequent_sequences({stream("ABABABAB")});
  REQUIRE(v.size() == 1);
  CHECK(text(v[0]) == "ABA");
  CHECK(v[0].occurrences == 2);
  // AAAAAAA: AAA at 0, 3 (6 would need 9 items) -> 2; AAAA.. are periodic.
  auto a = frequent_sequences({stream("AAAAAAA")});
  REQUIRE(a.size() == 1);
  CHECK(text(a[0]) == "AAA");
  CHECK(a[0].occurrences == 2);
}

TEST_CASE("a sub-run that also repeats elsewhere is listed; one seen once is not", "[plugins][sequences]") {
  // Stream 1: XYZW XYZW; stream 2: XYZ XYZ XYZ (with separators Q, R).
  // XYZW: 2 occurrences (8 items). XYZ: 2 on stream 1 + 3 on stream 2 = 5 (15 items), 6 of them
  // under XYZW -> listed first anyway (15 > 8 items). Then XYZW: its 8 items, 6 under XYZ -> hidden.
  auto v = frequent_sequences({stream("XYZWXYZW", 1), stream("XYZQXYZRXYZ", 2)});
  REQUIRE(!v.empty());
  CHECK(text(v[0]) == "XYZ");
  CHECK(v[0].occurrences == 5);
  CHECK(v[0].streams == 2);
  for (const auto& s : v) CHECK(text(s) != "XYZW");
  // Nothing repeats: no sequence.
  CHECK(frequent_sequences({stream("ABCDEFGH")}).empty());
}
