// Helpers for importer tests: write fixture files (plain or gzipped), import them, query the result.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ss::test {

void write_gzip(const std::string& path, const std::string& bytes);
std::string gzip_bytes(const std::string& bytes);

// One integer / text from a read-only query on a profile (first column of the first row; -1 /
// "<null>" for NULL or no row).
std::int64_t query_int(const std::string& profile, const std::string& sql);
std::string query_text(const std::string& profile, const std::string& sql);
std::vector<std::string> query_column(const std::string& profile, const std::string& sql);

// Files in `dir` (names only), to check that nothing half-written was left behind.
std::vector<std::string> list_dir(const std::string& dir);

}  // namespace ss::test
