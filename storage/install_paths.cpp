#include "storage/install_paths.h"

#include <filesystem>

namespace ss {

namespace fs = std::filesystem;

std::string executable_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

std::string shardscope_lib_path(const std::string& name) {
  const std::string dir = executable_dir();
  if (dir.empty()) return {};
  return (fs::path(dir) / ".." / "lib" / "shardscope" / name).lexically_normal().string();
}

}  // namespace ss
