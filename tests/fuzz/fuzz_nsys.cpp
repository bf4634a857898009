// libFuzzer target for the Nsight Systems SQLite importer: the input bytes are written to a
// temporary file (SQLite reads files, not buffers) and imported with import_files. Bad input must
// end in a ProfileError / ImportError, never a crash, a leak or a hang. Seed the corpus with small
// nsys-like SQLite files (scripts/fuzz.sh, or tests/import/nsys fixtures).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "profiler/import/import.h"

namespace {

std::string scratch_dir() {
  static const std::string dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string d = std::string(tmp && *tmp ? tmp : "/tmp") + "/fuzz_nsys." + std::to_string(::getpid());
    (void)std::system(("mkdir -p '" + d + "'").c_str());
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string in = scratch_dir() + "/input.sqlite";
  const std::string out = scratch_dir() + "/out.ssdb";
  if (std::FILE* f = std::fopen(in.c_str(), "wb")) {
    if (size > 0) std::fwrite(data, 1, size, f);
    std::fclose(f);
  } else {
    return 0;
  }
  try {
    ss::import::import_files({in}, out, {.show_progress = false});
  } catch (const ss::ProfileError&) {
    // expected for bad input (ImportError derives from ProfileError)
  }
  std::remove(out.c_str());
  std::remove(in.c_str());
  return 0;
}
