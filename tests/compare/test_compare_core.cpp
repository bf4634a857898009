// Alignment and the comparison tables on hand-made profiles (tests/compare/handmade_profiles.h
// lists every event; the expected numbers are worked out in the comments).
#include <catch2/catch.hpp>

#include "profiler/compare/compare_error.h"
#include "profiler/compare/comparison.h"
#include "profiler/compare/interval_set.h"
#include "storage/profile_reader.h"
#include "tests/compare/handmade_profiles.h"
#include "tests/support/test_paths.h"

using namespace ss;
using namespace ss::compare;
using Catch::Matchers::Contains;

namespace {

struct Pair {
  test::TempDir dir;
  Profile a = load_profile(test::write_profile_a(dir.file("a.ssdb")));
  Profile b = load_profile(test::write_profile_b(dir.file("b.ssdb")));
  Profile flat = load_profile(test::write_profile_flat(dir.file("flat.ssdb")));
};

CompareErrorKind error_kind(const Profile& a, const Profile& b, const Alignment& al, std::string* message) {
  try {
    compare_profiles(a, b, al);
  } catch (const CompareError& e) {
    *message = e.what();
    return e.compare_kind();
  }
  FAIL("expected a CompareError");
  return CompareErrorKind::InvalidArgument;
}

}  // namespace

TEST_CASE("interval arithmetic", "[compare]") {
  std::vector<Interval> v{{5, 7}, {1, 3}, {2, 4}, {7, 9}, {10, 10}};
  merge_intervals(v);
  // [1,3)+[2,4) -> [1,4); [5,7)+[7,9) touch -> [5,9); [10,10) is empty and dropped.
  REQUIRE(v == std::vector<Interval>{{1, 4}, {5, 9}});
  CHECK(total_length(v) == 3 + 4);
  // [1,4)&[0,2) = 1, [1,4)&[3,6) = 1, [5,9)&[3,6) = 1, [5,9)&[8,20) = 1.
  CHECK(intersection_length(v, {{0, 2}, {3, 6}, {8, 20}}) == 4);
  CHECK(intersection_length(v, {}) == 0);
  CHECK(union_length({{0, 10}, {2, 3}, {9, 12}}) == 12);
}

TEST_CASE("default alignment is the first common step, and the headline follows the definitions", "[compare]") {
  Pair p;
  const Comparison c = compare_profiles(p.a, p.b, {});
  // A rank 0 has steps {0, 1}, B rank 0 has {1, 2}: the first common step is 1.
  REQUIRE(c.alignment.a.step == 1);
  REQUIRE(c.alignment.b.step == 1);
  CHECK_THAT(c.alignment.description, Contains("step 1 on both sides"));
  CHECK(c.alignment.b_to_a_offset() == 1000 - 500);

  // Step time: A [1000, 11000) = 10000, B [500, 8500) = 8000 -> delta -2000, -20 %.
  CHECK(c.headline.step_time.a == 10000);
  CHECK(c.headline.step_time.b == 8000);
  CHECK(c.headline.step_time.delta() == -2000);
  CHECK(*c.headline.step_time.error_pct() == Approx(-20.0));
  // Compute union: A [1000,3000)+[5000,8000) = 5000 (the step-0 gemm is outside);
  // B [500,2500)+[3000,6000)+[6000,6500) = 2000 + 3500 = 5500.
  CHECK(c.headline.compute.a == 5000);
  CHECK(c.headline.compute.b == 5500);
  // Communication: A [2500,4500)+[9000,10000) = 3000; B [2000,3000)+[7000,8400) = 2400.
  CHECK(c.headline.communication.a == 3000);
  CHECK(c.headline.communication.b == 2400);
  // Exposed: A 3000 - overlap [2500,3000) 500 = 2500; B 2400 - overlap [2000,2500) 500 = 1900;
  // error = -600 / 2500 = -24 %.
  CHECK(c.headline.exposed_communication.a == 2500);
  CHECK(c.headline.exposed_communication.b == 1900);
  CHECK(*c.headline.exposed_communication.error_pct() == Approx(-24.0));
}

TEST_CASE("module table: inclusive union time per module and phase, largest discrepancy first", "[compare]") {
  Pair p;
  const Comparison c = compare_profiles(p.a, p.b, {});
  // A: layers.0 fwd [1000,4000) 3000; layers.0.attn fwd [1500,2500) u [2000,3000) = [1500,3000) 1500
  //    (two ranges on two lanes, counted once per instant); layers.0 bwd 4000; recompute 1000.
  // B: layers.0 fwd 2000; attn fwd 1000; layers.0 bwd 5000; layers.1 fwd 200.
  // |delta|: 1000 (fwd, bwd, recompute: tie broken by fqn then phase order), 500, 200.
  REQUIRE(c.modules.size() == 5);
  struct Expect {
    const char* fqn;
    RangePhase phase;
    TimeNs a, b;
    std::int64_t count_a, count_b;
  };
  const Expect expect[] = {
      {"layers.0", RangePhase::Forward, 3000, 2000, 1, 1},
      {"layers.0", RangePhase::Backward, 4000, 5000, 1, 1},
      {"layers.0", RangePhase::Recompute, 1000, 0, 1, 0},
      {"layers.0.attn", RangePhase::Forward, 1500, 1000, 2, 1},
      {"layers.1", RangePhase::Forward, 0, 200, 0, 1},
  };
  for (std::size_t i = 0; i < 5; ++i) {
    INFO("row " << i);
    CHECK(c.modules[i].fqn == expect[i].fqn);
    CHECK(c.modules[i].phase == expect[i].phase);
    CHECK(c.modules[i].time.a == expect[i].a);
    CHECK(c.modules[i].time.b == expect[i].b);
    CHECK(c.modules[i].count_a == expect[i].count_a);
    CHECK(c.modules[i].count_b == expect[i].count_b);
  }
  CHECK(*c.modules[0].time.error_pct() == Approx(-100.0 / 3.0));  // -1000 / 3000
  // Where each side's first range of the row starts (for "move both timelines there").
  CHECK(c.modules[0].first_a == 1000);
  CHECK(c.modules[0].first_b == 500);
  CHECK(c.modules[3].first_a == 1500);  // attn: [1500, 2500) before the GPU-lane [2000, 3000)
  CHECK_FALSE(c.modules[4].first_a.has_value());
  CHECK(c.modules[4].first_b == 2500);
  CHECK(*c.modules[1].time.error_pct() == Approx(25.0));          // +1000 / 4000
  CHECK_FALSE(c.modules[4].time.error_pct().has_value());         // A is 0: no error %
}

TEST_CASE("kernel and collective tables", "[compare]") {
  Pair p;
  const Comparison c = compare_profiles(p.a, p.b, {});
  // A step 1: gemm 2 x (2000 + 3000) = 5000, ag_kernel 2000, rs_kernel 1000.
  // B step 1: gemm 2000 + 3000 = 5000, softmax 500, ag_kernel 1000, rs_kernel 1400.
  // deltas: ag -1000, softmax +500, rs +400, gemm 0.
  REQUIRE(c.kernels.size() == 4);
  CHECK(c.kernels[0].name == "ag_kernel");
  CHECK(c.kernels[0].time.delta() == -1000);
  CHECK(c.kernels[1].name == "softmax");
  CHECK(c.kernels[1].count_a == 0);
  CHECK(c.kernels[1].count_b == 1);
  CHECK(c.kernels[2].name == "rs_kernel");
  CHECK(c.kernels[2].time.delta() == 400);
  CHECK(c.kernels[3].name == "gemm");
  CHECK(c.kernels[3].count_a == 2);
  CHECK(c.kernels[3].time.a == 5000);
  CHECK(c.kernels[3].time.delta() == 0);

  // Collectives keyed by (type, group, bytes): all-gather 2000 vs 1000, reduce-scatter 1000 vs 1400.
  REQUIRE(c.collectives.size() == 2);
  CHECK(c.collectives[0].type == CollectiveType::AllGather);
  CHECK(c.collectives[0].process_group == "0 (fsdp_shard)");
  CHECK(c.collectives[0].bytes == 1000);
  CHECK(c.collectives[0].count_a == 1);
  CHECK(c.collectives[0].time.a == 2000);
  CHECK(c.collectives[0].time.b == 1000);
  CHECK(c.collectives[1].type == CollectiveType::ReduceScatter);
  CHECK(c.collectives[1].bytes == 2000);
  CHECK(c.collectives[1].time.delta() == 400);
}

TEST_CASE("explicit steps: events belong to the step they start in", "[compare]") {
  Pair p;
  Alignment al;
  al.step_a = 0;
  al.step_b = 2;
  const Comparison c = compare_profiles(p.a, p.b, al);
  CHECK(c.alignment.description.find("step 0 (A) vs step 2 (B)") == 0);
  // A step 0 [0, 1000): only gemm [100, 600); gemm [1000, 3000) starts at the boundary and is step 1's.
  // B step 2 [8500, 9000): no kernel starts there.
  CHECK(c.headline.step_time.a == 1000);
  CHECK(c.headline.step_time.b == 500);
  REQUIRE(c.kernels.size() == 1);
  CHECK(c.kernels[0].count_a == 1);
  CHECK(c.kernels[0].time.a == 500);
  CHECK(c.kernels[0].count_b == 0);
  CHECK(c.modules.empty());

  // Only one side given: the other uses the same number.
  Alignment one;
  one.step_a = 1;
  const Comparison c1 = compare_profiles(p.a, p.b, one);
  CHECK(c1.alignment.b.step == 1);
}

TEST_CASE("missing steps and ranks are clear errors", "[compare]") {
  Pair p;
  std::string msg;
  Alignment al;
  al.step_a = 0;  // B has no step 0
  CHECK(error_kind(p.a, p.b, al, &msg) == CompareErrorKind::NoSuchStep);
  CHECK_THAT(msg, Contains("profile B") && Contains("no step 0") && Contains("its steps: 1, 2"));
  Alignment r;
  r.rank_a = r.rank_b = 1;  // A has ranks 0 and 1, B only 0
  CHECK(error_kind(p.a, p.b, r, &msg) == CompareErrorKind::NoSuchRank);
  CHECK_THAT(msg, Contains("profile B") && Contains("no rank 1") && Contains("its ranks: 0"));
}

TEST_CASE("different rank counts: compare a chosen rank on each side", "[compare]") {
  Pair p;
  Alignment al;
  al.rank_a = 1;
  al.rank_b = 0;
  const Comparison c = compare_profiles(p.a, p.b, al);
  // A rank 1 has step 1 [1000, 2000) with one gemm [1000, 1500); B rank 0 step 1 as before.
  CHECK(c.alignment.a.rank == 1);
  CHECK(c.headline.step_time.a == 1000);
  CHECK(c.headline.step_time.b == 8000);
  CHECK(c.headline.compute.a == 500);
  CHECK_THAT(c.alignment.description, Contains("rank 1 (A) vs rank 0 (B)"));
}

TEST_CASE("profiles without steps or modules use the whole span; module table empty", "[compare]") {
  Pair p;
  const Comparison c = compare_profiles(p.flat, p.flat, {});
  // Whole span: first kernel start 200 to last kernel end 1500.
  CHECK_FALSE(c.alignment.a.step.has_value());
  CHECK(c.alignment.a.start == 200);
  CHECK(c.headline.step_time.a == 1300);
  CHECK(c.modules.empty());
  REQUIRE(c.kernels.size() == 2);
  CHECK(c.kernels[0].time.delta() == 0);
  // Compute: [200,700)+[800,1000) = 700 (the memcpy is not compute); no communication at all.
  CHECK(c.headline.compute.a == 700);
  CHECK(c.headline.exposed_communication.a == 0);
  CHECK_FALSE(c.headline.exposed_communication.error_pct().has_value());

  // A has steps, the flat profile none: no common step -> A's first step vs the flat whole span.
  const Comparison m = compare_profiles(p.a, p.flat, {});
  CHECK(m.alignment.a.step == 0);
  CHECK_FALSE(m.alignment.b.step.has_value());
  CHECK_THAT(m.alignment.description, Contains("no common step number"));
}
