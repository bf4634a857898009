#include "profiler/import/common/input_file.h"

#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <memory>
#include <vector>

#include "profiler/import/import.h"

namespace ss::import {
namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

// Feeds compressed chunks to zlib; handles multi-member gzip files (what `cat a.gz b.gz` gives).
class GzipInflater {
 public:
  explicit GzipInflater(const std::string& label) : label_(label) {
    std::memset(&zs_, 0, sizeof zs_);
    if (inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK) throw ImportError("'" + label + "': cannot initialise zlib");
  }
  ~GzipInflater() { inflateEnd(&zs_); }
  GzipInflater(const GzipInflater&) = delete;
  GzipInflater& operator=(const GzipInflater&) = delete;

  // Appends the inflated bytes of `in` to `out`.
  void feed(const unsigned char* in, std::size_t n, std::string& out) {
    zs_.next_in = const_cast<unsigned char*>(in);
    zs_.avail_in = static_cast<uInt>(n);
    while (zs_.avail_in > 0) {
      if (member_done_) {
        // Another gzip member follows the one that ended.
        if (inflateReset(&zs_) != Z_OK) fail("cannot restart inflate");
        member_done_ = false;
      }
      if (out.capacity() - out.size() < 65536) out.reserve(out.capacity() * 2 + 65536 + kInputPadding);
      const std::size_t old = out.size();
      // Inflate in slices: resize() zero-fills, so never grow by more than one slice at a time.
      const std::size_t room = std::min<std::size_t>(out.capacity() - old - kInputPadding, 4u << 20);
      out.resize(old + room);
      zs_.next_out = reinterpret_cast<unsigned char*>(out.data() + old);
      zs_.avail_out = static_cast<uInt>(room);
      const uInt before_out = zs_.avail_out;
      const int rc = inflate(&zs_, Z_NO_FLUSH);
      out.resize(old + (before_out - zs_.avail_out));
      if (rc == Z_STREAM_END) {
        member_done_ = true;
        continue;
      }
      if (rc != Z_OK && rc != Z_BUF_ERROR) fail(zs_.msg ? zs_.msg : "inflate error " + std::to_string(rc));
    }
  }

  void finish() const {
    if (!member_done_)
      throw ImportError("'" + label_ + "': truncated gzip stream (input ended after " + std::to_string(zs_.total_in) +
                        " compressed bytes, expected the end of the gzip member)");
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw ImportError("'" + label_ + "': corrupt gzip data at compressed byte offset " + std::to_string(consumed()) +
                      ": " + why);
  }
  std::uint64_t consumed() const { return zs_.total_in; }

  std::string label_;
  z_stream zs_;
  bool member_done_ = false;
};

}  // namespace

bool is_gzip(const std::string& bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f && static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string inflate_if_gzip(std::string bytes, const std::string& label) {
  std::string out;  // one named result in every path, so it is constructed in place
  if (!is_gzip(bytes)) {
    out.reserve(bytes.size() + kInputPadding);
    out.append(bytes.data(), bytes.size());
    return out;
  }
  out.reserve(bytes.size() * 4 + kInputPadding);
  GzipInflater z(label);
  z.feed(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), out);
  z.finish();
  out.reserve(out.size() + kInputPadding);
  return out;
}

std::string read_input_file(const std::string& path, const ReadProgress& progress, bool* was_gzip) {
  std::string out;
  read_input_file_into(path, out, progress, was_gzip);
  return out;
}

void advise_huge_pages(void* data, std::size_t bytes) {
  constexpr std::size_t kHuge = std::size_t{2} << 20;
  if (bytes < 2 * kHuge) return;
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t first = (begin + page - 1) / page * page;
  const std::uintptr_t last = (begin + bytes) / page * page;
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
}

void read_input_file_into(const std::string& path, std::string& out, const ReadProgress& progress, bool* was_gzip) {
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
  if (!f) {
    out.clear();
    throw ProfileError(ProfileErrorKind::Io, "cannot open '" + path + "': " + std::strerror(errno));
  }
  std::fseek(f.get(), 0, SEEK_END);
  const long size_l = std::ftell(f.get());
  std::fseek(f.get(), 0, SEEK_SET);
  const std::uint64_t size = size_l > 0 ? static_cast<std::uint64_t>(size_l) : 0;

  unsigned char head[2] = {0, 0};
  const std::size_t nh = std::fread(head, 1, 2, f.get());
  std::fseek(f.get(), 0, SEEK_SET);
  const bool gz = nh == 2 && head[0] == 0x1f && head[1] == 0x8b;
  if (was_gzip) *was_gzip = gz;

  if (!gz) {
    // A reused buffer (the importer's, from file to file) keeps its old bytes until the read
    // overwrites them: resize() zero-fills only what the buffer grows by, not the whole file
    // each time. A buffer too small is emptied first, so reserve() does not copy stale bytes.
    if (out.capacity() < size + kInputPadding) {
      out.clear();
      out.reserve(size + kInputPadding);
      advise_huge_pages(out.data(), out.capacity());
    }
    out.resize(size);
    std::size_t got = 0;
    const std::size_t chunk = 16u << 20;
    while (got < size) {
      const std::size_t n = std::fread(out.data() + got, 1, std::min<std::size_t>(chunk, size - got), f.get());
      if (n == 0) break;
      got += n;
      if (progress) progress(got, size);
    }
    if (std::ferror(f.get())) throw ProfileError(ProfileErrorKind::Io, "cannot read '" + path + "'");
    out.resize(got);
    return;
  }
  // The gzip trailer's ISIZE (size mod 4 GiB) is only a hint for the first allocation.
  out.clear();  // the inflater appends
  out.reserve(size * 6 + kInputPadding);
  GzipInflater z(path);
  std::vector<unsigned char> buf(1u << 20);
  std::uint64_t done = 0;
  for (;;) {
    const std::size_t n = std::fread(buf.data(), 1, buf.size(), f.get());
    if (n == 0) break;
    z.feed(buf.data(), n, out);
    done += n;
    if (progress) progress(done, size);
  }
  if (std::ferror(f.get())) throw ProfileError(ProfileErrorKind::Io, "cannot read '" + path + "'");
  z.finish();
  out.reserve(out.size() + kInputPadding);
}

}  // namespace ss::import
