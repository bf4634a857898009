#pragma once
// Rank 0 of a hand-made CPU profile, as the CPU importer lays one out: the training thread, gloo's
// lane for the collectives, and the thread's operators as the compute lane.
#include <string>

#include "storage/profile_writer.h"

namespace ss::test {

struct CpuRankLanes {
  RowId thread, gloo, compute;
};

inline CpuRankLanes add_cpu_rank(ProfileWriter& w, int world_size) {
  RankInfo ri;
  ri.world_size = world_size;
  ri.gpu_name = "CPU";
  w.add_rank(ri);
  return {w.add_thread({0, 1, "main"}), w.add_stream({0, 0, 1, StreamKind::Nccl, "gloo"}),
          w.add_stream({0, 0, 2, StreamKind::Compute, "main"})};
}

// Writes what the CPU importer makes of a training thread's work: a module's range with its
// operators as one compute kernel under it (none for a module with none of its own: the root), and
// a collective on gloo's lane.
struct CpuTraceWriter {
  ProfileWriter& w;
  CpuRankLanes lanes;
  std::uint32_t gloo, name, op;
  CpuTraceWriter(ProfileWriter& writer, int world_size)
      : w(writer), lanes(add_cpu_rank(writer, world_size)), gloo(w.intern("gloo")), name(w.intern("m")), op(w.intern("aten::mm")) {}
  void module_range(RowId m, TimeNs s, TimeNs e, RangePhase ph, bool computes = true, int depth = 0) {
    w.add_range({0, lanes.thread, kNoRow, s, e, name, RangeKind::Module, ph, m, kNoRow, depth});
    if (computes) w.add_kernel({0, lanes.compute, s + 20'000, e, op, 0, kNoRow, KernelCategory::Compute, m, 0});
  }
  void collective(RowId m, TimeNs at, CollectiveType type, std::int64_t bytes, RowId process_group = kNoRow) {
    const RowId k = w.add_kernel({0, lanes.gloo, at, at + 10'000, gloo, 0, kNoRow, KernelCategory::Collective, m, 0});
    w.add_collective({0, k, type, bytes, 0, process_group, 2, -1, at, at + 10'000});
  }
  // One of FSDP's own ranges ("FSDP::all_gather (blocks.0)") on the training thread.
  void fsdp_range(const std::string& what, RowId m, TimeNs at, RangePhase ph) {
    w.add_range({0, lanes.thread, kNoRow, at, at + 30'000, w.intern("FSDP::" + what), RangeKind::Fsdp, ph, m, kNoRow, 2});
  }
};

}  // namespace ss::test
