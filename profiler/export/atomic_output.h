// Output files that appear only when complete: write under a temporary name beside the target,
// then rename. A failure (or a destructor without commit) removes the temporary file.
#pragma once

#include <fstream>
#include <string>

namespace ss::exporting {

class AtomicOutput {
 public:
  explicit AtomicOutput(std::string target);
  ~AtomicOutput();
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;

  std::ostream& stream() { return out_; }
  const std::string& temp_path() const { return temp_; }
  // Flushes, optionally gzips (target ends with .gz), and renames into place. Throws ProfileError(Io).
  void commit(bool gzip = false);

 private:
  std::string target_, temp_;
  std::ofstream out_;
  bool done_ = false;
};

// Gzip-compresses `src` into `dst` (streaming, level 6). Throws ProfileError(Io).
void gzip_file(const std::string& src, const std::string& dst);

}  // namespace ss::exporting
