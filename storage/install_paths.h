// Where an installed or built ShardScope keeps its libraries, relative to the running executable:
// <exe_dir>/../lib/shardscope/ (the desktop app library, the collector, the plugins). In the build
// tree that is <build>/lib/shardscope/ for <build>/app/shardscope.
#pragma once

#include <string>

namespace ss {

// The running executable's folder; "" when /proc/self/exe cannot be read.
std::string executable_dir();

// <exe_dir>/../lib/shardscope/<name>, normalised; "" when the executable's folder is unknown.
std::string shardscope_lib_path(const std::string& name);

}  // namespace ss
