#include <catch2/catch.hpp>

#include <cstring>

#include "capture_sink.h"
#include "profiler/collector/core/module_lanes.h"

using namespace ss;
using namespace ss::collector;

namespace {

MarkerRecord marker(std::uint32_t flags, std::uint64_t id, std::uint32_t tid, TimeNs t, std::string name = "",
                    std::string domain = "") {
  MarkerRecord m;
  m.flags = flags;
  m.id = id;
  m.tid = tid;
  m.timestamp = t;
  m.name = std::move(name);
  m.domain = std::move(domain);
  return m;
}
void range(Attributor& a, std::uint64_t id, std::uint32_t tid, TimeNs s, TimeNs e, const std::string& name,
           const std::string& domain = "") {
  a.add(marker(MarkerRecord::kStart, id, tid, s, name, domain));
  a.add(marker(MarkerRecord::kEnd, id, tid, e));
}
ApiRecord api(std::uint32_t corr, std::uint32_t tid, TimeNs t) {
  ApiRecord r;
  r.correlation = corr;
  r.tid = tid;
  r.start = t;
  r.end = t + 5;
  r.name = "cudaLaunchKernel";
  return r;
}
KernelRecord kernel(std::uint32_t corr, TimeNs s, TimeNs e, std::string name, std::uint32_t stream = 7) {
  KernelRecord k;
  k.correlation = corr;
  k.start = s;
  k.end = e;
  k.name = std::move(name);
  k.stream = stream;
  return k;
}

}  // namespace

TEST_CASE("module lanes: innermost range containing a time, per thread") {
  ModuleLanes lanes;
  lanes.open(1, 10, 100, "", RangePhase::Forward);
  lanes.open(1, 11, 110, "layers.0", RangePhase::Forward);
  lanes.open(1, 12, 120, "layers.0.attn", RangePhase::Forward);
  lanes.close(1, 12, 130);
  lanes.open(1, 13, 140, "layers.0.mlp", RangePhase::Forward);
  lanes.close(1, 13, 150);
  REQUIRE(lanes.innermost(1, 125));
  CHECK(lanes.innermost(1, 125)->fqn == "layers.0.attn");
  CHECK(lanes.innermost(1, 135)->fqn == "layers.0");  // between the two children
  CHECK(lanes.innermost(1, 145)->fqn == "layers.0.mlp");
  CHECK(lanes.innermost(1, 105)->fqn == "");
  CHECK(lanes.innermost(1, 99) == nullptr);
  CHECK(lanes.innermost(2, 125) == nullptr);  // another thread
  lanes.close(1, 11, 160);
  lanes.close(1, 10, 170);
  CHECK(lanes.innermost(1, 165)->fqn == "");
  lanes.prune(1000);
  CHECK(lanes.size() == 0);
}

TEST_CASE("kernel -> launch -> innermost module; ranges with phases; steps") {
  Attributor a(0);
  // forward of layers.0 with a child, on thread 1; backward on the autograd thread 2
  range(a, 1, 1, 1000, 5000, "ss:fwd:");
  range(a, 2, 1, 1100, 4000, "ss:fwd:layers.0");
  range(a, 3, 1, 1200, 2000, "ss:fwd:layers.0.attn");
  range(a, 4, 2, 6000, 9000, "ss:bwd:layers.0");
  range(a, 5, 2, 6500, 7000, "ss:rcp:layers.0.attn");
  range(a, 6, 1, 9500, 9900, "ss:opt:0");
  a.add(api(100, 1, 1500));  // inside attn
  a.add(api(101, 1, 3000));  // inside layers.0 only
  a.add(api(102, 2, 6700));  // recompute on thread 2
  a.add(api(103, 1, 9600));  // optimizer: no module
  a.add(kernel(100, 2000, 2100, "ampere_sgemm"));
  a.add(kernel(101, 3100, 3200, "elementwise"));
  a.add(kernel(102, 6800, 6900, "ampere_sgemm"));
  a.add(kernel(103, 9700, 9800, "adam"));
  a.add(kernel(999, 9800, 9850, "orphan"));  // no launch record
  CaptureSink sink;
  a.drain_all(sink);
  REQUIRE(sink.kernels.size() == 5);
  CHECK(*sink.kernels[0].module == "layers.0.attn");
  CHECK(*sink.kernels[1].module == "layers.0");
  CHECK(*sink.kernels[2].module == "layers.0.attn");
  CHECK_FALSE(sink.kernels[3].module);
  CHECK_FALSE(sink.kernels[4].module);
  CHECK(a.stats().kernels_without_launch == 1);
  // Each kernel keeps the host call that issued it (the launches table), the orphan none.
  REQUIRE(sink.kernels[2].launch);
  CHECK(sink.kernels[2].launch->tid == 2);
  CHECK(sink.kernels[2].launch->start == 6700);
  CHECK(sink.kernels[2].launch->end == 6705);
  CHECK(sink.kernels[2].launch->name == "cudaLaunchKernel");
  CHECK_FALSE(sink.kernels[4].launch);

  REQUIRE(sink.ranges.size() == 6);
  int modules = 0;
  for (const auto& r : sink.ranges) {
    if (r.kind == RangeKind::Module) ++modules;
    if (r.name == "(root)") CHECK(r.phase == RangePhase::Forward);
    if (r.start == 6500) {
      CHECK(r.phase == RangePhase::Recompute);
      CHECK(*r.module == "layers.0.attn");
    }
    if (r.start == 6000) CHECK(r.phase == RangePhase::Backward);
    if (r.start == 9500) CHECK(r.phase == RangePhase::Optimizer);
  }
  CHECK(modules == 5);
  REQUIRE(sink.steps.size() == 1);
  CHECK(sink.steps[0].number == 0);
  CHECK(sink.steps[0].start == 1000);  // first forward range
  CHECK(sink.steps[0].end == 9900);
}

TEST_CASE("records arriving out of order: END before START, kernel before its launch record") {
  Attributor a(0);
  a.add(kernel(5, 300, 400, "k"));
  a.add(marker(MarkerRecord::kEnd, 9, 3, 500));
  a.add(api(5, 3, 200));
  a.add(marker(MarkerRecord::kStart, 9, 3, 100, "ss:fwd:blocks.1"));
  CaptureSink sink;
  a.drain_all(sink);
  REQUIRE(sink.ranges.size() == 1);
  CHECK(sink.ranges[0].start == 100);
  CHECK(sink.ranges[0].end == 500);
  REQUIRE(sink.kernels.size() == 1);
  CHECK(*sink.kernels[0].module == "blocks.1");
}

TEST_CASE("drain waits `settle` before resolving, drain_all closes open ranges") {
  Attributor a(1000);
  a.add(marker(MarkerRecord::kStart, 1, 1, 100, "ss:fwd:m"));
  a.add(api(1, 1, 150));
  a.add(kernel(1, 160, 170, "k"));
  CaptureSink sink;
  a.drain(1100, sink);  // cutoff 100: launch at 150 not settled yet
  CHECK(sink.kernels.empty());
  a.drain(1200, sink);  // cutoff 200
  REQUIRE(sink.kernels.size() == 1);
  CHECK(*sink.kernels[0].module == "m");
  CHECK(sink.ranges.empty());  // still open
  a.drain_all(sink);
  REQUIRE(sink.ranges.size() == 1);
  CHECK(a.stats().unclosed_ranges == 1);
}

TEST_CASE("allocations belong to the module running at cudaMallocAsync; frees to the allocation's owner") {
  Attributor a(0);
  range(a, 1, 1, 100, 200, "ss:fwd:layers.3.mlp");
  range(a, 2, 1, 300, 400, "ss:bwd:layers.3.mlp");
  a.add(api(10, 1, 150));
  a.add(api(11, 1, 350));
  MemoryRecord alloc;
  alloc.address = 0x1000;
  alloc.bytes = 4096;
  alloc.timestamp = 151;
  alloc.correlation = 10;
  alloc.memory_kind = kMemoryKindDevice;
  alloc.stream = 7;
  MemoryRecord release = alloc;
  release.allocation = false;
  release.timestamp = 351;
  release.correlation = 11;
  MemoryRecord pinned = alloc;
  pinned.memory_kind = 2;
  a.add(release);  // out of order on purpose
  a.add(alloc);
  a.add(pinned);
  CaptureSink sink;
  a.drain_all(sink);
  REQUIRE(sink.memory.size() == 2);
  CHECK(sink.memory[0].bytes == 4096);
  CHECK(*sink.memory[0].module == "layers.3.mlp");
  CHECK(sink.memory[1].bytes == -4096);
  CHECK(*sink.memory[1].module == "layers.3.mlp");
  CHECK(a.stats().non_device_memory == 1);
}

TEST_CASE("NCCL kernels take the calls issued on their thread: sizes, communicator, sequence, groups") {
  Attributor a(0);
  struct InitNew { uint64_t comm; int nranks, myrank, dev; };
  struct AgNew { uint64_t comm; size_t bytes; };
  struct RsNew { uint64_t comm; size_t bytes; int op; };
  auto payload = [](std::uint64_t marker, std::uint64_t sid, const void* p, std::size_t n) {
    MarkerPayload mp;
    mp.marker_id = marker;
    mp.schema_id = kNvtxSchemaStaticStart + sid;
    mp.bytes.assign(static_cast<const std::uint8_t*>(p), static_cast<const std::uint8_t*>(p) + n);
    return mp;
  };
  InitNew init{0xfeed, 4, 1, 0};
  a.add(payload(1, 0, &init, sizeof init));
  range(a, 1, 1, 10, 20, "ncclCommInitRank", "NCCL");
  // all-gather #0 (ungrouped): the launch happens inside the API range
  AgNew ag{0xfeed, 1000};
  a.add(payload(2, 4, &ag, sizeof ag));
  range(a, 2, 1, 100, 130, "ncclAllGather", "NCCL");
  a.add(api(50, 1, 110));
  a.add(kernel(50, 140, 300, "_Z31ncclDevKernel_AllGather_RING_LL24ncclDevKernelArgsStorageILm4096EE", 20));
  // a group of two reduce-scatters launched from ncclGroupEnd
  RsNew rs1{0xfeed, 256, 0}, rs2{0xfeed, 512, 0};
  range(a, 3, 1, 400, 401, "ncclGroupStart", "NCCL");
  a.add(payload(4, 7, &rs1, sizeof rs1));
  range(a, 4, 1, 402, 403, "ncclReduceScatter", "NCCL");
  a.add(payload(5, 7, &rs2, sizeof rs2));
  range(a, 5, 1, 404, 405, "ncclReduceScatter", "NCCL");
  range(a, 6, 1, 406, 420, "ncclGroupEnd", "NCCL");
  a.add(api(51, 1, 410));
  a.add(kernel(51, 430, 600, "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", 20));
  // all-gather #1
  AgNew ag2{0xfeed, 1000};
  a.add(payload(7, 4, &ag2, sizeof ag2));
  range(a, 7, 1, 700, 730, "ncclAllGather", "NCCL");
  a.add(api(52, 1, 710));
  a.add(kernel(52, 740, 900, "ncclDevKernel_AllGather_RING_LL", 20));

  CaptureSink sink;
  a.drain_all(sink);
  REQUIRE(sink.kernels.size() == 3);
  for (const auto& k : sink.kernels) CHECK(k.category == KernelCategory::Collective);
  REQUIRE(sink.kernels[0].collectives.size() == 1);
  const auto& c0 = sink.kernels[0].collectives[0];
  CHECK(c0.type == CollectiveType::AllGather);
  CHECK(c0.bytes == 4000);  // 1000 per rank x 4 ranks
  CHECK(c0.group_size == 4);
  CHECK(c0.comm == 0xfeed);
  CHECK(c0.sequence == 0);
  CHECK(c0.start == 140);
  REQUIRE(sink.kernels[1].collectives.size() == 2);
  CHECK(sink.kernels[1].collectives[0].bytes == 1024);
  CHECK(sink.kernels[1].collectives[1].bytes == 2048);
  CHECK(sink.kernels[1].collectives[0].sequence == 1);
  CHECK(sink.kernels[1].collectives[1].sequence == 2);
  CHECK(sink.kernels[1].collectives[0].dtype == "bf16");
  REQUIRE(sink.kernels[2].collectives.size() == 1);
  CHECK(sink.kernels[2].collectives[0].sequence == 3);
  CHECK(sink.collectives.empty());
  int nccl_ranges = 0;
  for (const auto& r : sink.ranges) nccl_ranges += r.kind == RangeKind::Nccl;
  CHECK(nccl_ranges == 7);
}

TEST_CASE("NCCL kernels without NVTX payloads: type from the name, sequence per stream") {
  Attributor a(0);
  a.add(api(1, 1, 10));
  a.add(kernel(1, 20, 30, "ncclKernel_AllReduce_RING_LL_Sum_float", 13));
  a.add(api(2, 1, 40));
  a.add(kernel(2, 50, 60, "ncclKernel_AllReduce_RING_LL_Sum_float", 13));
  a.add(api(3, 1, 45));
  a.add(kernel(3, 55, 65, "ncclKernel_AllReduce_RING_LL_Sum_float", 14));
  CaptureSink sink;
  a.drain_all(sink);
  REQUIRE(sink.kernels.size() == 3);
  CHECK(sink.kernels[0].collectives.at(0).type == CollectiveType::AllReduce);
  CHECK(sink.kernels[0].collectives.at(0).sequence == 0);
  CHECK(sink.kernels[1].collectives.at(0).sequence == 1);  // stream 13's second
  CHECK(sink.kernels[2].collectives.at(0).sequence == 0);  // stream 14's first
}

TEST_CASE("NCCL calls whose kernel record was dropped still become collectives") {
  Attributor a(0);
  range(a, 1, 1, 100, 130, "ncclAllReduce", "NCCL");
  CaptureSink sink;
  a.drain_all(sink);
  REQUIRE(sink.collectives.size() == 1);
  CHECK(sink.collectives[0].type == CollectiveType::AllReduce);
  CHECK(sink.collectives[0].start == 100);
  CHECK(a.stats().nccl_calls_without_kernel == 1);
}

TEST_CASE("a CUDA graph's kernels share their launch's correlation id and all get its module") {
  Attributor a(0);
  range(a, 1, 1, 100, 1000, "ss:fwd:decoder");
  ApiRecord launch = api(70, 1, 200);
  launch.cbid = 311;  // cudaGraphLaunch_v10000
  a.add(launch);
  a.add(kernel(70, 300, 310, "graph_k0"));
  CaptureSink sink;
  a.drain(400, sink);
  a.add(kernel(70, 320, 330, "graph_k1"));  // a later buffer
  a.drain_all(sink);
  REQUIRE(sink.kernels.size() == 2);
  CHECK(*sink.kernels[0].module == "decoder");
  CHECK(*sink.kernels[1].module == "decoder");
  CHECK(a.stats().kernels_without_launch == 0);
}
