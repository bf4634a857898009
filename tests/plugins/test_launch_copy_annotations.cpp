// launch-stats, copy-bandwidth and annotations (issue 14, items 5-7) on the hand-made profile of
// launch_profile.cpp: every expected number is worked out on paper in the comment next to it
// (times in us, x 1000 for ns).
#include <catch2/catch.hpp>
#include <cmath>

#include "plugins/host/plugin_host.h"
#include "storage/profile_reader.h"
#include "storage/sqlite_handle.h"
#include "tests/plugins/launch_profile.h"
#include "tests/plugins/builtin_runner.h"
#include "tests/plugins/result_access.h"
#include "tests/support/test_paths.h"

using namespace ss;
using namespace ss::plugins;
using namespace ss::test;

namespace {

constexpr std::int64_t us = 1000;

struct Hand {
  TempDir dir;
  Profile with, without;
  Hand() {
    write_launch_profile(dir.file("with.ssdb"), true);
    write_launch_profile(dir.file("without.ssdb"), false);
    with = load_profile(dir.file("with.ssdb"));
    without = load_profile(dir.file("without.ssdb"));
  }
};

const CounterTrack& track(const AnalysisResult& r, const std::string& name, int rank) {
  for (const auto& c : r.counters)
    if (c.name == name && c.rank == rank) return c;
  FAIL("no counter track '" << name << "' for rank " << rank);
  throw std::logic_error("unreachable");
}

bool mentions(const AnalysisResult& r, const std::string& text) {
  for (const auto& f : r.findings)
    if (f.message.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("the three issue-14 analyses are built-ins", "[plugins]") {
  for (const char* n : {"launch-stats", "copy-bandwidth", "annotations"}) {
    INFO(n);
    CHECK(builtins().find(n) != nullptr);
  }
}

TEST_CASE("launch-stats: call, delay, queue depth and blocked time on the hand-made profile", "[plugins][launch]") {
  Hand h;
  AnalysisResult r = run_ok("launch-stats", h.with);
  const auto& t = table_of(r, "per_stream");
  REQUIRE(t.rows.size() == 1);  // only stream 7 has launch records
  const auto& s = t.rows[0];
  CHECK(int_at(t, s, "rank") == 0);
  CHECK(int_at(t, s, "stream") == 7);
  CHECK(int_at(t, s, "launches") == 10);
  // Calls: nine of 5 and k4's 55 -> mean 100/10 = 10; nearest-rank p50 = 5th of 10 sorted = 5;
  // p99 = 10th = 55.
  CHECK(int_at(t, s, "call_mean_ns") == 10 * us);
  CHECK(int_at(t, s, "call_p50_ns") == 5 * us);
  CHECK(int_at(t, s, "call_p99_ns") == 55 * us);
  CHECK(int_at(t, s, "call_max_ns") == 55 * us);
  // Delays (kernel start - call start): k1 10, k2 25, k3 40, k4 55, k5 20, k6 35, k7 10, k8 25,
  // k9 40, k10 35; sorted 10 10 20 25 25 35 35 40 40 55: sum 295 -> mean 29.5; p50 = 5th = 25;
  // p99 = 10th = 55.
  CHECK(int_at(t, s, "delay_mean_ns") == 29'500);
  CHECK(int_at(t, s, "delay_p50_ns") == 25 * us);
  CHECK(int_at(t, s, "delay_p99_ns") == 55 * us);
  CHECK(int_at(t, s, "delay_max_ns") == 55 * us);
  // Queue: +1 at each call start, -1 at each kernel end. 0,5,10,15 -> 1,2,3,4 (k4's call starts
  // with k1..k3 in flight: the maximum, 4).
  CHECK(int_at(t, s, "max_queue_depth") == 4);
  // Blocked: the median call is 5, so a blocked call takes >= 50; k4's call takes 55 with the
  // queue at 4 >= 0.9 x 4: one blocked call, 55 - 5 = 50 blocked.
  CHECK(int_at(t, s, "blocked_calls") == 1);
  CHECK(int_at(t, s, "blocked_ns") == 50 * us);

  // The queue-depth counter, point by point: 0:1 5:2 10:3 15:4 30:3 (k1 ends) 50:2 70:2 (k3 ends,
  // k5's call starts) 75:3 90:2 110:1 130:0 200:1 205:2 210:3 230:2 235:3 250:2 270:1 280:0.
  const CounterTrack& q = track(r, "launch queue stream 7", 0);
  CHECK(q.unit == "kernels");
  const std::vector<std::pair<TimeNs, double>> expected = {
      {0, 1},        {5 * us, 2},   {10 * us, 3},  {15 * us, 4},  {30 * us, 3},  {50 * us, 2},  {70 * us, 2},
      {75 * us, 3},  {90 * us, 2},  {110 * us, 1}, {130 * us, 0}, {200 * us, 1}, {205 * us, 2}, {210 * us, 3},
      {230 * us, 2}, {235 * us, 3}, {250 * us, 2}, {270 * us, 1}, {280 * us, 0}};
  CHECK(q.points == expected);

  // Outliers: the longest delay is k4's (55, call at 15, kernel at 70); the longest call is k4's
  // too, blocked.
  const auto& o = table_of(r, "outliers");
  const auto& d0 = o.rows[0];
  CHECK(text_at(o, d0, "by") == "delay");
  CHECK(int_at(o, d0, "delay_ns") == 55 * us);
  CHECK(int_at(o, d0, "launch_time_ns") == 15 * us);
  CHECK(int_at(o, d0, "kernel_time_ns") == 70 * us);
  CHECK(int_at(o, d0, "queue_depth") == 4);
  CHECK(o.rows.size() == 20);  // 10 by delay, 10 by call
  const auto& c0 = row_where(o, "by", "call");
  CHECK(int_at(o, c0, "call_ns") == 55 * us);
  CHECK(text_at(o, c0, "blocked") == "yes");
  CHECK(text_at(o, c0, "api") == "cudaLaunchKernel");
  CHECK(r.markers.size() == 20);
  REQUIRE(mentions(r, "blocked on a full launch queue for 50 us"));
  for (const auto& f : r.findings)
    if (f.severity == Severity::Warning) CHECK(f.range == std::pair<TimeNs, TimeNs>{15 * us, 70 * us});

  SECTION("a window") {
    // Calls starting in [190, 300]: k7..k10; delays 10 25 40 35 -> mean 27.5, p50 = 2nd of 4 = 25;
    // depth in the window peaks at 3 (210 and 235); k4's blocked call is outside.
    Selection sel;
    sel.from = 190 * us;
    sel.to = 300 * us;
    AnalysisResult w = run_ok("launch-stats", h.with, sel);
    const auto& tw = table_of(w, "per_stream");
    REQUIRE(tw.rows.size() == 1);
    CHECK(int_at(tw, tw.rows[0], "launches") == 4);
    CHECK(int_at(tw, tw.rows[0], "delay_mean_ns") == 27'500);
    CHECK(int_at(tw, tw.rows[0], "delay_p50_ns") == 25 * us);
    CHECK(int_at(tw, tw.rows[0], "max_queue_depth") == 3);
    CHECK(int_at(tw, tw.rows[0], "blocked_calls") == 0);
    // The counter starts with the depth at the window's start (0: everything before ended at 130).
    const CounterTrack& qw = track(w, "launch queue stream 7", 0);
    REQUIRE(!qw.points.empty());
    CHECK(qw.points.front() == std::pair<TimeNs, double>{190 * us, 0});
  }
  SECTION("a window without launch calls says so") {
    Selection late;
    late.from = 1000 * us;  // after the last call (235 us)
    AnalysisResult w = run_ok("launch-stats", h.with, late);
    CHECK(table_of(w, "per_stream").rows.empty());
    CHECK(mentions(w, "no launch records in the selection"));
  }
  SECTION("a file without launch records says so") {
    AnalysisResult old = run_ok("launch-stats", h.without);
    CHECK(old.tables.empty());
    CHECK(mentions(old, "no launch records (no 'launches' table"));
    // An empty table (a source without launch calls) is told apart.
    write_launch_profile(h.dir.file("empty.ssdb"));
    sql::Db(h.dir.file("empty.ssdb"), SQLITE_OPEN_READWRITE).exec("DELETE FROM launches");
    AnalysisResult empty = run_ok("launch-stats", load_profile(h.dir.file("empty.ssdb")));
    CHECK(empty.tables.empty());
    CHECK(mentions(empty, "its 'launches' table is empty"));
  }
}

TEST_CASE("copy-bandwidth per direction against the GPU's peak on the hand-made profile", "[plugins][copy]") {
  Hand h;
  AnalysisResult r = run_ok("copy-bandwidth", h.with);
  const auto& t = table_of(r, "per_kind");
  auto row = [&](int rank, const std::string& kind) -> const std::vector<SqlValue>& {
    for (const auto& x : t.rows)
      if (int_at(t, x, "rank") == rank && text_at(t, x, "kind") == kind) return x;
    FAIL("no row " << rank << " " << kind);
    throw std::logic_error("unreachable");
  };
  REQUIRE(t.rows.size() == 8);  // rank 0: HtoD DtoH DtoD memset; rank 1: HtoD PtoP memset DtoH
  // Rank 0 HtoD: c1 1e6 B in 100 us = 10 GB/s, c2 2.5e6 B in 100 us = 25 GB/s (1 B/ns = 1 GB/s);
  // total 3.5e6 B / 200 us = 17.5 GB/s; p50 of {10, 25} = 1st = 10. A100 80 GB (named "SXM4-80GB"):
  // PCIe 4.0 31.5 GB/s -> 17.5 / 31.5 = 55.56 %.
  const auto& htod = row(0, "HtoD");
  CHECK(int_at(t, htod, "copies") == 2);
  CHECK(int_at(t, htod, "bytes") == 3'500'000);
  CHECK(int_at(t, htod, "busy_ns") == 200 * us);
  CHECK(real_at(t, htod, "bandwidth_gbps") == Approx(17.5));
  CHECK(real_at(t, htod, "min_gbps") == Approx(10.0));
  CHECK(real_at(t, htod, "p50_gbps") == Approx(10.0));
  CHECK(real_at(t, htod, "max_gbps") == Approx(25.0));
  CHECK(text_at(t, htod, "peak_path") == "PCIe");
  CHECK(real_at(t, htod, "peak_gbps") == Approx(31.5));
  CHECK(real_at(t, htod, "achieved_pct_of_peak") == Approx(100.0 * 17.5 / 31.5));
  // DtoH: 5e5 B / 50 us = 10 GB/s -> 31.75 % of PCIe.
  CHECK(real_at(t, row(0, "DtoH"), "achieved_pct_of_peak") == Approx(100.0 * 10 / 31.5));
  // DtoD: 1e7 B / 10 us = 1000 GB/s against half of HBM2e 2039 = 1019.5 -> 98.09 %.
  CHECK(real_at(t, row(0, "DtoD"), "bandwidth_gbps") == Approx(1000.0));
  CHECK(real_at(t, row(0, "DtoD"), "peak_gbps") == Approx(1019.5));
  // memset: 4e6 B / 2 us = 2000 GB/s against HBM 2039.
  CHECK(real_at(t, row(0, "memset"), "achieved_pct_of_peak") == Approx(100.0 * 2000 / 2039));
  // Rank 1 (nsys names, no GPU name): HtoD 6.4e7 B / 2000 us = 32 GB/s; PtoP 1e8 / 500 us = 200;
  // memset 1000 B / 1 us = 1; DtoH without a size: counted, no bandwidth. No peak, no percentage.
  CHECK(real_at(t, row(1, "HtoD"), "bandwidth_gbps") == Approx(32.0));
  CHECK(real_at(t, row(1, "PtoP"), "bandwidth_gbps") == Approx(200.0));
  CHECK(real_at(t, row(1, "memset"), "bandwidth_gbps") == Approx(1.0));
  CHECK(std::holds_alternative<std::monostate>(row(1, "HtoD")[column_index(t, "peak_gbps")]));
  CHECK(std::holds_alternative<std::monostate>(row(1, "HtoD")[column_index(t, "achieved_pct_of_peak")]));
  const auto& dtoh1 = row(1, "DtoH");
  CHECK(int_at(t, dtoh1, "copies") == 1);
  CHECK(int_at(t, dtoh1, "unsized") == 1);
  CHECK(std::holds_alternative<std::monostate>(dtoh1[column_index(t, "bandwidth_gbps")]));
  auto finding = [&](int rank, const std::string& text) {
    for (const auto& f : r.findings)
      if (f.rank == rank && f.message.find(text) != std::string::npos) return true;
    return false;
  };
  CHECK(finding(1, "the profile records no GPU name, so copy bandwidth has no percentage of peak"));
  CHECK_FALSE(finding(0, "no percentage"));
  // Most copy time on rank 0 is HtoD (200 us).
  CHECK(finding(0, "most copy time is HtoD, 2 copies at 17.50 GB/s (55.6% of the PCIe peak 31.5 GB/s of A100 80GB)"));

  // The per-rank GB/s counter: c1 10 over [20,120), c2 25 over [130,230), c3 10 over [300,350),
  // c4 1000 over [400,410), c5 2000 over [420,422); nothing overlaps.
  const CounterTrack& bw = track(r, "copy bandwidth", 0);
  CHECK(bw.unit == "GB/s");
  const std::vector<std::pair<TimeNs, double>> expected = {
      {20 * us, 10}, {120 * us, 0},    {130 * us, 25}, {230 * us, 0},    {300 * us, 10},
      {350 * us, 0}, {400 * us, 1000}, {410 * us, 0},  {420 * us, 2000}, {422 * us, 0}};
  REQUIRE(bw.points.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CHECK(bw.points[i].first == expected[i].first);
    CHECK(bw.points[i].second == Approx(expected[i].second));
  }
  // Per name keeps Pageable and Pinned apart.
  const auto& n = table_of(r, "per_name");
  CHECK(real_at(n, row_where(n, "name", "Memcpy HtoD (Pageable -> Device)"), "bandwidth_gbps") == Approx(10.0));
  CHECK(real_at(n, row_where(n, "name", "Memcpy HtoD (Pinned -> Device)"), "bandwidth_gbps") == Approx(25.0));

  SECTION("a window without copies") {
    Selection sel;
    sel.from = 3000 * us;  // after rank 1's last copy (2700 us)
    AnalysisResult none = run_ok("copy-bandwidth", h.with, sel);
    CHECK(none.tables.empty());
    CHECK(mentions(none, "no memcpy or memset in the selection"));
  }
  SECTION("an unknown GPU and a rank selection") {
    Selection sel;
    sel.ranks = {1};
    AnalysisResult one = run_ok("copy-bandwidth", h.with, sel);
    CHECK(table_of(one, "per_kind").rows.size() == 4);
    CHECK(one.counters.size() == 1);
  }
}

TEST_CASE("annotations: GPU time per annotation and module, and kernel sequences", "[plugins][annotations]") {
  Hand h;
  AnalysisResult r = run_ok("annotations", h.with);
  const auto& a = table_of(r, "per_annotation");
  // All work: rank 0 kernels 6 x 20 + 3 x 20 + 10 = 190; rank 0 copies 100 + 100 + 50 + 10 + 2 =
  // 262; rank 1 copies 2000 + 500 + 1 + 10 = 2511; total 2963.
  // By launch (innermost annotation on "main" at the call's start): k1 (0), k2 (5), k3 (10),
  // k5 (70), k6 (75) -> forward: 5 kernels, 100; k4 (15, inside inner [12,17)) -> inner: 20;
  // k7..k10 (200..235) -> backward: 20 + 20 + 20 + 10 = 70.
  const auto& fwd = row_where(a, "annotation", "forward");
  CHECK(int_at(a, fwd, "kernels") == 5);
  CHECK(int_at(a, fwd, "gpu_ns") == 100 * us);
  CHECK(int_at(a, fwd, "by_launch") == 5);
  CHECK(real_at(a, fwd, "share_pct") == Approx(100.0 * 100 / 2963));
  // Inclusive: forward also holds k4's call (15 in [0,100)) -> 6 kernels, 120.
  CHECK(int_at(a, fwd, "inclusive_kernels") == 6);
  CHECK(int_at(a, fwd, "inclusive_gpu_ns") == 120 * us);
  CHECK(int_at(a, row_where(a, "annotation", "inner"), "gpu_ns") == 20 * us);
  CHECK(int_at(a, row_where(a, "annotation", "backward"), "gpu_ns") == 70 * us);
  // step is never innermost, but every kernel's call is inside it: 10 kernels, 190 inclusive.
  const auto& step = row_where(a, "annotation", "step");
  CHECK(int_at(a, step, "kernels") == 0);
  CHECK(int_at(a, step, "inclusive_kernels") == 10);
  CHECK(int_at(a, step, "inclusive_gpu_ns") == 190 * us);
  // Copies have no launch records: the GPU-lane range copy_phase [0,360) on their stream holds
  // c1, c2, c3 (250); c4 and c5 start after it.
  const auto& cp = row_where(a, "annotation", "copy_phase");
  CHECK(int_at(a, cp, "kernels") == 3);
  CHECK(int_at(a, cp, "gpu_ns") == 250 * us);
  CHECK(int_at(a, cp, "by_gpu_lane") == 3);
  // gpu_forward on stream 7 is not used: those kernels are attributed by their launches.
  CHECK(int_at(a, row_where(a, "annotation", "gpu_forward"), "kernels") == 0);
  // (none): c4, c5 and rank 1's four copies: 10 + 2 + 2511 = 2523, listed last.
  const auto& none = a.rows.back();
  CHECK(text_at(a, none, "annotation") == "(none)");
  CHECK(int_at(a, none, "kernels") == 6);
  CHECK(int_at(a, none, "gpu_ns") == 2523 * us);
  CHECK(text_at(a, a.rows[0], "annotation") == "copy_phase");  // most self time first

  // Modules: k1..k3 layers.0 (60), k4..k6 layers.1 (60), the rest unattributed: 4 kernels + 9
  // copies, 70 + 262 + 2511 = 2843.
  const auto& m = table_of(r, "per_module");
  CHECK(int_at(m, row_where(m, "module", "layers.0"), "gpu_ns") == 60 * us);
  CHECK(int_at(m, row_where(m, "module", "layers.1"), "kernels") == 3);
  CHECK(int_at(m, row_where(m, "module", "(unattributed)"), "kernels") == 13);
  CHECK(int_at(m, row_where(m, "module", "(unattributed)"), "gpu_ns") == 2843 * us);

  // Sequences on stream 7: A B C A B C A B C D. A B C at 0, 3, 6 (3 non-overlapping, 9 kernels,
  // 180); its rotations B C A (1, 4) and C A B (2, 5) only cover items A B C already covers;
  // every 4..8-gram occurs once. One sequence, spans [10,70) [70,130) [210,270) = 60 each.
  const auto& s = table_of(r, "sequences");
  REQUIRE(s.rows.size() == 1);
  CHECK(text_at(s, s.rows[0], "kernels") == "A -> B -> C");
  CHECK(int_at(s, s.rows[0], "occurrences") == 3);
  CHECK(int_at(s, s.rows[0], "gpu_ns") == 180 * us);
  CHECK(int_at(s, s.rows[0], "first_time_ns") == 10 * us);
  CHECK(int_at(s, s.rows[0], "mean_span_ns") == 60 * us);
  CHECK(int_at(s, s.rows[0], "launches_saved") == 6);
  REQUIRE(r.markers.size() == 3);
  CHECK(r.markers[2].start == 210 * us);
  CHECK(r.markers[2].end == 270 * us);

  SECTION("without launch records: the GPU lane") {
    AnalysisResult old = run_ok("annotations", h.without);
    const auto& o = table_of(old, "per_annotation");
    // k1..k6 overlap gpu_forward [10,130) on their stream: 6 kernels, 120; k7..k10 -> (none).
    const auto& g = row_where(o, "annotation", "gpu_forward");
    CHECK(int_at(o, g, "kernels") == 6);
    CHECK(int_at(o, g, "gpu_ns") == 120 * us);
    CHECK(int_at(o, g, "by_gpu_lane") == 6);
    CHECK(int_at(o, row_where(o, "annotation", "forward"), "kernels") == 0);
    CHECK(int_at(o, row_where(o, "annotation", "(none)"), "kernels") == 10);
    CHECK(int_at(o, row_where(o, "annotation", "(none)"), "gpu_ns") == 2593 * us);
    CHECK(mentions(old, "no launch records"));
  }
  SECTION("a window without kernels") {
    Selection sel;
    sel.from = 3000 * us;
    AnalysisResult empty = run_ok("annotations", h.with, sel);
    CHECK(empty.tables.empty());
    CHECK(mentions(empty, "no kernels in the selection"));
  }
  SECTION("a window") {
    // Work starting in [200,300]: k7..k10 (backward, 70) and c3 at 300 (copy_phase, 50); c2 starts
    // at 130, before the window.
    Selection sel;
    sel.from = 200 * us;
    sel.to = 300 * us;
    AnalysisResult w = run_ok("annotations", h.with, sel);
    const auto& o = table_of(w, "per_annotation");
    CHECK(int_at(o, row_where(o, "annotation", "backward"), "gpu_ns") == 70 * us);
    CHECK(int_at(o, row_where(o, "annotation", "copy_phase"), "gpu_ns") == 50 * us);
    CHECK(table_of(w, "sequences").rows.empty());  // A B C D once
  }
}
