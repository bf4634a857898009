#include "profiler/export/atomic_output.h"

#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "storage/errors.h"

namespace ss::exporting {

AtomicOutput::AtomicOutput(std::string target) : target_(std::move(target)) {
  temp_ = target_ + ".tmp-" + std::to_string(::getpid());
  out_.open(temp_, std::ios::binary | std::ios::trunc);
  if (!out_) throw ProfileError(ProfileErrorKind::Io, "cannot write '" + temp_ + "': " + std::strerror(errno));
}

AtomicOutput::~AtomicOutput() {
  if (!done_) {
    out_.close();
    std::remove(temp_.c_str());
    std::remove((temp_ + ".gz").c_str());
  }
}

void AtomicOutput::commit(bool gzip) {
  out_.flush();
  const bool ok = static_cast<bool>(out_);
  out_.close();
  if (!ok) throw ProfileError(ProfileErrorKind::Io, "cannot write '" + temp_ + "' (disk full?)");
  std::string ready = temp_;
  if (gzip) {
    ready = temp_ + ".gz";
    gzip_file(temp_, ready);
    std::remove(temp_.c_str());
  }
  if (std::rename(ready.c_str(), target_.c_str()) != 0)
    throw ProfileError(ProfileErrorKind::Io, "cannot rename '" + ready + "' to '" + target_ + "': " + std::strerror(errno));
  done_ = true;
}

void gzip_file(const std::string& src, const std::string& dst) {
  std::FILE* in = std::fopen(src.c_str(), "rb");
  if (!in) throw ProfileError(ProfileErrorKind::Io, "cannot read '" + src + "'");
  gzFile out = gzopen(dst.c_str(), "wb6");
  if (!out) {
    std::fclose(in);
    throw ProfileError(ProfileErrorKind::Io, "cannot write '" + dst + "'");
  }
  std::vector<char> buf(1 << 20);
  bool ok = true;
  for (;;) {
    const std::size_t n = std::fread(buf.data(), 1, buf.size(), in);
    if (n == 0) break;
    if (gzwrite(out, buf.data(), static_cast<unsigned>(n)) != static_cast<int>(n)) {
      ok = false;
      break;
    }
  }
  std::fclose(in);
  if (gzclose(out) != Z_OK) ok = false;
  if (!ok) {
    std::remove(dst.c_str());
    throw ProfileError(ProfileErrorKind::Io, "cannot write '" + dst + "' (disk full?)");
  }
}

}  // namespace ss::exporting
