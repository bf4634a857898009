// bench_collector [kernels_per_rank=1000000] [ranks=2]
// Feeds a synthetic FSDP-like record stream (module ranges, one launch record per kernel, NCCL
// calls with payloads every 50 kernels) through Attributor -> RankFileWriter for each rank, then
// merges the rank files. Prints records/s for the writer path and rows/s for the merge.
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "profiler/collector/core/attributor.h"
#include "profiler/collector/core/merge.h"
#include "profiler/collector/core/rank_file_writer.h"

using namespace ss;
using namespace ss::collector;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::int64_t write_rank(const std::string& path, int rank, std::int64_t kernels) {
  constexpr TimeNs kT0 = 1'700'000'000'000'000'000;
  RankInfo info;
  info.rank = rank;
  info.host = "bench";
  RankFileWriter writer(path, info, kT0, "bench");
  Attributor a;  // default 2 s settle, drained every "second" of synthetic time like the collector
  std::int64_t records = 0;
  std::uint64_t marker = 1;
  TimeNs t = kT0;
  TimeNs last_drain = kT0;
  struct Ag { std::uint64_t comm; std::size_t bytes; } ag{0xfeed, 1 << 20};
  for (std::int64_t k = 0; k < kernels; ++k) {
    if (k % 200 == 0) {  // a layer: open a module range
      MarkerRecord m;
      m.flags = MarkerRecord::kStart;
      m.id = marker;
      m.tid = 1;
      m.timestamp = t;
      m.name = "ss:fwd:layers." + std::to_string(k / 200 % 80);
      a.add(m);
      ++records;
    }
    const bool nccl = k % 50 == 49;
    if (nccl) {
      MarkerPayload p;
      p.marker_id = 1'000'000'000 + static_cast<std::uint64_t>(k);
      p.schema_id = kNvtxSchemaStaticStart + 4;
      p.bytes.assign(reinterpret_cast<const std::uint8_t*>(&ag), reinterpret_cast<const std::uint8_t*>(&ag) + sizeof ag);
      a.add(std::move(p));
      MarkerRecord s;
      s.flags = MarkerRecord::kStart;
      s.id = 1'000'000'000 + static_cast<std::uint64_t>(k);
      s.tid = 1;
      s.timestamp = t;
      s.name = "ncclAllGather";
      s.domain = "NCCL";
      a.add(s);
      s.flags = MarkerRecord::kEnd;
      s.timestamp = t + 3'000;
      s.name.clear();
      s.domain.clear();
      a.add(s);
      records += 3;
    }
    ApiRecord api;
    api.correlation = static_cast<std::uint32_t>(k + 1);
    api.tid = 1;
    api.start = t + 1'000;
    api.end = t + 2'000;
    api.name = "cudaLaunchKernel";
    a.add(api);
    KernelRecord kr;
    kr.correlation = api.correlation;
    kr.start = t + 5'000;
    kr.end = t + 15'000;
    kr.stream = nccl ? 20 : 7;
    kr.name = nccl ? "ncclDevKernel_AllGather_RING_LL" : "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64";
    kr.config = {132, 1, 1, 256, 1, 1, 49152, 168};
    a.add(std::move(kr));
    records += 2;
    t += 10'000;
    if (k % 200 == 199) {
      MarkerRecord e;
      e.flags = MarkerRecord::kEnd;
      e.id = marker++;
      e.tid = 1;
      e.timestamp = t;
      a.add(e);
      ++records;
    }
    if (t - last_drain >= 1'000'000'000) {
      a.drain(t, writer);
      writer.commit();
      last_drain = t;
    }
  }
  a.drain_all(writer);
  writer.finish();
  return records;
}

}  // namespace

// bench_collector [KERNELS_PER_RANK [RANKS [KEEP_MERGED_PROFILE]]]
int main(int argc, char** argv) {
  const std::int64_t kernels = argc > 1 ? std::atoll(argv[1]) : 1'000'000;
  const int ranks = argc > 2 ? std::atoi(argv[2]) : 2;
  const auto dir = std::filesystem::temp_directory_path() / ("ss_bench_collector_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::int64_t records = 0;
  // CPU time as well as wall time: the writer thread's cost to the job is its CPU time.
  const std::clock_t c0 = std::clock();
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < ranks; ++r)
    records += write_rank((dir / ("shardscope_rank" + std::to_string(r) + "_lrank" + std::to_string(r) + "_pid" +
                                  std::to_string(1000 + r) + ".ssdb"))
                              .string(),
                          r, kernels);
  const double write_s = seconds_since(t0);
  const double write_cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
  const std::clock_t c1 = std::clock();
  const auto t1 = std::chrono::steady_clock::now();
  MergeOptions mo;
  mo.output = (dir / "merged.ssdb").string();
  auto result = merge_rank_files(find_rank_inputs(dir.string()), mo);
  const double merge_s = seconds_since(t1);
  const double merge_cpu = double(std::clock() - c1) / CLOCKS_PER_SEC;
  std::printf("ranks %d, kernels/rank %lld\n", ranks, static_cast<long long>(kernels));
  std::printf("writer path: %lld records, wall %.2f s, CPU %.2f s = %.0f ns CPU/record (%.2f M records/s of CPU)\n",
              static_cast<long long>(records), write_s, write_cpu, write_cpu * 1e9 / records, records / write_cpu / 1e6);
  std::printf("merge: %lld kernels + %lld ranges, wall %.2f s, CPU %.2f s = %.2f M kernels/s of CPU\n",
              static_cast<long long>(result.kernels), static_cast<long long>(result.ranges), merge_s, merge_cpu,
              result.kernels / merge_cpu / 1e6);
  std::printf("merged file: %.1f MB\n", std::filesystem::file_size(mo.output) / 1e6);
  if (argc > 3)  // keep the merged profile (e.g. to run the analyses on the collector's format)
    std::filesystem::copy_file(mo.output, argv[3], std::filesystem::copy_options::overwrite_existing);
  std::filesystem::remove_all(dir);
  return 0;
}
