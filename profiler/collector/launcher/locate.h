// Where `shardscope record` finds the collector library and the Python package: an environment
// override, install-relative paths, then the build / source tree this binary came from.
#pragma once

#include <string>

namespace ss::record {

// SHARDSCOPE_COLLECTOR_LIB, <exe>/../lib/shardscope/, <exe>/, the build tree's library; "" if none.
std::string locate_collector_library();
// SHARDSCOPE_PYTHON_DIR, <exe>/../share/shardscope/python, the source tree's profiler/python; "" if none.
std::string locate_python_dir();

}  // namespace ss::record
