#pragma once
// Rank 0 of a hand-made CPU profile, as the CPU importer lays one out: the training thread, gloo's
// lane for the collectives, and the thread's operators as the compute lane.
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

}  // namespace ss::test
