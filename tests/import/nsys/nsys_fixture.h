// Hand-built nsys-like SQLite files for the importer tests: the tables and columns of
// `nsys export --type sqlite` (research/collector.md section 5), filled by SQL in each test.
#pragma once

#include <cstdint>
#include <string>

namespace ss::test::nsys {

// Serialized ids as nsys writes them: globalPid = (vm << 48) | (pid << 24), globalTid = globalPid | tid.
constexpr std::int64_t gpid(std::int64_t pid) { return (std::int64_t{1} << 48) | (pid << 24); }
constexpr std::int64_t gtid(std::int64_t pid, std::int64_t tid) { return gpid(pid) | tid; }

// Schema of a recent export (nsys 2024.6-2026.2) with every table the importer reads. The enum
// tables use numbers unlike nsys's own, so a test passes only if values are joined by label.
std::string modern_schema();
// Schema of an older export (nsys 2023.x-like): kernels name only shortName, NVTX only `text`
// (no textId / jsonText / binaryData / endGlobalTid), and no PROCESSES, TARGET_INFO_GPU,
// TARGET_INFO_SESSION_START_TIME, MEMSET, memory usage or payload schema tables.
std::string old_schema();

// Creates `path` and runs `sql` in it (throws std::runtime_error with SQLite's message).
// page_size > 0 sets the page size (small pages make small files, e.g. fuzzing seeds).
void build_sqlite(const std::string& path, const std::string& sql, int page_size = 0);

// Scalar results of a query on a finished profile.
std::int64_t query_int(const std::string& db, const std::string& sql);
std::string query_text(const std::string& db, const std::string& sql);

}  // namespace ss::test::nsys
