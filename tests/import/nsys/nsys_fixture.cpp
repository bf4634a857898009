#include "tests/import/nsys/nsys_fixture.h"

#include <sqlite3.h>

#include <stdexcept>

namespace ss::test::nsys {

namespace {

constexpr const char* kCommonEnums = R"sql(
CREATE TABLE ENUM_NSYS_EVENT_TYPE(id INTEGER PRIMARY KEY, name TEXT, label TEXT);
INSERT INTO ENUM_NSYS_EVENT_TYPE VALUES (134, 'NvtxMark', 'NvtxMark'), (159, 'NvtxPushPopRange', 'NvtxPushPopRange'),
  (160, 'NvtxStartEndRange', 'NvtxStartEndRange'), (175, 'NvtxDomainCreate', 'NvtxDomainCreate'),
  (59, 'CpuCycles', 'CpuCycles');
CREATE TABLE ENUM_CUDA_MEMCPY_OPER(id INTEGER PRIMARY KEY, name TEXT, label TEXT);
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (11, 'CUDA_MEMCPY_KIND_HTOD', 'Host-to-Device'),
  (18, 'CUDA_MEMCPY_KIND_DTOD', 'Device-to-Device');
CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE META_DATA_EXPORT(name TEXT, value TEXT);
)sql";

}  // namespace

std::string modern_schema() {
  return std::string(kCommonEnums) + R"sql(
INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION', '3.16.1');
CREATE TABLE ENUM_CUDA_DEV_MEM_EVENT_OPER(id INTEGER PRIMARY KEY, name TEXT, label TEXT);
INSERT INTO ENUM_CUDA_DEV_MEM_EVENT_OPER VALUES (5, 'CUDA_DEV_MEM_EVENT_OPR_ALLOCATION', 'Allocation'),
  (6, 'CUDA_DEV_MEM_EVENT_OPR_DEALLOCATION', 'Deallocation'), (7, 'CUDA_DEV_MEM_EVENT_OPR_OTHER', 'Other');
CREATE TABLE TARGET_INFO_SESSION_START_TIME(utcEpochNs INTEGER, utcTime TEXT, localTime TEXT, systemClockNs INTEGER);
CREATE TABLE PROCESSES(globalPid INTEGER, pid INTEGER, name TEXT);
CREATE TABLE ThreadNames(nameId INTEGER, priority INTEGER, globalTid INTEGER);
CREATE TABLE TARGET_INFO_GPU(vmId INTEGER, id INTEGER, name TEXT, totalMemory INTEGER, smCount INTEGER,
  computeMajor INTEGER, computeMinor INTEGER, cuDevice INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER, contextId INTEGER,
  greenContextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER,
  shortName INTEGER, mangledName INTEGER, launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER,
  gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER, blockZ INTEGER,
  staticSharedMemory INTEGER, dynamicSharedMemory INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start INTEGER, end INTEGER, eventClass INTEGER, globalTid INTEGER,
  correlationId INTEGER, nameId INTEGER, returnValue INTEGER, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY(start INTEGER, end INTEGER, deviceId INTEGER, contextId INTEGER,
  streamId INTEGER, correlationId INTEGER, globalPid INTEGER, bytes INTEGER, copyKind INTEGER, srcKind INTEGER,
  dstKind INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET(start INTEGER, end INTEGER, deviceId INTEGER, contextId INTEGER,
  streamId INTEGER, correlationId INTEGER, globalPid INTEGER, value INTEGER, bytes INTEGER, memKind INTEGER);
CREATE TABLE NVTX_EVENTS(start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER,
  domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER,
  int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT, binaryData BLOB);
CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS(start INTEGER NOT NULL, globalPid INTEGER, deviceId INTEGER,
  contextId INTEGER, address INTEGER, pc INTEGER, bytes INTEGER, memKind INTEGER, memoryOperationType INTEGER,
  name TEXT, correlationId INTEGER, streamId INTEGER);
CREATE TABLE NVTX_PAYLOAD_SCHEMAS(domainId INTEGER, schemaId INTEGER, name TEXT, type INTEGER, flags INTEGER,
  numEntries INTEGER, payloadSize INTEGER, alignTo INTEGER);
CREATE TABLE NVTX_PAYLOAD_SCHEMA_ENTRIES(domainId INTEGER, schemaId INTEGER, idx INTEGER, flags INTEGER,
  type INTEGER, name TEXT, description TEXT, arrayOrUnionDetail INTEGER, offset INTEGER);
)sql";
}

std::string old_schema() {
  return std::string(kCommonEnums) + R"sql(
INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION', '3.8.0');
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER,
  contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, shortName INTEGER,
  gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER, blockZ INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start INTEGER, end INTEGER, eventClass INTEGER, globalTid INTEGER,
  correlationId INTEGER, nameId INTEGER, returnValue INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY(start INTEGER, end INTEGER, deviceId INTEGER, contextId INTEGER,
  streamId INTEGER, correlationId INTEGER, globalPid INTEGER, bytes INTEGER, copyKind INTEGER);
CREATE TABLE NVTX_EVENTS(start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, domainId INTEGER);
)sql";
}

void build_sqlite(const std::string& path, const std::string& sql, int page_size) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    sqlite3_close(db);
    throw std::runtime_error("cannot create " + path);
  }
  char* err = nullptr;
  // One transaction without fsync: fixtures are scratch files.
  const std::string pages = page_size > 0 ? "PRAGMA page_size = " + std::to_string(page_size) + ";\n" : std::string();
  const std::string script = pages + "PRAGMA synchronous = OFF; BEGIN;\n" + sql + "\nCOMMIT;";
  if (sqlite3_exec(db, script.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "?";
    sqlite3_free(err);
    sqlite3_close(db);
    throw std::runtime_error("fixture SQL failed: " + msg);
  }
  sqlite3_close(db);
}

namespace {
template <typename F>
auto query(const std::string& db_path, const std::string& sql, F read) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    throw std::runtime_error("cannot open " + db_path);
  }
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
    std::string msg = sqlite3_errmsg(db);
    sqlite3_close(db);
    throw std::runtime_error("bad test query '" + sql + "': " + msg);
  }
  const bool row = sqlite3_step(st) == SQLITE_ROW;
  auto v = read(st, row);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}
}  // namespace

std::int64_t query_int(const std::string& db, const std::string& sql) {
  return query(db, sql, [&](sqlite3_stmt* st, bool row) -> std::int64_t {
    if (!row) throw std::runtime_error("no row for '" + sql + "'");
    return sqlite3_column_type(st, 0) == SQLITE_NULL ? -999 : sqlite3_column_int64(st, 0);
  });
}

std::string query_text(const std::string& db, const std::string& sql) {
  return query(db, sql, [&](sqlite3_stmt* st, bool row) -> std::string {
    if (!row) throw std::runtime_error("no row for '" + sql + "'");
    const unsigned char* t = sqlite3_column_text(st, 0);
    return t ? std::string(reinterpret_cast<const char*>(t)) : std::string("<NULL>");
  });
}

}  // namespace ss::test::nsys
