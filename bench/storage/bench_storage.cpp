// Storage throughput and size: writes N kernel rows through ProfileWriter, then loads the file
// into the in-memory model. Reports rows/s for both, bytes on disk per kernel and bytes of RAM
// per kernel (model arrays, and the process RSS growth during the load).
//
//   build/bench/storage/bench_storage [--kernels N] [--out FILE] [--keep]
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "storage/profile_reader.h"
#include "storage/profile_writer.h"

namespace {

long rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  return 0;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t n = 10'000'000;
  std::string out = "/tmp/shardscope-bench-storage.ssdb";
  bool keep = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--kernels") && i + 1 < argc) n = std::atoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
    else if (!std::strcmp(argv[i], "--keep")) keep = true;
    else {
      std::fprintf(stderr, "usage: %s [--kernels N] [--out FILE] [--keep]\n", argv[0]);
      return 1;
    }
  }
  constexpr int kRanks = 8, kStreamsPerRank = 2, kNames = 400, kModules = 300;

  // Rows are generated before timing so the figure is the writer's, not the generator's.
  std::mt19937_64 rng(42);
  std::vector<ss::KernelRow> rows(static_cast<std::size_t>(n));
  {
    std::vector<ss::TimeNs> clock(kRanks * kStreamsPerRank, 1'000'000);
    for (std::int64_t i = 0; i < n; ++i) {
      auto& k = rows[static_cast<std::size_t>(i)];
      const int lane = static_cast<int>(i % (kRanks * kStreamsPerRank));
      k.rank = lane / kStreamsPerRank;
      k.stream = lane + 1;
      const ss::TimeNs dur = 2'000 + static_cast<ss::TimeNs>(rng() % 200'000);
      k.start = clock[static_cast<std::size_t>(lane)] + static_cast<ss::TimeNs>(rng() % 5'000);
      k.end = k.start + dur;
      clock[static_cast<std::size_t>(lane)] = k.end;
      k.name = 1 + static_cast<std::uint32_t>(rng() % kNames);
      k.correlation = i + 1;
      k.launch_config = 1 + static_cast<ss::RowId>(rng() % 50);
      k.category = lane % kStreamsPerRank == 1 ? ss::KernelCategory::Collective : ss::KernelCategory::Compute;
      k.module = 1 + static_cast<ss::RowId>(rng() % kModules);
    }
  }

  auto t0 = std::chrono::steady_clock::now();
  {
    ss::Origin origin;
    origin.kind = ss::OriginKind::Synthetic;
    origin.tool = "bench_storage";
    ss::ProfileWriter w(out, origin);
    for (int i = 1; i <= kNames; ++i) w.intern("kernel_name_" + std::to_string(i) + "_with_a_typical_length_of_sixty_chars");
    for (int i = 0; i < 50; ++i) w.launch_config({i + 1, 1, 1, 128, 1, 1, 0, 32});
    ss::RowId parent = w.add_module({ss::kNoRow, "", "Model", 0, 0, true, ss::kNoRow, "true"});
    for (int i = 1; i < kModules; ++i) w.add_module({parent, "layers." + std::to_string(i), "Block", 1, 2, false, parent, ""});
    for (int r = 0; r < kRanks; ++r)
      for (int s = 0; s < kStreamsPerRank; ++s)
        w.add_stream({r, r, 7 + s, s ? ss::StreamKind::Nccl : ss::StreamKind::Compute, ""});
    for (const auto& k : rows) w.add_kernel(k);
    w.finish();
  }
  const double write_s = seconds_since(t0);
  rows.clear();
  rows.shrink_to_fit();

  struct stat st {};
  ::stat(out.c_str(), &st);

  const long rss_before = rss_kib();
  t0 = std::chrono::steady_clock::now();
  ss::Profile p = ss::load_profile(out);
  const double load_s = seconds_since(t0);
  const long rss_after = rss_kib();

  std::printf("kernels                 %lld\n", static_cast<long long>(p.kernel_count));
  std::printf("write                   %.2f s  %.2f M rows/s\n", write_s, double(n) / write_s / 1e6);
  std::printf("load                    %.2f s  %.2f M rows/s\n", load_s, double(n) / load_s / 1e6);
  std::printf("disk bytes per kernel   %.1f  (file %lld bytes)\n", double(st.st_size) / double(n),
              static_cast<long long>(st.st_size));
  std::printf("model bytes per kernel  %.1f  (arrays %zu bytes)\n", double(p.memory_bytes()) / double(n),
              p.memory_bytes());
  std::printf("RSS growth per kernel   %.1f  (%ld KiB)\n", double(rss_after - rss_before) * 1024.0 / double(n),
              rss_after - rss_before);
  if (!keep) ::unlink(out.c_str());
  return p.kernel_count == n ? 0 : 1;
}
