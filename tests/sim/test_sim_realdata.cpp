// The simulator on the real Nsight Systems export of an FSDP job (2 H100s), imported with the
// nsys importer. The file is a 0.3 s window with forward passes only (docs/accuracy.md), so this
// checks what the extraction must find in it, not a step-time accuracy.
#include <catch2/catch.hpp>

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
  // The window is the "step" (no step markers), and the simulation can only see its compute.
  CHECK(pi.measured_step_ns == p.time_end - p.time_begin);
  const SimResult r = simulate(compile_step(m, FsdpPlan{}, ClusterModel{}));
  CHECK(r.all_gathers == 0);  // parameter sizes are unknown (0) in this export
  CHECK(r.step_ns < pi.measured_step_ns);
}
