// Replaying a measured profile: hand-made profiles with non-FSDP collectives, GPU idle, FSDP
// all-gather waits and a window without step markers, extracted and simulated to the nanosecond.
#include <catch2/catch.hpp>

#include "profiler/sim/profile_extract.h"
#include "profiler/sim/step_simulator.h"
#include "storage/profile_reader.h"
#include "storage/profile_writer.h"
#include "tests/sim/sim_fixtures.h"
#include "tests/support/test_paths.h"

using namespace ss;
using namespace ss::sim;

namespace {

constexpr TimeNs us = 1000;

// One rank of two, a model root that is not a unit and units blocks.0 .. blocks.{n-1}.
struct ProfileBuilder {
  ProfileWriter w;
  RowId thread, compute, nccl;
  std::vector<RowId> blocks;
  std::int64_t corr = 1;

  ProfileBuilder(const std::string& path, int n, std::int64_t params) : w(path, Origin{}) {
    RankInfo ri;
    ri.world_size = 2;
    w.add_rank(ri);
    // As in an nsys export: the stream that runs compute and the all-to-all is marked NCCL.
    compute = w.add_stream({0, 0, 7, StreamKind::Nccl, "stream 7"});
    nccl = w.add_stream({0, 0, 20, StreamKind::Nccl, "stream 20"});
    thread = w.add_thread({0, 1, "main"});
    const RowId root = w.add_module({kNoRow, "", "Model", 0, 0, false, kNoRow, ""});
    for (int i = 0; i < n; ++i)
      blocks.push_back(w.add_module({root, "blocks." + std::to_string(i), "Block", params, 2 * params, true, kNoRow, "true"}));
  }
  RowId kernel(RowId stream, TimeNs a, TimeNs b, KernelCategory cat = KernelCategory::Compute) {
    KernelRow k;
    k.stream = stream;
    k.start = a;
    k.end = b;
    k.name = w.intern(cat == KernelCategory::Collective ? "ncclDevKernel" : "gemm");
    k.correlation = corr++;
    k.category = cat;
    return w.add_kernel(k);
  }
  void collective(RowId stream, CollectiveType t, TimeNs a, TimeNs b) {
    const RowId k = kernel(stream, a, b, KernelCategory::Collective);
    w.add_collective({0, k, t, 0, 0, kNoRow, 2, -1, a, b});
  }
  void forward(int block, TimeNs a, TimeNs b) {
    w.add_range({0, thread, kNoRow, a, b, w.intern("blocks"), RangeKind::Module, RangePhase::Forward,
                 blocks[static_cast<std::size_t>(block)], kNoRow, 0});
  }
};

}  // namespace

TEST_CASE("window replay: all-to-all on the critical path and idle gaps are replayed exactly", "[sim][replay]") {
  ss::test::TempDir dir;
  {
    ProfileBuilder b(dir.file("w.ssdb"), 2, 0);  // no parameter sizes, as in the nsys export
    b.kernel(b.compute, 0, 100 * us);  // the end of a block cut by the window's start: no range
    // blocks.0 [200, 1200] us: idle 200-250, compute 250-550, all-to-all 550-750 (same stream:
    // compute waits for it), compute 750-1000, idle 1000-1200; then, until blocks.1 starts at
    // 1300, a late kernel 1200-1250 and idle 1250-1300.
    b.forward(0, 200 * us, 1200 * us);
    b.kernel(b.compute, 250 * us, 550 * us);
    b.collective(b.compute, CollectiveType::SendRecv, 550 * us, 750 * us);
    b.kernel(b.compute, 750 * us, 1000 * us);
    b.kernel(b.compute, 1200 * us, 1250 * us);
    // blocks.1 [1300, 2400] us: compute 1300-2000, a send/recv on another stream 1900-2100 (its
    // first 100 us hidden under compute, 2000-2100 exposed), compute 2100-2300, idle 2300-2400.
    b.forward(1, 1300 * us, 2400 * us);
    b.kernel(b.compute, 1300 * us, 2000 * us);
    b.collective(b.nccl, CollectiveType::SendRecv, 1900 * us, 2100 * us);
    b.kernel(b.compute, 2100 * us, 2300 * us);
    b.kernel(b.compute, 2500 * us, 2700 * us);  // a block cut by the window's end: no range
    b.w.finish();
  }
  const Profile p = load_profile(dir.file("w.ssdb"));
  const ProfileInput in = extract_profile(p);
  // No step markers: the compared span is that of the complete unit ranges, 200 .. 2400 us.
  CHECK(in.window_only);
  CHECK(in.measured_step_ns == 2200 * us);
  CHECK(in.profile_span_ns == p.time_end - p.time_begin);
  CHECK(in.profile_span_ns == 2700 * us);
  // Measured: compute 300 + 250 + 50 + 700 + 200 = 1500 us; exposed all-to-all 200 + 100 = 300 us;
  // idle 50 + 200 + 50 + 100 = 400 us; 1500 + 300 + 400 = 2200.
  CHECK(in.measured_compute_ns == 1500 * us);
  CHECK(in.measured_other_comm_ns == 300 * us);
  CHECK(in.measured_idle_ns == 400 * us);
  CHECK(in.other_collectives == 2);
  // Segments: root head, blocks.0, blocks.1, root tail (empty in a window).
  const SimModel& m = in.model;
  REQUIRE(m.segments.size() == 4);
  const SimSegment& b0 = m.segments[1];
  const SimSegment& b1 = m.segments[2];
  CHECK(m.units[static_cast<std::size_t>(b0.unit)].name == "blocks.0");
  CHECK(b0.fwd_ns == 600 * us);  // 300 + 250 + 50 (the late kernel in the gap before blocks.1)
  CHECK(b0.fwd_extra.other_comm_ns == 200 * us);
  CHECK(b0.fwd_extra.idle_ns == 300 * us);  // 50 + 200 + 50
  CHECK(b1.fwd_ns == 900 * us);
  CHECK(b1.fwd_extra.other_comm_ns == 100 * us);
  CHECK(b1.fwd_extra.idle_ns == 100 * us);
  CHECK(m.segments[0].fwd_ns + m.segments[0].fwd_extra.idle_ns + m.segments[3].fwd_ns + m.segments[3].fwd_extra.idle_ns == 0);
  CHECK(m.other_comm_world == 0);  // sizes unknown: replayed as measured at any world size
  CHECK(m.forward_only);           // a window of forward passes: no backward or optimizer is simulated
  // Replay at the profile's own configuration: 600+200+300 + 900+100+100 = 2200 us, the window.
  const SimResult r = simulate(compile_step(m, FsdpPlan{}, ss::sim::test::linear_cluster(2)));
  CHECK(r.step_ns == in.measured_step_ns);
  CHECK(r.compute_busy_ns == in.measured_compute_ns);
  CHECK(r.other_comm_ns == in.measured_other_comm_ns);
  CHECK(r.idle_ns == in.measured_idle_ns);
}

TEST_CASE("compute waiting for an FSDP all-gather is not idle; a host gap during one is", "[sim][replay]") {
  ss::test::TempDir dir;
  {
    ProfileBuilder b(dir.file("s.ssdb"), 2, 1000);
    b.w.add_step({0, 0, 0, 1000 * us});
    // blocks.0 [100, 500] us: compute 100-400. blocks.1 [500, 1000] us. The all-gather for blocks.1
    // runs 150-600 us and compute resumes at 603 us, 3 us after it ends: the compute stream was
    // waiting for it (400-600 is exposed FSDP communication, modelled by the simulator), and only
    // 600-603, when nothing runs, is idle. Compute 603-800; an all-gather 820-900 runs while the GPU
    // waits for the host, compute resumes at 950 us, 50 us after it ended: 800-950 is idle.
    b.forward(0, 100 * us, 500 * us);
    b.forward(1, 500 * us, 1000 * us);
    b.kernel(b.compute, 100 * us, 400 * us);
    b.collective(b.nccl, CollectiveType::AllGather, 150 * us, 600 * us);
    b.kernel(b.compute, 603 * us, 800 * us);
    b.collective(b.nccl, CollectiveType::AllGather, 820 * us, 900 * us);
    b.kernel(b.compute, 950 * us, 1000 * us);
    b.w.finish();
  }
  const ProfileInput in = extract_profile(load_profile(dir.file("s.ssdb")));
  CHECK_FALSE(in.window_only);
  CHECK(in.measured_step_ns == 1000 * us);
  // Step: compute 300 + 197 + 50 = 547 us; idle 100 (before the first kernel) + 3 + 150 = 253 us;
  // the remaining 200 us (400-600) is the compute stream waiting for the all-gather.
  CHECK(in.measured_compute_ns == 547 * us);
  CHECK(in.measured_idle_ns == 253 * us);
  CHECK(in.measured_other_comm_ns == 0);
  const SimModel& m = in.model;
  REQUIRE(m.segments.size() == 4);
  CHECK(m.segments[0].fwd_extra.idle_ns == 100 * us);  // root head: 0-100
  CHECK(m.segments[1].fwd_ns == 300 * us);             // blocks.0 tile [100, 500]
  CHECK(m.segments[1].fwd_extra.idle_ns == 0);         // 400-500: waiting for the all-gather
  CHECK(m.segments[2].fwd_ns == 247 * us);             // blocks.1 tile [500, 1000]: 197 + 50
  CHECK(m.segments[2].fwd_extra.idle_ns == 153 * us);  // 3 + 150
  CHECK(in.collectives.size() == 2);                   // the all-gathers, for --fit
}
