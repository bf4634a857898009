// Times `import_files` on Kineto JSON files (one, or several rank files of one job) and prints MB
// of uncompressed JSON per second, with where the time went:
//   bench_import TRACE.json... [repeats]      (repeats: a trailing integer, default 3)
// Phases of the best run: wall time reading + parsing + attributing the inputs (rows handed to the
// writer thread meanwhile) and waiting for the writer thread at the end; CPU time of the main
// thread over the inputs and of the writer thread (the SQLite inserts). Then the parse alone
// (read + simdjson walk into event records, no attribution, no writes).
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "profiler/import/common/input_file.h"
#include "profiler/import/import.h"
#include "profiler/import/kineto/kineto_parse.h"
#include "storage/thread_cpu_time.h"

namespace {

bool is_count(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> inputs(argv + 1, argv + argc);
  int repeats = 3;
  if (inputs.size() > 1 && is_count(inputs.back())) {
    repeats = std::atoi(inputs.back().c_str());
    inputs.pop_back();
  }
  if (inputs.empty() || repeats < 1) {
    std::fprintf(stderr, "usage: bench_import TRACE.json... [repeats]\n");
    return 1;
  }
  double bytes = 0;
  for (const auto& in : inputs) {
    struct stat st {};
    if (stat(in.c_str(), &st) != 0) {
      std::fprintf(stderr, "cannot stat %s\n", in.c_str());
      return 1;
    }
    bytes += static_cast<double>(st.st_size);
  }
  const double mb = bytes / 1e6;
  const std::string out = inputs.front() + ".bench.ssdb";
  double best = 1e30;
  ss::import::ImportSummary best_summary;
  for (int r = 0; r < repeats; ++r) {
    ss::import::ImportOptions o;
    o.show_progress = false;
    const auto t0 = std::chrono::steady_clock::now();
    const auto s = ss::import::import_files(inputs, out, o);
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (sec < best) {
      best = sec;
      best_summary = s;
    }
    std::printf("run %d: %.3f s, %.1f MB/s, %lld kernel rows\n", r + 1, sec, mb / sec,
                static_cast<long long>(s.kernels));
  }
  std::printf("best: %.1f MB of JSON in %.3f s = %.1f MB/s\n", mb, best, mb / best);
  std::printf("  wall: inputs read, parsed, attributed %.3f s; then waiting for the writer thread + closing %.3f s\n",
              best_summary.inputs_seconds, best_summary.finish_seconds);
  std::printf("  CPU: main thread over the inputs (attribution; the first file also parsed) %.3f s; writer thread (SQLite inserts, overlapping) %.3f s\n",
              best_summary.inputs_cpu_seconds, best_summary.sqlite_cpu_seconds);
  // The parse alone (read + simdjson On-Demand walk into event records), without attribution or writes.
  double parse_best = 1e30, parse_cpu_best = 1e30;
  std::size_t events = 0;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = ss::thread_cpu_seconds();
    std::string json;
    ss::import::kineto::KinetoParser parser;
    events = 0;
    for (const auto& in : inputs) {
      ss::import::read_input_file_into(in, json);
      auto trace = parser.parse(json, in, false);
      events += trace.events.size();
      parser.recycle(std::move(trace));
    }
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    parse_best = std::min(parse_best, sec);
    parse_cpu_best = std::min(parse_cpu_best, ss::thread_cpu_seconds() - c0);
  }
  std::printf("parse only (read + parse, no attribution, no writes): %.3f s = %.1f MB/s (CPU %.3f s), %zu events kept\n",
              parse_best, mb / parse_best, parse_cpu_best, events);
  std::remove(out.c_str());
  return 0;
}
