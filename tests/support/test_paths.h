// Paths and scratch files for tests.
#pragma once

#include <string>

namespace ss::test {

std::string traces_dir();       // ../shared/data/traces (configurable at build time)
bool traces_available();
std::string trace(const std::string& relative);  // traces_dir() + "/" + relative
std::string source_dir();       // the repository root
std::string binary_dir();       // the build folder

// A fresh directory under the system temp dir, removed when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string sha256_of_file(const std::string& path);  // via sha256sum; for "bytes unchanged" checks
std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& bytes);

}  // namespace ss::test
