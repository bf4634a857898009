// Kineto import from bytes already in memory (fuzzing, tests); import_kineto (import.h) reads a file.
#pragma once

#include <string>

#include "profiler/import/import.h"

namespace ss::import::kineto {

// `bytes` may be gzip-compressed; `label` names the input in error messages.
void import_kineto_bytes(std::string bytes, const std::string& label, ImportContext& ctx);

}  // namespace ss::import::kineto
