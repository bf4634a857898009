// libFuzzer target: any bytes (plain or gzipped JSON) through the whole Kineto import into an
// in-memory profile. Bad input must end in ImportError / ProfileError, never a crash, a hang or
// a sanitizer report. Seeds: tests/import/fixtures/*.json (scripts/fuzz.sh copies them).
#include <cstddef>
#include <cstdint>
#include <string>

#include "profiler/import/import.h"
#include "profiler/import/kineto/kineto_import.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > (4u << 20)) return 0;  // keep each run fast; size bugs are found on small inputs too
  std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    ss::Origin origin;
    origin.kind = ss::OriginKind::Imported;
    ss::WriterOptions options;
    options.atomic_rename = false;
    ss::ProfileWriter writer(":memory:", origin, options);
    ss::import::ImportContext ctx(writer);
    ss::import::kineto::import_kineto_bytes(std::move(bytes), "fuzz-input", ctx);
    ctx.flush_skipped();
  } catch (const ss::ProfileError&) {
    // Rejected cleanly: what we want for bad input.
  }
  return 0;
}
