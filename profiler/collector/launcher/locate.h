// Where `shardscope record` finds the collector library and the Python package: an environment
// override, the build tree this binary came from, then install-relative paths.
#pragma once

#include <string>

namespace ss::record {

// SHARDSCOPE_COLLECTOR_LIB, the build tree's library, <exe>/../lib/shardscope/, <exe>/; "" if none.
std::string locate_collector_library();
// SHARDSCOPE_PYTHON_DIR, the source tree's profiler/python, <exe>/../share/shardscope/python; "" if none.
std::string locate_python_dir();

}  // namespace ss::record
