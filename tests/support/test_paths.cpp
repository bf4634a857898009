#include "tests/support/test_paths.h"

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ss::test {

std::string traces_dir() {
  if (const char* env = std::getenv("SHARDSCOPE_TRACES_DIR")) return env;
  return SHARDSCOPE_TRACES_DIR;
}

bool traces_available() {
  struct stat st {};
  return ::stat(traces_dir().c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string trace(const std::string& relative) { return traces_dir() + "/" + relative; }
std::string source_dir() { return SHARDSCOPE_SOURCE_DIR; }
std::string binary_dir() { return SHARDSCOPE_BINARY_DIR; }

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "shardscope-test-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string sha256_of_file(const std::string& path) {
  std::string cmd = "sha256sum '" + path + "'";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("popen sha256sum failed");
  std::array<char, 256> buf{};
  std::string out;
  while (std::fgets(buf.data(), buf.size(), p)) out += buf.data();
  ::pclose(p);
  return out.substr(0, 64);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace ss::test
