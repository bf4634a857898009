// Turns a parsed Kineto trace into profile rows: rank, streams, kernels with module attribution,
// collectives, module tree, CPU / GPU ranges, steps and memory events (docs/importers.md).
#pragma once

#include <string>

#include "profiler/import/import.h"
#include "profiler/import/kineto/kineto_trace.h"

namespace ss::import::kineto {

void write_trace(const KinetoTrace& trace, const std::string& path, ImportContext& ctx);

}  // namespace ss::import::kineto
