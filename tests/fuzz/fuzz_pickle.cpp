// libFuzzer target: any bytes through the restricted pickle reader and, when they parse, through
// the whole memory-snapshot import into an in-memory profile. Bad input must end in PickleError /
// ImportError, never a crash, a hang, unbounded memory or a sanitizer report. Seeds: the pickles
// of tests/import/fixtures/make_pickles.py (scripts/fuzz.sh writes them) and a snapshot.
#include <cstddef>
#include <cstdint>
#include <string>

#include "profiler/import/import.h"
#include "profiler/import/snapshot/pickle_reader.h"
#include "profiler/import/snapshot/snapshot_import.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > (1u << 20)) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    ss::pickle::parse(bytes, "fuzz-input");
  } catch (const ss::pickle::PickleError&) {
    return 0;  // rejected cleanly
  }
  try {
    ss::Origin origin;
    origin.kind = ss::OriginKind::Imported;
    ss::WriterOptions options;
    options.atomic_rename = false;
    ss::ProfileWriter writer(":memory:", origin, options);
    ss::import::ImportContext ctx(writer);
    ss::import::snapshot::import_snapshot_bytes(bytes, "fuzz-input", ctx);
    ctx.flush_skipped();
  } catch (const ss::ProfileError&) {
  }
  return 0;
}
