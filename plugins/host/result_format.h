// Prints an AnalysisResult as aligned text tables or as JSON (`shardscope analyze --format`).
// Both use one time base: timestamps are shown as time since the profile's start
// (`profile_begin`, Profile::time_begin, the timeline ruler's 0). Text rounds to readable units;
// JSON keeps exact integers and names its time base.
#pragma once

#include <ostream>

#include "plugins/host/analysis_result.h"

namespace ss::plugins {

void write_result_text(const AnalysisResult& r, TimeNs profile_begin, std::ostream& out);
void write_result_json(const AnalysisResult& r, TimeNs profile_begin, std::ostream& out);

}  // namespace ss::plugins
