#include "tests/plugins/hand_made_profiles.h"

#include "storage/profile_writer.h"

namespace ss::test {

namespace {

constexpr TimeNs us = 1000;

// A kernel of [a, b) microseconds.
RowId add_kernel_us(ProfileWriter& w, int rank, RowId stream, TimeNs a, TimeNs b, std::uint32_t name, KernelCategory cat,
                    RowId module) {
  KernelRow k;
  k.rank = rank;
  k.stream = stream;
  k.start = a * us;
  k.end = b * us;
  k.name = name;
  k.category = cat;
  k.module = module;
  return w.add_kernel(k);
}

}  // namespace

Origin hand_made_origin(const std::string& tool) {
  Origin o;
  o.kind = OriginKind::Synthetic;
  o.tool = tool;
  o.source_format = "hand-made";
  return o;
}

// Layout (times in us; every value below is multiplied by 1000 to get ns):
//
// modules: "" (root, unit) > layers.0 (unit) > layers.0.mlp ; "" > layers.1 (unit)
// process group P (2 ranks)
//
// rank 0   compute stream: gemm [0,100) mlp | gemm [150,250) mlp | relu [400,450) layers.1 | gemm [600,700) layers.1
//          nccl stream:    AllGather [80,180) seq 0 (kernel without module) | ReduceScatter [460,560) seq 1
//          CPU thread:     module range layers.0 [0,130) depth 0 > layers.0.mlp [20,110) depth 1
//                          aten::relu CpuOp [260,390) depth 0
//          memory:         t=10 +100 unsharded_parameter (layers.0); t=50 +300 activation (layers.0.mlp)
//                          t=120 -300 activation (layers.0.mlp); t=130 +200 gradient (layers.1)
//          GPU capacity 420 bytes
// rank 1   compute stream: gemm [0,100) | gemm [300,400) | gemm [600,700) | relu [800,900)   (no modules)
//          nccl stream:    AllGather [120,200) seq 0, kernel module layers.0.mlp | ReduceScatter [500,560) seq 1
//          no CPU ranges, no memory events
void write_two_rank_profile(const std::string& path) {
  ProfileWriter w(path, hand_made_origin("test_builtin_analyses"));
  const RowId root = w.add_module({kNoRow, "", "Model", 0, 0, true, kNoRow, "true"});
  const RowId l0 = w.add_module({root, "layers.0", "Block", 0, 0, true, kNoRow, "true"});
  const RowId mlp = w.add_module({l0, "layers.0.mlp", "MLP", 0, 0, false, l0, ""});
  const RowId l1 = w.add_module({root, "layers.1", "Block", 0, 0, true, kNoRow, "true"});
  const RowId pg = w.add_process_group({"0", "default_pg", "[0,1]", 2, "nccl"});
  const auto gemm = w.intern("gemm"), relu = w.intern("relu"), ag = w.intern("ncclAllGather"),
             rs = w.intern("ncclReduceScatter");
  for (int r = 0; r < 2; ++r) {
    RankInfo ri;
    ri.rank = r;
    ri.gpu_name = "test GPU";
    ri.gpu_memory_bytes = r == 0 ? 420 : 0;
    ri.world_size = 2;
    w.add_rank(ri);
  }
  auto kernel = [&](int rank, RowId stream, TimeNs a, TimeNs b, std::uint32_t name, KernelCategory cat, RowId module) {
    return add_kernel_us(w, rank, stream, a, b, name, cat, module);
  };
  auto collective = [&](int rank, RowId kernel_id, CollectiveType t, std::int64_t seq, TimeNs a, TimeNs b) {
    w.add_collective({rank, kernel_id, t, 1 << 20, 0, pg, 2, seq, a * us, b * us});
  };
  // rank 0
  const RowId c0 = w.add_stream({0, 0, 7, StreamKind::Compute, "compute"});
  const RowId n0 = w.add_stream({0, 0, 20, StreamKind::Nccl, "nccl"});
  const RowId t0 = w.add_thread({0, 100, "main"});
  kernel(0, c0, 0, 100, gemm, KernelCategory::Compute, mlp);
  kernel(0, c0, 150, 250, gemm, KernelCategory::Compute, mlp);
  kernel(0, c0, 400, 450, relu, KernelCategory::Compute, l1);
  kernel(0, c0, 600, 700, gemm, KernelCategory::Compute, l1);
  collective(0, kernel(0, n0, 80, 180, ag, KernelCategory::Collective, kNoRow), CollectiveType::AllGather, 0, 80, 180);
  collective(0, kernel(0, n0, 460, 560, rs, KernelCategory::Collective, kNoRow), CollectiveType::ReduceScatter, 1, 460,
             560);
  const RowId outer = w.add_range({0, t0, kNoRow, 0, 130 * us, w.intern("layers.0"), RangeKind::Module,
                                   RangePhase::Forward, l0, kNoRow, 0});
  w.add_range({0, t0, kNoRow, 20 * us, 110 * us, w.intern("layers.0.mlp"), RangeKind::Module, RangePhase::Forward, mlp,
               outer, 1});
  w.add_range({0, t0, kNoRow, 260 * us, 390 * us, w.intern("aten::relu"), RangeKind::CpuOp, RangePhase::Forward, kNoRow,
               kNoRow, 0});
  w.add_memory_event({0, 10 * us, 0x1000, 100, MemoryCategory::UnshardedParameter, l0, c0});
  w.add_memory_event({0, 50 * us, 0x2000, 300, MemoryCategory::Activation, mlp, c0});
  w.add_memory_event({0, 120 * us, 0x2000, -300, MemoryCategory::Activation, mlp, c0});
  w.add_memory_event({0, 130 * us, 0x3000, 200, MemoryCategory::Gradient, l1, c0});
  // rank 1
  const RowId c1 = w.add_stream({1, 1, 7, StreamKind::Compute, "compute"});
  const RowId n1 = w.add_stream({1, 1, 20, StreamKind::Nccl, "nccl"});
  kernel(1, c1, 0, 100, gemm, KernelCategory::Compute, kNoRow);
  kernel(1, c1, 300, 400, gemm, KernelCategory::Compute, kNoRow);
  kernel(1, c1, 600, 700, gemm, KernelCategory::Compute, kNoRow);
  kernel(1, c1, 800, 900, relu, KernelCategory::Compute, kNoRow);
  collective(1, kernel(1, n1, 120, 200, ag, KernelCategory::Collective, mlp), CollectiveType::AllGather, 0, 120, 200);
  collective(1, kernel(1, n1, 500, 560, rs, KernelCategory::Collective, kNoRow), CollectiveType::ReduceScatter, 1, 500,
             560);
  w.finish();
}

// Layout (times in us):
// compute stream 7: K1 [0,100) launched at 0 | K2 [200,300) launched at 150 | K3 [400,500) launched
//                   at 250 | K4 [600,700) launched at 450 | K5 [800,900) launched at 650
// nccl stream 20:   N1 [300,380) launched at 290          (an NCCL kernel, no collectives rows)
// copy stream 30:   C1 [500,580) launched at 100          (a memcpy)
// Every launch call lasts 5 us, on thread 100.
void write_launch_profile(const std::string& path) {
  ProfileWriter w(path, hand_made_origin("test_builtin_analyses"));
  RankInfo ri;
  ri.rank = 0;
  ri.gpu_name = "test GPU";
  ri.world_size = 1;
  w.add_rank(ri);
  const RowId compute = w.add_stream({0, 0, 7, StreamKind::Compute, "compute"});
  const RowId nccl = w.add_stream({0, 0, 20, StreamKind::Nccl, "nccl"});
  const RowId copy = w.add_stream({0, 0, 30, StreamKind::Copy, "copy"});
  const RowId thread = w.add_thread({0, 100, "main"});
  const auto launch_name = w.intern("cudaLaunchKernel");
  auto kernel = [&](RowId stream, TimeNs a, TimeNs b, const char* name, KernelCategory cat, TimeNs launched) {
    KernelRow k;
    k.stream = stream;
    k.start = a * us;
    k.end = b * us;
    k.name = w.intern(name);
    k.category = cat;
    const RowId id = w.add_kernel(k);
    w.add_launch({id, 0, thread, launched * us, launched * us + 5 * us, launch_name});
  };
  kernel(compute, 0, 100, "K1", KernelCategory::Compute, 0);
  kernel(compute, 200, 300, "K2", KernelCategory::Compute, 150);
  kernel(compute, 400, 500, "K3", KernelCategory::Compute, 250);
  kernel(compute, 600, 700, "K4", KernelCategory::Compute, 450);
  kernel(compute, 800, 900, "K5", KernelCategory::Compute, 650);
  kernel(nccl, 300, 380, "ncclDevKernel_AllReduce", KernelCategory::Collective, 290);
  kernel(copy, 500, 580, "Memcpy HtoD", KernelCategory::Memcpy, 100);
  w.finish();
}

// Layout (times in us; launch calls last 5 us unless said):
// rank 0, step 1 [0,700): compute A [0,100) launched 0 | all-gather AG0 [150,400) on the NCCL
//          stream, launched 140, module layers.0 | compute B [400,700) launched 120
// rank 1, step 1 [0,600): compute C [0,300) launched 0 | all-gather AG1 [300,400) launched 290,
//          module layers.0 | compute D [400,600) launched 150
// AG0 and AG1 are one collective (group P, sequence 0).
// rank 2, step 2 [1000,1400): K1 [1000,1100) launched 1000 | K2 [1300,1400) launch call [1250,1260)
void write_critical_path_profile(const std::string& path) {
  ProfileWriter w(path, hand_made_origin("test_builtin_analyses"));
  const RowId root = w.add_module({kNoRow, "", "Model", 0, 0, true, kNoRow, "true"});
  const RowId l0 = w.add_module({root, "layers.0", "Block", 0, 0, true, kNoRow, "true"});
  const RowId pg = w.add_process_group({"0", "default_pg", "[0,1]", 2, "nccl"});
  const auto launch_name = w.intern("cudaLaunchKernel");
  for (int r = 0; r < 3; ++r) {
    RankInfo ri;
    ri.rank = r;
    ri.gpu_name = "test GPU";
    ri.world_size = 3;
    w.add_rank(ri);
  }
  auto kernel = [&](int rank, RowId stream, RowId thread, TimeNs a, TimeNs b, const char* name, KernelCategory cat,
                    RowId module, TimeNs launch_a, TimeNs launch_b) {
    KernelRow k;
    k.rank = rank;
    k.stream = stream;
    k.start = a * us;
    k.end = b * us;
    k.name = w.intern(name);
    k.category = cat;
    k.module = module;
    const RowId id = w.add_kernel(k);
    w.add_launch({id, rank, thread, launch_a * us, launch_b * us, launch_name});
    return id;
  };
  for (int r = 0; r < 2; ++r) {
    const RowId c = w.add_stream({r, 0, 7, StreamKind::Compute, "compute"});
    const RowId n = w.add_stream({r, 0, 20, StreamKind::Nccl, "nccl"});
    const RowId t = w.add_thread({r, 100, "main"});
    const bool r0 = r == 0;
    kernel(r, c, t, 0, r0 ? 100 : 300, r0 ? "A" : "C", KernelCategory::Compute, kNoRow, 0, 5);
    const TimeNs ag_a = r0 ? 150 : 300, ag_launch = r0 ? 140 : 290;
    const RowId ag = kernel(r, n, t, ag_a, 400, "ncclDevKernel_AllGather_RING_LL", KernelCategory::Collective, l0,
                            ag_launch, ag_launch + 5);
    w.add_collective({r, ag, CollectiveType::AllGather, 1 << 20, 0, pg, 2, 0, ag_a * us, 400 * us});
    kernel(r, c, t, 400, r0 ? 700 : 600, r0 ? "B" : "D", KernelCategory::Compute, kNoRow, r0 ? 120 : 150,
           r0 ? 125 : 155);
    w.add_step({r, 1, 0, (r0 ? 700 : 600) * us});
  }
  const RowId c2 = w.add_stream({2, 0, 7, StreamKind::Compute, "compute"});
  const RowId t2 = w.add_thread({2, 100, "main"});
  kernel(2, c2, t2, 1000, 1100, "K1", KernelCategory::Compute, kNoRow, 1000, 1005);
  kernel(2, c2, t2, 1300, 1400, "K2", KernelCategory::Compute, kNoRow, 1250, 1260);
  w.add_step({2, 2, 1000 * us, 1400 * us});
  w.finish();
}

// One rank with two steps, [1000, 2000) and [3000, 4000) us; units tok_embeddings and output.
// nccl stream: AllGather [100,200) before every step (initialisation) | AllGather [1000,1050) step 0 |
//              ReduceScatter [1950,1990) step 0 | AllReduce [2500,2600) between the steps |
//              ReduceScatter [3010,3020) step 1, before its first compute | Send [1920,1940) step 0
//              (a pipeline stage's, after the output's compute) | SendRecv [1210,1230) step 0 (an
//              all-to-all's kernel, after tok_embeddings' compute); no module on any kernel
// compute:     gemm [1100,1200) tok_embeddings | gemm [1800,1900) output | gemm [3100,3200) tok_embeddings
void write_steps_profile(const std::string& path) {
  ProfileWriter w(path, hand_made_origin("test_builtin_analyses"));
  const RowId root = w.add_module({kNoRow, "", "Model", 0, 0, true, kNoRow, "true"});
  const RowId emb = w.add_module({root, "tok_embeddings", "Embedding", 0, 0, true, kNoRow, "true"});
  const RowId out = w.add_module({root, "output", "Linear", 0, 0, true, kNoRow, "true"});
  const RowId pg = w.add_process_group({"0", "default_pg", "[0,1]", 2, "gloo"});
  RankInfo ri;
  ri.world_size = 2;
  w.add_rank(ri);
  const RowId compute = w.add_stream({0, 0, 7, StreamKind::Compute, "compute"});
  const RowId nccl = w.add_stream({0, 0, 20, StreamKind::Nccl, "nccl"});
  const auto gemm = w.intern("gemm"), coll = w.intern("ncclKernel");
  auto collective = [&](CollectiveType t, std::int64_t seq, TimeNs a, TimeNs b) {
    const RowId k = add_kernel_us(w, 0, nccl, a, b, coll, KernelCategory::Collective, kNoRow);
    w.add_collective({0, k, t, 1 << 20, 0, pg, 2, seq, a * us, b * us});
  };
  w.add_step({0, 0, 1000 * us, 2000 * us});
  w.add_step({0, 1, 3000 * us, 4000 * us});
  collective(CollectiveType::AllGather, 0, 100, 200);
  collective(CollectiveType::AllGather, 1, 1000, 1050);
  add_kernel_us(w, 0, compute, 1100, 1200, gemm, KernelCategory::Compute, emb);
  add_kernel_us(w, 0, compute, 1800, 1900, gemm, KernelCategory::Compute, out);
  collective(CollectiveType::SendRecv, 6, 1210, 1230);
  collective(CollectiveType::Send, 5, 1920, 1940);
  collective(CollectiveType::ReduceScatter, 2, 1950, 1990);
  collective(CollectiveType::AllReduce, 3, 2500, 2600);
  collective(CollectiveType::ReduceScatter, 4, 3010, 3020);
  add_kernel_us(w, 0, compute, 3100, 3200, gemm, KernelCategory::Compute, emb);
  w.finish();
}

// Two ranks, one step each: rank 0 [1000,2000), rank 1 [1010,2000). Collectives (start of rank 0,
// start of rank 1), pg 0 over both ranks unless said:
//   seq 0 all_gather  (100, 300)     before either step: the initialisation, rank 0 first by 200
//   seq 1 all_gather  (1100, 1130)   in the steps: rank 1 last by 30
//   seq 2 reduce_scatter (1500, 1480) in the steps: rank 0 last by 20
//   seq 3 all_reduce  (1005, 990)    rank 1's start is before its step, rank 0's inside: in the
//                                    steps, rank 0 last by 15
//   seq 4 send_recv   (1700, 1750)   an all-to-all's NCCL kernel (grouped sends and receives on
//                                    every rank): a collective, rank 1 last by 50
//   pg 1 seq 0: rank 0 sends at 1600, rank 1's receive was posted at 1200 (a pipeline stage waiting
//                                    for its peer): rank 0 "last" by 400
//   pg 1 seq 1: rank 0 all_reduce at 1300, rank 1 send at 1800: not one operation (gloo's numbering
//                                    of a group's sends with its collectives), no match
void write_two_rank_steps_profile(const std::string& path) {
  ProfileWriter w(path, hand_made_origin("test_builtin_analyses"));
  const RowId pg = w.add_process_group({"0", "default_pg", "[0,1]", 2, "gloo"});
  const RowId p2p = w.add_process_group({"1", "pp", "[0,1]", 2, "gloo"});
  const auto coll = w.intern("ncclKernel");
  RowId nccl[2];
  for (int r = 0; r < 2; ++r) {
    RankInfo ri;
    ri.rank = r;
    ri.world_size = 2;
    w.add_rank(ri);
    nccl[r] = w.add_stream({r, 0, 20, StreamKind::Nccl, "nccl"});
  }
  w.add_step({0, 0, 1000 * us, 2000 * us});
  w.add_step({1, 0, 1010 * us, 2000 * us});
  auto collective = [&](int rank, RowId group, CollectiveType t, std::int64_t seq, TimeNs a) {
    const RowId k = add_kernel_us(w, rank, nccl[rank], a, a + 10, coll, KernelCategory::Collective, kNoRow);
    w.add_collective({rank, k, t, 1 << 20, 0, group, 2, seq, a * us, (a + 10) * us});
  };
  const std::pair<CollectiveType, std::pair<TimeNs, TimeNs>> in_pg0[] = {
      {CollectiveType::AllGather, {100, 300}},
      {CollectiveType::AllGather, {1100, 1130}},
      {CollectiveType::ReduceScatter, {1500, 1480}},
      {CollectiveType::AllReduce, {1005, 990}},
      {CollectiveType::SendRecv, {1700, 1750}}};
  for (std::int64_t seq = 0; seq < 5; ++seq) {
    collective(0, pg, in_pg0[seq].first, seq, in_pg0[seq].second.first);
    collective(1, pg, in_pg0[seq].first, seq, in_pg0[seq].second.second);
  }
  collective(0, p2p, CollectiveType::Send, 0, 1600);
  collective(1, p2p, CollectiveType::Recv, 0, 1200);
  collective(0, p2p, CollectiveType::AllReduce, 1, 1300);
  collective(1, p2p, CollectiveType::Send, 1, 1800);
  w.finish();
}

}  // namespace ss::test
