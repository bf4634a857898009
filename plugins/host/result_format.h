// Prints an AnalysisResult as aligned text tables or as JSON (`shardscope analyze --format`).
#pragma once

#include <ostream>

#include "plugins/host/analysis_result.h"

namespace ss::plugins {

void write_result_text(const AnalysisResult& r, std::ostream& out);
void write_result_json(const AnalysisResult& r, std::ostream& out);

}  // namespace ss::plugins
