#include "profiler/collector/launcher/locate.h"

#include <cstdlib>
#include <filesystem>

#include "storage/install_paths.h"

namespace ss::record {
namespace fs = std::filesystem;
namespace {

fs::path exe_dir() { return fs::path(executable_dir()); }

bool path_exists(const fs::path& p) {
  std::error_code ec;
  return !p.empty() && fs::exists(p, ec);
}

}  // namespace

std::string locate_collector_library() {
  if (const char* v = std::getenv("SHARDSCOPE_COLLECTOR_LIB"); v && *v) return path_exists(v) ? std::string(v) : std::string();
  // Install-relative first: an installed (or copied) tree uses its own files even where the build
  // tree it was compiled in still exists. A build tree has no <build>/lib/shardscope/ collector.
  const auto dir = exe_dir();
  for (auto p : {dir / "../lib/shardscope/libshardscope_collector.so", dir / "libshardscope_collector.so"})
    if (path_exists(p)) return fs::weakly_canonical(p).string();
#ifdef SHARDSCOPE_COLLECTOR_BUILD_PATH
  if (path_exists(SHARDSCOPE_COLLECTOR_BUILD_PATH)) return SHARDSCOPE_COLLECTOR_BUILD_PATH;
#endif
  return {};
}

std::string locate_python_dir() {
  if (const char* v = std::getenv("SHARDSCOPE_PYTHON_DIR"); v && *v) return v;
  const auto p = exe_dir() / "../share/shardscope/python";
  if (path_exists(p / "shardscope")) return fs::weakly_canonical(p).string();
  if (path_exists(fs::path(SHARDSCOPE_PYTHON_SOURCE_DIR) / "shardscope")) return SHARDSCOPE_PYTHON_SOURCE_DIR;
  return {};
}

}  // namespace ss::record
