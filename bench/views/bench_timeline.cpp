// Timeline speed figures (docs/benchmarks.md):
//  1. frame CPU time (building the draw lists of every track: culling + folding + counter bars)
//     at ~10M events, p50 and p99 over many frames at each zoom level from the whole profile to one
//     kernel;
//  2. time to first frame for a 1M-kernel profile: load_profile + timeline setup + first draw list;
//  3. RAM per event of the loaded model plus the timeline's own state.
//
// Usage: bench_timeline [--events N] [--frames N] [--levels N] [--profile PATH] [--skip-first-frame]
// The 1M-kernel profile is generated with the synthetic generator at PATH when it is missing.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "profiler/synthetic/synthetic_profile.h"
#include "storage/profile_reader.h"
#include "views/timeline/timeline_controller.h"

using namespace ss;
using namespace ss::timeline;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// This thread's CPU time: unlike the wall clock, it leaves out the time other jobs on a shared
// machine hold the core (the cache they evict still counts).
double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
}

// An in-memory profile shaped like a training trace: per rank a compute stream of short kernels,
// an NCCL stream of longer collectives, three depths of module ranges, a memory counter.
Profile make_profile(std::int64_t target_events, int ranks) {
  Profile p;
  std::mt19937_64 rng(1);
  for (int i = 0; i < 64; ++i) p.strings.add("kernel_name_" + std::to_string(i));
  const std::int64_t per_rank = target_events / ranks;
  const std::int64_t compute = per_rank * 80 / 100, nccl = per_rank * 10 / 100, ranges = per_rank - compute - nccl;
  std::lognormal_distribution<double> dur(std::log(20000.0), 1.0);  // ~20 us median kernels
  for (int r = 0; r < ranks; ++r) {
    RankModel rm;
    rm.info.rank = r;
    auto add_stream = [&](StreamKind kind, std::int64_t n, double scale, TimeNs gap) {
      StreamTrack t;
      t.rank = r;
      t.kind = kind;
      t.native_id = kind == StreamKind::Nccl ? 24 : 7;
      t.events.reserve(static_cast<std::size_t>(n));
      TimeNs now = 0;
      for (std::int64_t i = 0; i < n; ++i) {
        const TimeNs d = 1000 + static_cast<TimeNs>(dur(rng) * scale);
        now += static_cast<TimeNs>(rng() % static_cast<std::uint64_t>(gap));
        KernelEvent e{};
        e.start = now;
        e.end = now + d;
        e.name = static_cast<std::uint32_t>(rng() % 64);
        e.module = -1;
        e.id = static_cast<std::uint32_t>(i);
        e.category = kind == StreamKind::Nccl ? KernelCategory::Collective : KernelCategory::Compute;
        t.events.push_back(e);
        t.max_duration = std::max(t.max_duration, d);
        now += d;
      }
      rm.stream_tracks.push_back(static_cast<std::int32_t>(p.stream_tracks.size()));
      p.time_end = std::max(p.time_end, now);
      p.kernel_count += n;
      p.stream_tracks.push_back(std::move(t));
    };
    add_stream(StreamKind::Compute, compute, 1.0, 4000);
    add_stream(StreamKind::Nccl, nccl, 8.0, 60000);
    // Module ranges at depths 0..2 spread over the compute stream's span.
    const TimeNs span = p.stream_tracks[static_cast<std::size_t>(rm.stream_tracks[0])].events.back().end;
    std::int64_t left = ranges;
    for (int depth = 0; depth < 3; ++depth) {
      const std::int64_t n = depth == 2 ? left : ranges / 3;
      left -= n;
      RangeTrack t;
      t.rank = r;
      t.depth = depth;
      t.thread_id = 1;
      const double each = static_cast<double>(span) / static_cast<double>(std::max<std::int64_t>(1, n));
      for (std::int64_t i = 0; i < n; ++i) {
        RangeEvent e{};
        e.start = static_cast<TimeNs>(static_cast<double>(i) * each);
        e.end = e.start + static_cast<TimeNs>(each * 0.9);
        e.name = static_cast<std::uint32_t>(i % 64);
        e.module = -1;
        e.kind = RangeKind::Module;
        e.phase = i % 2 ? RangePhase::Backward : RangePhase::Forward;
        t.events.push_back(e);
        t.max_duration = std::max(t.max_duration, e.end - e.start);
      }
      p.range_count += n;
      rm.range_tracks.push_back(static_cast<std::int32_t>(p.range_tracks.size()));
      p.range_tracks.push_back(std::move(t));
    }
    std::int64_t v = 0;
    for (TimeNs t = 0; t < span; t += 50000) {
      v += static_cast<std::int64_t>(rng() % 2001) - 1000;
      rm.memory.push_back({t, std::max<std::int64_t>(0, v) << 20});
    }
    p.memory_event_count += static_cast<std::int64_t>(rm.memory.size());
    p.ranks.push_back(std::move(rm));
  }
  return p;
}

void frame_benchmark(std::int64_t events, int frames, int levels) {
  auto t = Clock::now();
  const Profile p = make_profile(events, 8);
  std::printf("in-memory profile: %lld kernels, %lld ranges, %lld counter points, %.1f s to build\n",
              static_cast<long long>(p.kernel_count), static_cast<long long>(p.range_count),
              static_cast<long long>(p.memory_event_count), ms_since(t) / 1000);
  t = Clock::now();
  TimelineController c(p);
  std::printf("timeline setup (tracks and their indexes): %.1f ms, %.1f bytes per event\n", ms_since(t),
              static_cast<double>(c.memory_bytes()) / static_cast<double>(p.kernel_count + p.range_count + p.memory_event_count));
  // Every track on screen at once: the worst case for one frame.
  c.set_size(1600 + kLabelWidth, kRulerHeight + total_tracks_height(c.tracks()) + 10);
  Frame frame;
  std::mt19937_64 rng(2);
  std::printf("%-28s %10s %10s %10s %12s %10s %10s\n", "visible span", "p50 ms", "p99 ms", "max ms", "boxes/frame", "cpu p50", "cpu p99");
  const double whole = static_cast<double>(p.time_end - p.time_begin);
  std::vector<double> all;
  int level = 0;
  for (double span = whole; span >= 5000 && level < levels; span /= 10, ++level) {
    std::vector<double> times, cpu;
    std::size_t items = 0;
    for (int f = 0; f < frames; ++f) {
      const double start = static_cast<double>(rng() % static_cast<std::uint64_t>(std::max(1.0, whole - span + 1)));
      c.viewport().fit(start, start + span);
      const auto t0 = Clock::now();
      const double c0 = thread_cpu_ms();
      c.build_frame(frame);
      cpu.push_back(thread_cpu_ms() - c0);
      times.push_back(ms_since(t0));
      items += frame.items;
    }
    all.insert(all.end(), times.begin(), times.end());
    char label[64];
    std::snprintf(label, sizeof label, "%.3g ms", span / 1e6);
    std::printf("%-28s %10.3f %10.3f %10.3f %12zu %10.3f %10.3f\n", label, percentile(times, 0.5), percentile(times, 0.99),
                *std::max_element(times.begin(), times.end()), items / static_cast<std::size_t>(frames), percentile(cpu, 0.5),
                percentile(cpu, 0.99));
  }
  std::printf("all zoom levels: p50 %.3f ms, p99 %.3f ms over %zu frames\n", percentile(all, 0.5), percentile(all, 0.99),
              all.size());
}

void first_frame_benchmark(const std::string& path) {
  if (!std::filesystem::exists(path)) {
    std::printf("generating %s (1M kernels)...\n", path.c_str());
    SyntheticSpec spec;
    spec.ranks = 8;
    spec.layers = 32;
    spec.min_kernels = 1000000;
    write_synthetic_profile(path, spec);
  }
  for (int run = 0; run < 3; ++run) {
    const auto t0 = Clock::now();
    const Profile p = load_profile(path);
    const double load_ms = ms_since(t0);
    const auto t1 = Clock::now();
    TimelineController c(p);
    c.set_size(1600, 1000);
    Frame frame;
    c.build_frame(frame);
    const double frame_ms = ms_since(t1);
    const std::int64_t events = p.kernel_count + p.range_count + p.memory_event_count +
                                static_cast<std::int64_t>(p.collectives.size());
    std::size_t view_bytes = c.memory_bytes();
    for (const auto& t : frame.tracks) view_bytes += t.spans.capacity() * sizeof(SpanItem) + t.bars.capacity() * sizeof(CounterBar);
    std::printf("run %d: %lld kernels; load %.0f ms + timeline setup and first draw list %.1f ms = %.0f ms to first frame (CPU)\n",
                run, static_cast<long long>(p.kernel_count), load_ms, frame_ms, load_ms + frame_ms);
    if (run == 0)
      std::printf("RAM: model %.1f MB + timeline %.2f MB for %lld events = %.1f bytes/event\n",
                  static_cast<double>(p.memory_bytes()) / 1e6, static_cast<double>(view_bytes) / 1e6,
                  static_cast<long long>(events), static_cast<double>(p.memory_bytes() + view_bytes) / static_cast<double>(events));
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t events = 10'000'000;
  int frames = 200;
  int levels = 1000;
  std::string path = (std::filesystem::temp_directory_path() / "shardscope-bench-1m.ssdb").string();
  bool first_frame = true;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--events") && i + 1 < argc) events = std::atoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--frames") && i + 1 < argc) frames = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--levels") && i + 1 < argc) levels = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--profile") && i + 1 < argc) path = argv[++i];
    else if (!std::strcmp(argv[i], "--skip-first-frame")) first_frame = false;
    else {
      std::fprintf(stderr, "usage: bench_timeline [--events N] [--frames N] [--levels N] [--profile PATH] [--skip-first-frame]\n");
      return 1;
    }
  }
  frame_benchmark(events, frames, levels);
  if (first_frame) first_frame_benchmark(path);
  return 0;
}
