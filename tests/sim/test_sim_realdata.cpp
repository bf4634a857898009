// The simulator on the real Nsight Systems exports of an FSDP job (2 H100s), imported with the
// nsys importer. The files are 0.3 s windows with forward passes only and no FSDP collectives
// (docs/accuracy.md): this checks what the extraction must find in them and that the window
// replay accounts for every nanosecond of it, not a step-time prediction.
#include <catch2/catch.hpp>

#include <cmath>

#include "profiler/import/import.h"
#include "profiler/sim/profile_extract.h"
#include "profiler/sim/step_simulator.h"
#include "storage/profile_reader.h"
#include "tests/support/test_paths.h"

using namespace ss;
using namespace ss::sim;

TEST_CASE("nsys FSDP window: units, forward segments, no FSDP collectives", "[sim][realdata]") {
  ss::test::TempDir dir;
  const std::string in = ss::test::trace("nsys-h100-fsdp-2gpu/mfu_2gpu_before.sqlite");
  ss::import::ImportOptions opt;
  opt.show_progress = false;
  ss::import::import_files({in}, dir.file("before.ssdb"), opt);
  const Profile p = load_profile(dir.file("before.ssdb"));
  const ProfileInput pi = extract_profile(p);
  const SimModel& m = pi.model;
  // 18 FSDP units, blocks.2..19 (the model root is not one, so an empty root is added):
  // sqlite3 F "select count(distinct substr(text, instr(text,'(')+1, instr(text,')')-instr(text,'(')-1))
  //            from NVTX_EVENTS where text glob 'FSDP::*'"  -> 18
  CHECK(m.units.size() == 18 + 1);
  CHECK(m.units.back().is_root);
  CHECK(m.units.back().param_count == 0);
  // Forward segments: one per block whose pre_forward and post_forward both lie in the window on
  // rank 0: sqlite3 F "select count(*) from (select substr(text, instr(text,'(')+1,
  //   instr(text,')')-instr(text,'(')-1) b from NVTX_EVENTS where globalTid=281477392629904 and
  //   text glob 'FSDP::p*_forward*' group by b having min(case when text glob 'FSDP::pre*' then
  //   start end) < max(case when text glob 'FSDP::post*' then start end))"  -> 16
  int blocks = 0;
  for (const auto& s : m.segments) {
    if (m.units[static_cast<std::size_t>(s.unit)].is_root) continue;
    ++blocks;
    CHECK(s.fwd_ns > 0);
    // No backward in the window: sqlite3 F "select count(*) from NVTX_EVENTS where text glob '*backward*'" -> 0
    CHECK(s.bwd_ns == 0);
  }
  CHECK(blocks == 16);
  // Collectives are sequence-parallel SendRecv, no all-gather / reduce-scatter:
  // sqlite3 F "select count(*) from CUPTI_ACTIVITY_KIND_KERNEL k join StringIds s on s.id=k.shortName
  //            where s.value glob '*AllGather*' or s.value glob '*ReduceScatter*'"  -> 0
  CHECK(pi.collectives.empty());
  CHECK(pi.world_size == 2);
  // No step markers: the "step" is the span of the complete unit ranges of rank 0, shorter than
  // the recording (blocks cut by the window's edges are left out).
  CHECK(pi.window_only);
  CHECK(pi.model.forward_only);
  CHECK(pi.profile_span_ns == p.time_end - p.time_begin);
  CHECK(pi.measured_step_ns < pi.profile_span_ns);
  const SimResult r = simulate(compile_step(m, FsdpPlan{}, ClusterModel{}));
  CHECK(r.all_gathers == 0);  // parameter sizes are unknown (0) in this export
}

namespace {
struct WindowCase {
  const char* file;
  TimeNs span_ns;
  int send_recv;
};
}  // namespace

TEST_CASE("nsys FSDP windows: replay of compute, all-to-all and idle matches the measured window", "[sim][realdata]") {
  // span_ns: sqlite3 F.ssdb "select max(start_ns+duration_ns)-min(start_ns) from ranges where rank=0 and kind=1"
  // send_recv: sqlite3 F.ssdb "with w as (select min(start_ns) lo, max(start_ns+duration_ns) hi from ranges
  //   where rank=0 and kind=1) select count(*) from collectives, w where rank=0 and start_ns>=lo and start_ns<hi"
  const WindowCase cases[] = {{"mfu_2gpu_before", 285'595'110, 32}, {"mfu_2gpu_after", 278'995'485, 28}};
  for (const auto& wc : cases) {
    INFO(wc.file);
    ss::test::TempDir dir;
    ss::import::ImportOptions opt;
    opt.show_progress = false;
    ss::import::import_files({ss::test::trace(std::string("nsys-h100-fsdp-2gpu/") + wc.file + ".sqlite")}, dir.file("w.ssdb"), opt);
    const ProfileInput pi = extract_profile(load_profile(dir.file("w.ssdb")));
    CHECK(pi.measured_step_ns == wc.span_ns);
    CHECK(pi.other_collectives == wc.send_recv);
    // The sequence-parallel all-to-all runs on the compute stream (compute waits for it) and the
    // GPU idles between host-bound launches: both are there and replayed as measured.
    CHECK(pi.measured_other_comm_ns > 0);
    CHECK(pi.measured_idle_ns > 0);
    ClusterModel c;
    c.world_size = pi.world_size;
    const SimResult r = simulate(compile_step(pi.model, FsdpPlan{}, c));
    CHECK(r.compute_busy_ns == pi.measured_compute_ns);
    CHECK(r.other_comm_ns == pi.measured_other_comm_ns);
    CHECK(r.idle_ns == pi.measured_idle_ns);
    // Bound: with no FSDP collective in the window nothing is modelled, so the replay is the
    // measured decomposition of the window and may differ from it only by rounding (at most 1 ns
    // per segment and term); anything more is time dropped or counted twice. Far inside the 3 %
    // target, which this window cannot test (docs/accuracy.md).
    const double err = std::abs(double(r.step_ns) - double(pi.measured_step_ns));
    CHECK(err <= 3.0 * double(pi.model.segments.size()));
    CHECK(err / double(pi.measured_step_ns) <= 0.03);
  }
}
