// PyTorch memory snapshot import from bytes already in memory (fuzzing, tests);
// import_torch_snapshot (import.h) reads a file. See docs/importers.md for the mapping.
#pragma once

#include <string>
#include <string_view>

#include "profiler/import/import.h"

namespace ss::import::snapshot {

// `label` names the input in error messages. Throws ImportError on a bad or refused pickle.
void import_snapshot_bytes(std::string_view bytes, const std::string& label, ImportContext& ctx);

}  // namespace ss::import::snapshot
