// Every built-in analysis on the hand-made two-rank profile (hand_made_profiles.cpp; results
// worked out on paper in the comments, in microseconds) and on a synthetic profile, where the
// results are compared with an independent brute-force computation (a per-nanosecond bitmap of
// the profile's kernels) instead of the plugins' interval arithmetic.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "plugins/host/column_units.h"
#include "plugins/host/plugin_host.h"
#include "profiler/synthetic/synthetic_profile.h"
#include "storage/profile_reader.h"
#include "storage/readonly_query.h"
#include "storage/sqlite_handle.h"
#include "storage/units.h"
#include "tests/plugins/hand_made_profiles.h"
#include "tests/plugins/builtin_runner.h"
#include "tests/plugins/result_access.h"
#include "tests/support/test_paths.h"

using namespace ss;
using namespace ss::plugins;
using namespace ss::test;

namespace {

constexpr std::int64_t us = 1000;

struct HandMade {
  TempDir dir;
  Profile profile;
  HandMade() {
    write_two_rank_profile(dir.file("hand.ssdb"));
    profile = load_profile(dir.file("hand.ssdb"));
  }
};

}  // namespace

TEST_CASE("all six built-in analyses are found in the build's plugin folder", "[plugins]") {
  for (const char* n : {"temporal", "overlap", "top-kernels", "idle-gaps", "stragglers", "memory-peak"}) {
    INFO(n);
    CHECK(builtins().find(n) != nullptr);
  }
  CHECK(builtins().problems().empty());
}

TEST_CASE("temporal breakdown on the hand-made profile", "[plugins][temporal]") {
  HandMade h;
  AnalysisResult r = run_ok("temporal", h.profile);
  const auto& t = table_of(r, "breakdown");
  REQUIRE(t.rows.size() == 2);
  // rank 0, window [0,700): compute [0,100)+[150,250)+[400,450)+[600,700) = 350;
  // NCCL [80,180)+[460,560) minus compute = [100,150)+[460,560) = 150; overlapped 200-150 = 50;
  // busy = [0,250)+[400,450)+[460,560)+[600,700) = 500, idle = 700-500 = 200.
  const auto& r0 = row_where(t, "rank", 0);
  CHECK(int_at(t, r0, "window_ns") == 700 * us);
  CHECK(int_at(t, r0, "compute_ns") == 350 * us);
  CHECK(int_at(t, r0, "communication_ns") == 150 * us);
  CHECK(int_at(t, r0, "copy_ns") == 0);
  CHECK(int_at(t, r0, "idle_ns") == 200 * us);
  CHECK(int_at(t, r0, "overlapped_communication_ns") == 50 * us);
  CHECK(real_at(t, r0, "compute_pct") == Approx(50.0));
  // rank 1, window [0,900): compute 4 x 100 = 400; NCCL 80 + 60 = 140, none under compute;
  // idle = 900 - 540 = 360.
  const auto& r1 = row_where(t, "rank", 1);
  CHECK(int_at(t, r1, "window_ns") == 900 * us);
  CHECK(int_at(t, r1, "compute_ns") == 400 * us);
  CHECK(int_at(t, r1, "communication_ns") == 140 * us);
  CHECK(int_at(t, r1, "idle_ns") == 360 * us);
  CHECK(r.counters.size() == 2);
  // The most idle rank: rank 1 (40%) -> warning (over 20%).
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].rank == 1);
  CHECK(r.findings[0].severity == Severity::Warning);

  SECTION("a window and a rank selection") {
    Selection sel;
    sel.from = 0;
    sel.to = 300 * us;
    AnalysisResult w = run_ok("temporal", h.profile, sel);
    const auto& tw = table_of(w, "breakdown");
    // rank 0 in [0,300]: compute [0,100)+[150,250) = 200; NCCL [80,180) minus compute = [100,150) = 50;
    // idle = 300 - |[0,250)| = 50.
    const auto& w0 = row_where(tw, "rank", 0);
    CHECK(int_at(tw, w0, "window_ns") == 300 * us);
    CHECK(int_at(tw, w0, "compute_ns") == 200 * us);
    CHECK(int_at(tw, w0, "communication_ns") == 50 * us);
    CHECK(int_at(tw, w0, "idle_ns") == 50 * us);
    // rank 1 in [0,300]: compute 100, NCCL [120,200) = 80, idle 300 - 180 = 120.
    CHECK(int_at(tw, row_where(tw, "rank", 1), "idle_ns") == 120 * us);
    // After every kernel (both ranks end by 900): each selected rank is idle for the whole window.
    Selection after;
    after.from = 1000 * us;
    after.to = 1100 * us;
    AnalysisResult a = run_ok("temporal", h.profile, after);
    const auto& ta = table_of(a, "breakdown");
    REQUIRE(ta.rows.size() == 2);
    for (int rank : {0, 1}) CHECK(int_at(ta, row_where(ta, "rank", rank), "idle_ns") == 100 * us);
    sel.ranks = {1};
    AnalysisResult one = run_ok("temporal", h.profile, sel);
    REQUIRE(table_of(one, "breakdown").rows.size() == 1);
    CHECK(int_at(table_of(one, "breakdown"), table_of(one, "breakdown").rows[0], "rank") == 1);
  }
}

TEST_CASE("overlap and exposed collective time per FSDP unit on the hand-made profile", "[plugins][overlap]") {
  HandMade h;
  AnalysisResult r = run_ok("overlap", h.profile);
  const auto& u = table_of(r, "per_unit");
  REQUIRE(u.rows.size() == 3);
  // rank 0 AllGather [80,180): no module on its kernel, no GPU ranges -> the next compute kernel
  // after it (relu [400,450), layers.1) -> unit layers.1; compute covers [80,100)+[150,180) = 50,
  // exposed 50. rank 0 ReduceScatter [460,560): the last compute kernel before it is relu
  // (layers.1) -> layers.1; exposed 100. layers.1: 2 collectives, 200 total, 150 exposed.
  const auto& l1 = row_where(u, "fsdp_unit", "layers.1");
  CHECK(int_at(u, l1, "collectives") == 2);
  CHECK(int_at(u, l1, "collective_ns") == 200 * us);
  CHECK(int_at(u, l1, "overlapped_ns") == 50 * us);
  CHECK(int_at(u, l1, "exposed_ns") == 150 * us);
  CHECK(int_at(u, l1, "all_gather_exposed_ns") == 50 * us);
  CHECK(int_at(u, l1, "reduce_scatter_exposed_ns") == 100 * us);
  CHECK(real_at(u, l1, "overlap_pct") == Approx(25.0));
  // rank 1 AllGather [120,200): its kernel's module is layers.0.mlp, whose unit is layers.0;
  // no compute during it -> 80 exposed.
  const auto& l0 = row_where(u, "fsdp_unit", "layers.0");
  CHECK(int_at(u, l0, "exposed_ns") == 80 * us);
  // rank 1 ReduceScatter [500,560): no module anywhere on rank 1 -> unattributed, 60 exposed.
  CHECK(int_at(u, row_where(u, "fsdp_unit", "(unattributed)"), "exposed_ns") == 60 * us);
  CHECK(text_at(u, u.rows[0], "fsdp_unit") == "layers.1");  // most exposed first

  const auto& pr = table_of(r, "per_rank");
  CHECK(int_at(pr, row_where(pr, "rank", 0), "exposed_ns") == 150 * us);
  CHECK(int_at(pr, row_where(pr, "rank", 0), "overlapped_ns") == 50 * us);
  CHECK(int_at(pr, row_where(pr, "rank", 1), "exposed_ns") == 140 * us);
  REQUIRE(!r.findings.empty());
  CHECK(r.findings[0].message.find("layers.1") != std::string::npos);
  // layers.1's most exposed collective is the ReduceScatter on rank 0.
  CHECK(r.findings[0].range == std::pair<TimeNs, TimeNs>{460 * us, 560 * us});
  CHECK(r.findings[0].rank == 0);
  CHECK(r.markers.size() == 4);
}

// torchtitan's recordings: its weights' initialisation gathers DTensors before the first step.
// Rule 3 (the next compute after an all-gather) gave those to the first forward's unit (the
// embedding: 102 collectives where each block had 18); it looks inside the collective's step only.
TEST_CASE("overlap: collectives outside every step, and sends, are not given to a unit", "[plugins][overlap]") {
  TempDir dir;
  write_steps_profile(dir.file("steps.ssdb"));
  AnalysisResult r = run_ok("overlap", load_profile(dir.file("steps.ssdb")));
  const auto& u = table_of(r, "per_unit");
  // Before: the initialisation's all-gather went to tok_embeddings (2), the all-reduce between
  // steps and step 1's early reduce-scatter to output (3).
  // An all-to-all's SendRecv kernel is the unit's whose compute produced its input (the H100 nsys
  // trace's 66 had gone to the send / recv row with the pipeline's).
  CHECK(int_at(u, row_where(u, "fsdp_unit", "tok_embeddings"), "collectives") == 2);
  CHECK(int_at(u, row_where(u, "fsdp_unit", "output"), "collectives") == 1);
  CHECK(int_at(u, row_where(u, "fsdp_unit", "(unattributed)"), "collectives") == 3);
  CHECK(int_at(u, row_where(u, "fsdp_unit", "(unattributed)"), "collective_ns") == (100 + 100 + 10) * us);
  // A pipeline stage's send is no unit's collective (before: output's, the compute before it).
  CHECK(int_at(u, row_where(u, "fsdp_unit", "(send / recv)"), "collectives") == 1);
  CHECK(int_at(u, row_where(u, "fsdp_unit", "(send / recv)"), "collective_ns") == 20 * us);
}

TEST_CASE("idle gaps and their causes on the hand-made profile", "[plugins][idle]") {
  HandMade h;
  AnalysisResult r = run_ok("idle-gaps", h.profile);
  const auto& g = table_of(r, "gaps");
  REQUIRE(g.rows.size() == 6);
  auto cause_of = [&](int rank, std::int64_t start) {
    for (const auto& row : g.rows)
      if (int_at(g, row, "rank") == rank && int_at(g, row, "start_ns") == start * us) return text_at(g, row, "cause");
    return std::string("(no such gap)");
  };
  // rank 0 [100,150): the AllGather runs through all of it.
  CHECK(cause_of(0, 100) == "waiting on collective");
  // rank 0 [250,400): no NCCL; aten::relu runs on the CPU over [260,390) = 130 of 150 and began
  // after the GPU went idle (260 > 250) -> the host launched the next kernel late.
  CHECK(cause_of(0, 250) == "launch-bound host");
  // rank 0 [450,600): the ReduceScatter covers [460,560) = 100 of 150.
  CHECK(cause_of(0, 450) == "waiting on collective");
  // rank 1 [100,300): AllGather covers 80 of 200 (under half), no CPU ranges -> still a collective.
  CHECK(cause_of(1, 100) == "waiting on collective");
  CHECK(cause_of(1, 400) == "waiting on collective");
  // rank 1 [700,800): nothing runs anywhere.
  CHECK(cause_of(1, 700) == "other");
  // The hand-made profile has no launch records: every cause is a heuristic, and a finding says so.
  for (const auto& row : g.rows) CHECK(text_at(g, row, "evidence") == "heuristic");
  CHECK(std::any_of(r.findings.begin(), r.findings.end(),
                    [](const Finding& f) { return f.message.find("no launch records") != std::string::npos; }));
  const auto& s = table_of(r, "summary");
  // rank 0 waiting on collectives: 50 + 150 = 200 in 2 gaps.
  for (const auto& row : s.rows)
    if (int_at(s, row, "rank") == 0 && text_at(s, row, "cause") == "waiting on collective") {
      CHECK(int_at(s, row, "gaps") == 2);
      CHECK(int_at(s, row, "idle_ns") == 200 * us);
    }
  CHECK(s.rows.size() == 4);
  // The longest gaps are 200 us (rank 1); the finding jumps to one of them.
  REQUIRE(!r.findings.empty());
  CHECK(r.findings[0].rank == 1);
  CHECK(r.findings[0].range->second - r.findings[0].range->first == 200 * us);
}

// Layout in hand_made_profiles.cpp (write_launch_profile); the rank's window is [0,900).
TEST_CASE("idle-gap causes from launch times", "[plugins][idle]") {
  TempDir dir;
  write_launch_profile(dir.file("l.ssdb"));
  const Profile p = load_profile(dir.file("l.ssdb"));
  AnalysisResult r = run_ok("idle-gaps", p);
  const auto& g = table_of(r, "gaps");
  REQUIRE(g.rows.size() == 4);  // compute stream: [100,200) [300,400) [500,600) [700,800)
  auto gap_at = [&](std::int64_t start) -> const std::vector<SqlValue>& {
    for (const auto& row : g.rows)
      if (int_at(g, row, "start_ns") == start * us) return row;
    FAIL("no gap at " << start);
    return g.rows.front();
  };
  // [100,200): K2 launched at 150, after the stream went idle -> the GPU waited on the host.
  CHECK(text_at(g, gap_at(100), "cause") == "launch-bound host");
  CHECK(int_at(g, gap_at(100), "next_launch_time_ns") == 150 * us);
  // [300,400): K3 queued at 250; N1 runs [300,380) = 80 of 100 -> waiting on the collective.
  CHECK(text_at(g, gap_at(300), "cause") == "waiting on collective");
  // [500,600): K4 queued at 450; the copy C1 runs [500,580) = 80 of 100 -> another stream.
  CHECK(text_at(g, gap_at(500), "cause") == "waiting on another stream");
  // [700,800): K5 queued at 650 and nothing runs -> a dependency (event / host sync).
  CHECK(text_at(g, gap_at(700), "cause") == "waiting on dependency");
  for (const auto& row : g.rows) CHECK(text_at(g, row, "evidence") == "launch");

  // Every stream: the NCCL stream idles [0,300) before N1 (launched at 290 >= 0: launch-bound)
  // and [380,900) after it (no next kernel: heuristic, no collective there -> other); the copy
  // stream idles [0,500) (C1 launched at 100 >= 0: launch-bound) and [580,900) (other).
  const auto& ps = table_of(r, "per_stream");
  auto idle_of = [&](std::int64_t stream, const std::string& cause) {
    std::int64_t total = 0;
    for (const auto& row : ps.rows)
      if (int_at(ps, row, "stream") == stream && text_at(ps, row, "cause") == cause) total += int_at(ps, row, "idle_ns");
    return total;
  };
  CHECK(idle_of(20, "launch-bound host") == 300 * us);
  CHECK(idle_of(20, "other") == 520 * us);
  CHECK(idle_of(30, "launch-bound host") == 500 * us);
  CHECK(idle_of(30, "other") == 320 * us);
  CHECK(idle_of(7, "launch-bound host") == 100 * us);
  // No "no launch records" finding on a profile that has them.
  for (const auto& f : r.findings) CHECK(f.message.find("no launch records") == std::string::npos);
}

// Layout in hand_made_profiles.cpp (write_critical_path_profile).
TEST_CASE("critical path across streams, ranks and launches", "[plugins][critical]") {
  TempDir dir;
  write_critical_path_profile(dir.file("c.ssdb"));
  const Profile p = load_profile(dir.file("c.ssdb"));
  AnalysisResult r = run_ok("critical-path", p);
  const auto& st = table_of(r, "steps");
  REQUIRE(st.rows.size() == 2);
  // Step 1 = [0,700), ending on rank 0 with B [400,700). B waited for AG0 (ended 400, later than
  // A at 100 and B's launch at 125). AG0's peer AG1 started on rank 1 at 300 > 150: [300,400) is
  // communication, and the 150 us AG0 spent waiting are rank 1's work: AG1 waited for C (ended 300,
  // later than its launch at 295), C covers [0,300). compute 300 + 300, communication 100.
  const auto& s1 = row_where(st, "step", 1);
  CHECK(int_at(st, s1, "duration_ns") == 700 * us);
  CHECK(int_at(st, s1, "compute_ns") == 600 * us);
  CHECK(int_at(st, s1, "communication_ns") == 100 * us);
  CHECK(int_at(st, s1, "launch_ns") == 0);
  CHECK(int_at(st, s1, "host_ns") == 0);
  CHECK(int_at(st, s1, "idle_ns") == 0);
  CHECK(int_at(st, s1, "peer_wait_ns") == 150 * us);
  CHECK(int_at(st, s1, "ranks_on_path") == 2);
  // Step 2 = [1000,1400) on rank 2: K2 [1300,1400); its launch call [1250,1260) ended after K1
  // (1100): launch [1250,1300), host [1100,1250) (the CPU issued K2 late), K1 [1000,1100).
  const auto& s2 = row_where(st, "step", 2);
  CHECK(int_at(st, s2, "compute_ns") == 200 * us);
  CHECK(int_at(st, s2, "launch_ns") == 50 * us);
  CHECK(int_at(st, s2, "host_ns") == 150 * us);
  CHECK(int_at(st, s2, "communication_ns") == 0);
  // The all-gather of layers.0: 100 of its 250 + 100 us on the path.
  const auto& ag = table_of(r, "all_gathers_on_path");
  REQUIRE(ag.rows.size() == 1);
  CHECK(text_at(ag, ag.rows[0], "unit") == "layers.0");
  CHECK(int_at(ag, ag.rows[0], "on_path_ns") == 100 * us);
  CHECK(int_at(ag, ag.rows[0], "all_gather_ns") == 350 * us);
  // Every segment of the path is in one step, and they tile the steps exactly.
  const auto& path = table_of(r, "path");
  std::int64_t total = 0;
  for (const auto& row : path.rows) total += int_at(path, row, "duration_ns");
  CHECK(total == 700 * us + 400 * us);
}

// gloo numbers a pipeline group's sends and receives with its collectives in each rank's own order:
// one sequence number can join a rank's all-gather with another's all-reduce. That is no match: the
// path does not jump to the other rank through it.
TEST_CASE("critical path: a sequence number joining different operations is no jump", "[plugins][critical]") {
  TempDir dir;
  write_critical_path_profile(dir.file("c.ssdb"));
  {
    sql::Db db(dir.file("c.ssdb"), SQLITE_OPEN_READWRITE);
    db.exec("UPDATE collectives SET type = 1 WHERE rank = 1");  // AG1 an all-reduce at AG0's number
  }
  AnalysisResult r = run_ok("critical-path", load_profile(dir.file("c.ssdb")));
  const auto& st = table_of(r, "steps");
  const auto& s1 = row_where(st, "step", 1);
  CHECK(int_at(st, s1, "peer_wait_ns") == 0);  // before: 150 us on rank 1
  CHECK(int_at(st, s1, "ranks_on_path") == 1);
  CHECK(int_at(st, s1, "communication_ns") == 250 * us);  // AG0 whole, [150,400)
  CHECK(int_at(st, s1, "duration_ns") == 700 * us);
}

TEST_CASE("stragglers on the hand-made profile", "[plugins][stragglers]") {
  HandMade h;
  AnalysisResult r = run_ok("stragglers", h.profile);
  // seq 0: rank 0 starts at 80, rank 1 at 120 -> rank 1 last by 40; seq 1: 460 vs 500 -> 40.
  const auto& pr = table_of(r, "per_rank");
  REQUIRE(pr.rows.size() == 1);
  CHECK(int_at(pr, pr.rows[0], "rank") == 1);
  CHECK(int_at(pr, pr.rows[0], "times_last") == 2);
  CHECK(int_at(pr, pr.rows[0], "total_lag_ns") == 80 * us);
  CHECK(int_at(pr, pr.rows[0], "worst_lag_ns") == 40 * us);
  const auto& c = table_of(r, "collectives");
  REQUIRE(c.rows.size() == 2);
  CHECK(int_at(c, row_where(c, "sequence", 0), "lag_ns") == 40 * us);
  CHECK(text_at(c, row_where(c, "sequence", 1), "type") == "reduce_scatter");
  REQUIRE(!r.findings.empty());
  CHECK(r.findings[0].rank == 1);
}

// torchtitan's recordings: its initialisation's all-gather (54 ms, rank 0 late loading) was the
// "largest lag", and a pipeline's receives (posted before the peer stage sends) made up most of
// the per-rank waiting (dp 2 x pp 2: 12.3 s of rank 1's). Both are counted apart now.
TEST_CASE("stragglers: collectives outside every step and sends are counted apart", "[plugins][stragglers]") {
  TempDir dir;
  write_two_rank_steps_profile(dir.file("s.ssdb"));
  AnalysisResult r = run_ok("stragglers", load_profile(dir.file("s.ssdb")));
  const auto& c = table_of(r, "collectives");
  REQUIRE(c.rows.size() == 4);  // seq 1 to 4; not the initialisation's seq 0 nor the send
  CHECK(int_at(c, c.rows[0], "sequence") == 4);  // by lag: 50 (the all-to-all's SendRecv), 30, 20, 15
  CHECK(int_at(c, c.rows[1], "lag_ns") == 30 * us);
  CHECK(int_at(c, row_where(c, "sequence", 3), "last_rank") == 0);
  const auto& pr = table_of(r, "per_rank");
  CHECK(int_at(pr, row_where(pr, "rank", 0), "times_last") == 2);
  CHECK(int_at(pr, row_where(pr, "rank", 0), "total_lag_ns") == 35 * us);  // before: 3 and 435 (the send)
  CHECK(int_at(pr, row_where(pr, "rank", 1), "total_lag_ns") == 80 * us);
  REQUIRE(r.findings.size() == 5);
  CHECK(r.findings[0].rank == 1);
  CHECK_THAT(r.findings[1].message, Catch::Contains("largest lag: send_recv #4, rank 1 arrives 50"));
  CHECK_THAT(r.findings[2].message, Catch::StartsWith("1 matched collectives outside every recorded step"));
  CHECK_THAT(r.findings[2].message, Catch::Contains("all_gather #0, rank 1 arrives 200"));
  // pg 1 seq 1, a rank's all-reduce at the number of the other's send: before, a 500 us "lag".
  CHECK_THAT(r.findings[3].message, Catch::StartsWith("1 sequence numbers join different operations"));
  CHECK_THAT(r.findings[4].message, Catch::StartsWith("1 point-to-point transfers"));
  CHECK_THAT(r.findings[4].message, Catch::Contains("400"));
}

TEST_CASE("memory peak attribution on the hand-made profile", "[plugins][memory]") {
  HandMade h;
  AnalysisResult r = run_ok("memory-peak", h.profile);
  const auto& p = table_of(r, "peaks");
  REQUIRE(p.rows.size() == 1);  // rank 1 has no memory events
  // Counter: 100 (t=10), 400 (t=50), 100 (t=120), 300 (t=130) -> peak 400 at t=50, during the
  // innermost module range layers.0.mlp [20,110), reached by its own allocation.
  CHECK(int_at(p, p.rows[0], "peak_bytes") == 400);
  CHECK(int_at(p, p.rows[0], "peak_time_ns") == 50 * us);
  CHECK(text_at(p, p.rows[0], "module_running") == "layers.0.mlp");
  CHECK(text_at(p, p.rows[0], "allocating_module") == "layers.0.mlp");
  CHECK(real_at(p, p.rows[0], "peak_pct_of_capacity") == Approx(100.0 * 400 / 420));
  const auto& c = table_of(r, "categories_at_peak");
  CHECK(c.rows.size() == 2);
  CHECK(int_at(c, row_where(c, "category", "unsharded_parameter"), "bytes") == 100);
  CHECK(int_at(c, row_where(c, "category", "activation"), "bytes") == 300);
  const auto& m = table_of(r, "modules_at_peak");
  CHECK(int_at(m, row_where(m, "module", "layers.0.mlp"), "bytes") == 300);
  CHECK(int_at(m, row_where(m, "module", "layers.0"), "bytes") == 100);
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].severity == Severity::Warning);  // 95% of the 420-byte GPU
  // A window after the peak finds the later maximum: 300 at t=130.
  Selection sel;
  sel.from = 125 * us;
  AnalysisResult late = run_ok("memory-peak", h.profile, sel);
  CHECK(int_at(table_of(late, "peaks"), table_of(late, "peaks").rows[0], "peak_bytes") == 300);
}

TEST_CASE("top kernels on the hand-made profile", "[plugins][top]") {
  HandMade h;
  AnalysisResult r = run_ok("top-kernels", h.profile);
  const auto& t = table_of(r, "top_kernels");
  REQUIRE(t.rows.size() == 4);
  // gemm: 3 x 100 on each rank = 600 in 6; AllGather 100+80 = 180; ReduceScatter 100+60 = 160;
  // relu 50+100 = 150. All = 1090.
  CHECK(text_at(t, t.rows[0], "name") == "gemm");
  CHECK(int_at(t, t.rows[0], "count") == 6);
  CHECK(int_at(t, t.rows[0], "total_ns") == 600 * us);
  CHECK(real_at(t, t.rows[0], "share_pct") == Approx(100.0 * 600 / 1090));
  CHECK(text_at(t, t.rows[1], "name") == "ncclAllGather");
  CHECK(text_at(t, t.rows[2], "name") == "ncclReduceScatter");
  CHECK(int_at(t, row_where(t, "name", "relu"), "min_ns") == 50 * us);
  CHECK(int_at(t, row_where(t, "name", "relu"), "max_ns") == 100 * us);
}

// ---- Synthetic profile against a brute-force bitmap ---------------------------------------

namespace {

// Per-rank bitmaps over [t0, t1): bit i set when some kernel of the kind covers t0 + i.
struct Bitmaps {
  TimeNs t0 = 0, t1 = 0;
  std::vector<std::uint8_t> compute, nccl, any, compute_stream;
};

Bitmaps paint(const Profile& p, int rank) {
  Bitmaps b;
  b.t0 = INT64_MAX;
  b.t1 = INT64_MIN;
  for (const auto& s : p.stream_tracks)
    if (s.rank == rank)
      for (const auto& k : s.events) b.t0 = std::min(b.t0, k.start), b.t1 = std::max(b.t1, k.end);
  const std::size_t n = static_cast<std::size_t>(b.t1 - b.t0);
  b.compute.assign(n, 0);
  b.nccl.assign(n, 0);
  b.any.assign(n, 0);
  b.compute_stream.assign(n, 0);
  for (const auto& s : p.stream_tracks) {
    if (s.rank != rank) continue;
    for (const auto& k : s.events) {
      for (TimeNs t = k.start; t < k.end; ++t) {
        const std::size_t i = static_cast<std::size_t>(t - b.t0);
        b.any[i] = 1;
        if (k.category == KernelCategory::Compute) b.compute[i] = 1;
        if (k.category == KernelCategory::Collective) b.nccl[i] = 1;
        if (s.kind == StreamKind::Compute) b.compute_stream[i] = 1;
      }
    }
  }
  return b;
}

}  // namespace

TEST_CASE("every analysis runs on a profile whose streams sit on a rank its collectives do not name", "[plugins]") {
  // A hand-edited (or hostile) file: the critical path once jumped to a collective's rank and
  // indexed that rank's streams with the kernel's stream index, reading out of bounds.
  TempDir dir;
  SyntheticSpec spec;
  spec.ranks = 2;
  spec.layers = 2;
  spec.steps = 2;
  write_synthetic_profile(dir.file("s.ssdb"), spec);
  {
    sql::Db db(dir.file("s.ssdb"), SQLITE_OPEN_READWRITE);
    db.exec("UPDATE streams SET rank = 99 WHERE rank = 1");
  }
  const Profile p = load_profile(dir.file("s.ssdb"));
  for (const auto& d : builtins().plugins()) {
    INFO(d.name);
    run_ok(d.name, p);
  }
}

TEST_CASE("analyses on a synthetic profile agree with a brute-force bitmap", "[plugins][synthetic]") {
  TempDir dir;
  SyntheticSpec spec;
  spec.ranks = 2;
  spec.layers = 3;
  spec.steps = 1;
  write_synthetic_profile(dir.file("s.ssdb"), spec);
  const Profile p = load_profile(dir.file("s.ssdb"));
  AnalysisResult temporal = run_ok("temporal", p);
  AnalysisResult overlap = run_ok("overlap", p);
  AnalysisResult idle = run_ok("idle-gaps", p);
  AnalysisResult strag = run_ok("stragglers", p);
  AnalysisResult mem = run_ok("memory-peak", p);
  const auto& bt = table_of(temporal, "breakdown");
  const auto& pr = table_of(overlap, "per_rank");
  const auto& gaps = table_of(idle, "summary");
  for (int rank = 0; rank < 2; ++rank) {
    INFO("rank " << rank);
    const Bitmaps b = paint(p, rank);
    std::int64_t compute = 0, comm_only = 0, idle_ns = 0, overlapped = 0;
    for (std::size_t i = 0; i < b.any.size(); ++i) {
      compute += b.compute[i];
      comm_only += b.nccl[i] && !b.compute[i];
      idle_ns += !b.any[i];
      overlapped += b.nccl[i] && b.compute[i];
    }
    const auto& row = row_where(bt, "rank", rank);
    CHECK(int_at(bt, row, "window_ns") == b.t1 - b.t0);
    CHECK(int_at(bt, row, "compute_ns") == compute);
    CHECK(int_at(bt, row, "communication_ns") == comm_only);
    CHECK(int_at(bt, row, "idle_ns") == idle_ns);
    // Collectives rows and NCCL kernels coincide in the synthetic profile.
    CHECK(int_at(pr, row_where(pr, "rank", rank), "exposed_ns") == comm_only);
    CHECK(int_at(pr, row_where(pr, "rank", rank), "overlapped_ns") == overlapped);
    // Idle gaps of >= 5 us on the compute stream, counted run by run.
    std::int64_t gap_total = 0, run = 0;
    for (std::size_t i = 0; i <= b.compute_stream.size(); ++i) {
      if (i < b.compute_stream.size() && !b.compute_stream[i]) {
        ++run;
        continue;
      }
      if (run >= 5000) gap_total += run;
      run = 0;
    }
    std::int64_t reported = 0;
    for (const auto& g : gaps.rows)
      if (int_at(gaps, g, "rank") == rank) reported += int_at(gaps, g, "idle_ns");
    CHECK(reported == gap_total);
  }
  // Stragglers: every collective is matched across the 2 ranks by (group, sequence); the lag is
  // the difference of the two start times, recomputed here from the model.
  std::map<std::int64_t, std::vector<TimeNs>> starts;
  for (const auto& c : p.collectives) starts[c.sequence].push_back(c.start);
  std::int64_t total_lag = 0;
  for (const auto& [seq, v] : starts) {
    REQUIRE(v.size() == 2);
    total_lag += std::abs(v[0] - v[1]);
  }
  std::int64_t reported_lag = 0;
  const auto& sp = table_of(strag, "per_rank");
  for (const auto& row : sp.rows) reported_lag += int_at(sp, row, "total_lag_ns");
  CHECK(reported_lag == total_lag);
  CHECK(table_of(strag, "collectives").rows.size() == starts.size());
  // Memory peak: the maximum running sum of memory_events per rank, by SQL window function.
  std::map<std::int64_t, std::int64_t> peak;
  QueryCallbacks cb;
  cb.on_row = [&](const std::vector<SqlValue>& row) { peak[std::get<std::int64_t>(row[0])] = std::get<std::int64_t>(row[1]); };
  run_readonly_query(dir.file("s.ssdb"),
                     "SELECT rank, MAX(live) FROM (SELECT rank, SUM(bytes) OVER (PARTITION BY rank ORDER BY time_ns, id)"
                     " AS live FROM memory_events) GROUP BY rank",
                     cb);
  const auto& mp = table_of(mem, "peaks");
  REQUIRE(mp.rows.size() == 2);
  for (const auto& [rank, bytes] : peak) CHECK(int_at(mp, row_where(mp, "rank", rank), "peak_bytes") == bytes);
}

TEST_CASE("memory-peak on a CPU recording: no capacity is '—', not 0 B and 0.0 %; the finding's size reads as the table's", "[plugins]") {
  const Profile p = load_profile(source_dir() + "/resources/samples/cpu-fsdp2-llama-2rank.ssdb");
  AnalysisResult mem = run_ok("memory-peak", p);
  const auto& t = table_of(mem, "peaks");
  REQUIRE(t.rows.size() == p.ranks.size());
  for (const auto& rank : p.ranks) {
    INFO("rank " << rank.info.rank);
    const auto& row = row_where(t, "rank", rank.info.rank);
    CHECK(std::holds_alternative<std::monostate>(row[column_index(t, "gpu_memory_bytes")]));
    CHECK(std::holds_alternative<std::monostate>(row[column_index(t, "peak_pct_of_capacity")]));
    CHECK(plugins::format_cell(row[column_index(t, "gpu_memory_bytes")], plugins::ColumnUnit::Bytes, p.time_begin) == "\u2014");
    const std::string peak = format_bytes(int_at(t, row, "peak_bytes"));
    bool said = false;
    for (const auto& f : mem.findings) said |= f.message.find("rank " + std::to_string(rank.info.rank) + " peaks at " + peak + " during") == 0;
    CHECK(said);
  }
  for (const auto& f : mem.findings) CHECK(f.message.find("of the GPU") == std::string::npos);
}
