#include "tests/compare/handmade_profiles.h"

#include "storage/profile_writer.h"

namespace ss::test {
namespace {

Origin origin(const char* notes) {
  Origin o;
  o.kind = OriginKind::Synthetic;
  o.tool = "test_compare";
  o.source_format = "hand-made";
  o.notes = notes;
  o.created_utc = "2026-01-01T00:00:00Z";  // fixed, so that rewriting the same profile is byte-stable
  return o;
}

struct Lanes {
  RowId compute, nccl, thread;
};

Lanes lanes(ProfileWriter& w, int rank) {
  w.add_rank(RankInfo{rank, "host", 100 + rank, rank, "NVIDIA H100", 80LL << 30, 132, 9, 0, 0, 2});
  return {w.add_stream({rank, rank, 7, StreamKind::Compute, "compute"}),
          w.add_stream({rank, rank, 24, StreamKind::Nccl, "nccl"}), w.add_thread({rank, 42, "python"})};
}

void kernel(ProfileWriter& w, int rank, RowId stream, const char* name, TimeNs s, TimeNs e, KernelCategory cat) {
  KernelRow k;
  k.rank = rank;
  k.stream = stream;
  k.start = s;
  k.end = e;
  k.name = w.intern(name);
  k.category = cat;
  w.add_kernel(k);
}

void collective(ProfileWriter& w, int rank, RowId stream, RowId pg, const char* name, CollectiveType type,
                std::int64_t bytes, std::int64_t seq, TimeNs s, TimeNs e) {
  KernelRow k;
  k.rank = rank;
  k.stream = stream;
  k.start = s;
  k.end = e;
  k.name = w.intern(name);
  k.category = KernelCategory::Collective;
  const RowId kid = w.add_kernel(k);
  w.add_collective({rank, kid, type, bytes, w.intern("bf16"), pg, 2, seq, s, e});
}

RowId module_range(ProfileWriter& w, int rank, RowId thread, RowId stream, RowId module, const char* name,
                   RangePhase phase, TimeNs s, TimeNs e, RowId parent = kNoRow, int depth = 0) {
  return w.add_range({rank, thread, stream, s, e, w.intern(name), RangeKind::Module, phase, module, parent, depth});
}

struct Modules {
  RowId root, layer0, attn0, layer1;
};

Modules modules(ProfileWriter& w) {
  Modules m;
  m.root = w.add_module({kNoRow, "", "Model", 0, 0, true, kNoRow, "true"});
  m.layer0 = w.add_module({m.root, "layers.0", "Block", 0, 0, true, kNoRow, "true"});
  m.attn0 = w.add_module({m.layer0, "layers.0.attn", "Attention", 0, 0, false, kNoRow, ""});
  m.layer1 = w.add_module({m.root, "layers.1", "Block", 0, 0, true, kNoRow, "true"});
  return m;
}

}  // namespace

std::string write_profile_a(const std::string& path) {
  ProfileWriter w(path, origin("hand-made profile A"));
  const Modules m = modules(w);
  const RowId pg = w.add_process_group({"0", "fsdp_shard", "[0,1]", 2, "nccl"});
  const Lanes l = lanes(w, 0);
  w.add_step({0, 0, 0, 1000});
  w.add_step({0, 1, 1000, 11000});
  kernel(w, 0, l.compute, "gemm", 100, 600, KernelCategory::Compute);  // step 0
  const RowId fwd = module_range(w, 0, l.thread, kNoRow, m.layer0, "layers.0 (forward)", RangePhase::Forward, 1000, 4000);
  module_range(w, 0, l.thread, kNoRow, m.attn0, "layers.0.attn (forward)", RangePhase::Forward, 1500, 2500, fwd, 1);
  module_range(w, 0, kNoRow, l.compute, m.attn0, "layers.0.attn (forward)", RangePhase::Forward, 2000, 3000);
  const RowId bwd = module_range(w, 0, l.thread, kNoRow, m.layer0, "layers.0 (backward)", RangePhase::Backward, 5000, 9000);
  module_range(w, 0, l.thread, kNoRow, m.layer0, "layers.0 (recompute)", RangePhase::Recompute, 5000, 6000, bwd, 1);
  kernel(w, 0, l.compute, "gemm", 1000, 3000, KernelCategory::Compute);
  kernel(w, 0, l.compute, "gemm", 5000, 8000, KernelCategory::Compute);
  collective(w, 0, l.nccl, pg, "ag_kernel", CollectiveType::AllGather, 1000, 0, 2500, 4500);
  collective(w, 0, l.nccl, pg, "rs_kernel", CollectiveType::ReduceScatter, 2000, 1, 9000, 10000);
  // Rank 1: one step, one kernel; only there so that A has more ranks than B.
  const Lanes l1 = lanes(w, 1);
  w.add_step({1, 1, 1000, 2000});
  kernel(w, 1, l1.compute, "gemm", 1000, 1500, KernelCategory::Compute);
  w.finish();
  return path;
}

std::string write_profile_b(const std::string& path) {
  ProfileWriter w(path, origin("hand-made profile B"));
  const Modules m = modules(w);
  const RowId pg = w.add_process_group({"0", "fsdp_shard", "[0,1]", 2, "nccl"});
  const Lanes l = lanes(w, 0);
  w.add_step({0, 1, 500, 8500});
  w.add_step({0, 2, 8500, 9000});
  const RowId fwd = module_range(w, 0, l.thread, kNoRow, m.layer0, "layers.0 (forward)", RangePhase::Forward, 500, 2500);
  module_range(w, 0, l.thread, kNoRow, m.attn0, "layers.0.attn (forward)", RangePhase::Forward, 1000, 2000, fwd, 1);
  module_range(w, 0, l.thread, kNoRow, m.layer0, "layers.0 (backward)", RangePhase::Backward, 3000, 8000);
  module_range(w, 0, l.thread, kNoRow, m.layer1, "layers.1 (forward)", RangePhase::Forward, 2500, 2700);
  kernel(w, 0, l.compute, "gemm", 500, 2500, KernelCategory::Compute);
  kernel(w, 0, l.compute, "gemm", 3000, 6000, KernelCategory::Compute);
  kernel(w, 0, l.compute, "softmax", 6000, 6500, KernelCategory::Compute);
  collective(w, 0, l.nccl, pg, "ag_kernel", CollectiveType::AllGather, 1000, 0, 2000, 3000);
  collective(w, 0, l.nccl, pg, "rs_kernel", CollectiveType::ReduceScatter, 2000, 1, 7000, 8400);
  w.finish();
  return path;
}

std::string write_profile_flat(const std::string& path) {
  ProfileWriter w(path, origin("hand-made flat profile"));
  const Lanes l = lanes(w, 0);
  kernel(w, 0, l.compute, "gemm", 200, 700, KernelCategory::Compute);
  kernel(w, 0, l.compute, "gemm", 800, 1000, KernelCategory::Compute);
  kernel(w, 0, l.compute, "copy", 1000, 1500, KernelCategory::Memcpy);
  w.finish();
  return path;
}

}  // namespace ss::test
