// Reads an importer's input whole into memory, inflating gzip (.json.gz) on the fly with zlib's
// streaming inflate, and leaves SIMDJSON-sized padding after the bytes (capacity >= size + 64)
// so a JSON parser can read it in place without another copy.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace ss::import {

inline constexpr std::size_t kInputPadding = 64;  // == SIMDJSON_PADDING

// done/total in bytes of the file on disk (compressed bytes for gzip).
using ReadProgress = std::function<void(std::uint64_t done, std::uint64_t total)>;

// Throws ImportError naming the file and the compressed byte offset for a truncated or corrupt
// gzip stream, ProfileError(Io) when the file cannot be read.
std::string read_input_file(const std::string& path, const ReadProgress& progress = {}, bool* was_gzip = nullptr);
// The same into `out`, whose allocation is reused when it is large enough (several rank files in
// a row: no fresh pages to fault in for each).
// Asks the kernel for transparent huge pages under a fresh buffer of several MiB, where the
// system leaves them to madvise (the default): a few 2 MiB faults instead of one 4 KiB page
// fault per page when it is first filled (thousands per rank file). Only advice: where it is
// refused, or the buffer is small, nothing changes.
void advise_huge_pages(void* data, std::size_t bytes);

void read_input_file_into(const std::string& path, std::string& out, const ReadProgress& progress = {},
                          bool* was_gzip = nullptr);

// The same on bytes already in memory (fuzzing, tests); `label` names the input in messages.
std::string inflate_if_gzip(std::string bytes, const std::string& label);

bool is_gzip(const std::string& bytes);

}  // namespace ss::import
