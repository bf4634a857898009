// Times `import_files` on one Kineto JSON file and prints MB/s of uncompressed JSON.
//   bench_import TRACE.json [repeats]
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "profiler/import/common/input_file.h"
#include "profiler/import/import.h"
#include "profiler/import/kineto/kineto_parse.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_import TRACE.json [repeats]\n");
    return 1;
  }
  const std::string in = argv[1];
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
  struct stat st {};
  if (stat(in.c_str(), &st) != 0) return 1;
  const double mb = static_cast<double>(st.st_size) / 1e6;
  const std::string out = in + ".bench.ssdb";
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    ss::import::ImportOptions o;
    o.show_progress = false;
    const auto t0 = std::chrono::steady_clock::now();
    const auto s = ss::import::import_files({in}, out, o);
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, sec);
    std::printf("run %d: %.2f s, %.1f MB/s, %lld kernels\n", r + 1, sec, mb / sec, static_cast<long long>(s.kernels));
  }
  std::printf("best: %.1f MB of JSON in %.2f s = %.1f MB/s\n", mb, best, mb / best);
  // The parse alone (read + simdjson On-Demand walk into event records), without the SQLite writes.
  double parse_best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string json = ss::import::read_input_file(in);
    ss::import::kineto::KinetoParser parser;
    const auto trace = parser.parse(json, in, false);
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    parse_best = std::min(parse_best, sec);
    if (r == 0) std::printf("parsed %zu events\n", trace.events.size());
  }
  std::printf("parse only (read + parse, no profile writes): %.2f s = %.1f MB/s\n", parse_best, mb / parse_best);
  std::remove(out.c_str());
  return 0;
}
