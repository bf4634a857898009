// Nsight Systems SQLite importer on hand-built exports: one rule per section.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <regex>

#include "profiler/import/import.h"
#include "profiler/import/nsys/nccl_payload.h"
#include "profiler/import/nsys/nsys_db.h"
#include "tests/import/nsys/nsys_fixture.h"
#include "tests/support/test_paths.h"

using namespace ss::test::nsys;
using ss::import::ImportError;
using ss::import::import_files;

namespace {

// "{pid:100}" -> globalPid of pid 100, "{tid:100:101}" -> globalTid of thread 101 in pid 100.
std::string expand(const std::string& sql) {
  std::string out;
  static const std::regex token(R"(\{(pid|tid):(\d+)(?::(\d+))?\})");
  std::size_t last = 0;
  for (auto it = std::sregex_iterator(sql.begin(), sql.end(), token); it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    out += sql.substr(last, static_cast<std::size_t>(m.position()) - last);
    const std::int64_t pid = std::stoll(m[2]);
    out += std::to_string(m[1] == "pid" ? gpid(pid) : gtid(pid, std::stoll(m[3])));
    last = static_cast<std::size_t>(m.position() + m.length());
  }
  return out + sql.substr(last);
}

constexpr std::int64_t kSessionUtc = 1700000000000000000;

// Two processes (pid 200 listed first; pid 100 must become rank 0), FSDP forward, backward with a
// recomputed forward, an NCCL all-gather with a JSON payload, memcpy / memset, memory events.
std::string modern_rows() {
  return R"sql(
INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1700000000000000000, '', '', 0);
INSERT INTO PROCESSES VALUES ({pid:200}, 200, 'python3'), ({pid:100}, 100, 'python3'), ({pid:7}, 7, 'torchrun');
INSERT INTO StringIds VALUES (1, 'sm90_xmma_gemm_bf16'), (2, 'ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)'),
  (3, 'sm90_gemm'), (4, 'ncclDevKernel_AllGather_RING_LL'), (5, 'cudaLaunchKernel'), (6, 'ncclAllGather'),
  (7, 'trainer'), (8, '_Z5gemmv'), (9, '_Z31ncclDevKernel_AllGather_RING_LL24ncclDevKernelArgsStorageILm4096EE');
INSERT INTO ThreadNames VALUES (7, 20, {tid:100:101});
INSERT INTO TARGET_INFO_GPU VALUES (0, 0, 'NVIDIA H100 80GB HBM3', 85520809984, 132, 9, 0, 0),
  (0, 1, 'NVIDIA H100 80GB HBM3', 85520809984, 132, 9, 0, 1);
-- kernels: pid 100 on device 0 (compute stream 7, NCCL stream 20), pid 200 on device 1
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, correlationId, globalPid, demangledName,
  shortName, mangledName, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory,
  dynamicSharedMemory) VALUES
  (1000, 2000, 0, 7, 1, {pid:100}, 1, 3, 8, 32, 132, 1, 1, 384, 1, 1, 1024, 2048),
  (3000, 4000, 0, 20, 2, {pid:100}, 2, 4, 9, 16, 2, 1, 1, 512, 1, 1, 0, 0),
  (5000, 6000, 0, 7, 3, {pid:100}, 1, 3, 8, 32, 132, 1, 1, 384, 1, 1, 1024, 2048),
  (3100, 4100, 0, 20, 5, {pid:100}, 2, 4, 9, 16, 2, 1, 1, 512, 1, 1, 0, 0),
  (1200, 2200, 1, 7, 1, {pid:200}, 1, 3, 8, 32, 132, 1, 1, 384, 1, 1, 1024, 2048);
-- runtime launches: correlation ids repeat across processes and are joined within the pid
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME(start, end, globalTid, correlationId, nameId) VALUES
  (500, 510, {tid:100:101}, 1, 5), (2500, 2510, {tid:100:101}, 2, 5), (4500, 4510, {tid:100:101}, 3, 5),
  (2550, 2560, {tid:100:101}, 5, 5), (9000, 9010, {tid:200:201}, 1, 5);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY(start, end, deviceId, streamId, correlationId, globalPid, bytes, copyKind,
  srcKind, dstKind) VALUES (7000, 7100, 0, 7, 4, {pid:100}, 4096, 11, 0, 2),
  (7200, 7300, 1, 7, 4, {pid:200}, 8192, 18, 2, 2);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET(start, end, deviceId, streamId, correlationId, globalPid, value, bytes, memKind)
  VALUES (7400, 7450, 1, 7, 6, {pid:200}, 0, 128, 2);
-- NVTX (PushPop = 159, StartEnd = 160, Mark = 134, DomainCreate = 175 in this file's enum table)
INSERT INTO NVTX_EVENTS(start, end, eventType, text, globalTid, textId, domainId, jsonText) VALUES
  (0, 10000, 159, 'ProfilerStep#7', {tid:100:101}, NULL, 0, NULL),
  (400, 600, 159, 'FSDP::pre_forward (layers.0), op_id = 5', {tid:100:101}, NULL, 0, NULL),
  (450, 550, 159, 'aten::mm, seq = 3, op_id = 9, sizes = [[2, 3]]', {tid:100:101}, NULL, 0, NULL),
  (1500, 1600, 159, 'FSDP::post_forward (layers.0), op_id = 6', {tid:100:101}, NULL, 0, NULL),
  (10, NULL, 175, 'NCCL', {tid:100:101}, NULL, 1, NULL),
  (2400, 2600, 159, NULL, {tid:100:101}, 6, 1, '{"NCCL communicator ID": 42, "Message size [bytes]": 1048576}'),
  (4000, 4100, 159, 'FSDP::pre_backward (layers.0)', {tid:100:102}, NULL, 0, NULL),
  (4200, 4300, 159, 'FSDP::pre_forward (layers.0)', {tid:100:102}, NULL, 0, NULL),
  (4600, 4700, 159, 'FSDP::post_forward (layers.0)', {tid:100:102}, NULL, 0, NULL),
  (4900, 5000, 159, 'FSDP::post_backward (layers.0)', {tid:100:102}, NULL, 0, NULL),
  (8000, NULL, 159, 'still open', {tid:100:101}, NULL, 0, NULL),
  (8100, 8100, 134, 'a mark', {tid:100:101}, NULL, 0, NULL),
  (8200, 8300, 160, CAST(X'41FF42' AS TEXT), {tid:100:101}, NULL, 0, NULL),
  (100, 200, 159, 'launcher range', {tid:7:8}, NULL, 0, NULL);
-- the recomputed forward launches correlation 3 at 4500 on thread 102
UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET globalTid = {tid:100:102} WHERE correlationId = 3 AND start = 4500;
INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS(start, globalPid, deviceId, address, bytes, memoryOperationType, streamId)
  VALUES (450, {pid:100}, 0, 4096, 1000, 5, 7), (9000, {pid:100}, 0, 4096, 1000, 6, NULL),
  (9100, {pid:100}, 0, 8192, 64, 7, NULL);
)sql";
}

// Two processes with NCCL payloads in binaryData (schemas as NCCL 2.25+ registers them; entry 0's
// offset NULL as nsys 2026.2 writes it): ncclCommInitRank names the ranks, a grouped send/recv.
std::string payload_rows() {
  return R"sql(
INSERT INTO StringIds VALUES (1, 'ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)'), (2, 'ncclSend'),
  (3, 'ncclRecv'), (4, 'ncclGroupStart'), (5, 'ncclGroupEnd'), (6, 'ncclCommInitRankConfig');
INSERT INTO NVTX_PAYLOAD_SCHEMAS VALUES (1, 16777218, NULL, 1, NULL, 4, 24, NULL), (1, 16777226, NULL, 1, NULL, 3, 24, NULL),
  (1, 16777220, NULL, 1, NULL, 2, 16, NULL);
INSERT INTO NVTX_PAYLOAD_SCHEMA_ENTRIES VALUES
  (1, 16777218, 0, NULL, 18, 'NCCL communicator ID', NULL, NULL, NULL), (1, 16777218, 1, NULL, 5, 'No. of ranks', NULL, NULL, 8),
  (1, 16777218, 2, NULL, 5, 'Rank', NULL, NULL, 12), (1, 16777218, 3, NULL, 5, 'CUDA device', NULL, NULL, 16),
  (1, 16777226, 0, NULL, 18, 'NCCL communicator ID', NULL, NULL, NULL), (1, 16777226, 1, NULL, 22, 'Message size [bytes]', NULL, NULL, 8),
  (1, 16777226, 2, NULL, 5, 'Peer rank', NULL, NULL, 16),
  (1, 16777220, 0, NULL, 18, 'NCCL communicator ID', NULL, NULL, NULL), (1, 16777220, 1, NULL, 22, 'Message size [bytes]', NULL, NULL, 8);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, correlationId, globalPid, demangledName)
  VALUES (1000, 2000, 0, 30, 1, {pid:100}, 1), (1000, 2000, 0, 30, 1, {pid:200}, 1);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME(start, end, globalTid, correlationId, nameId) VALUES
  (650, 660, {tid:100:100}, 1, 1), (650, 660, {tid:200:200}, 1, 1);
-- pid 100 says it is rank 1 and pid 200 rank 0: the payload wins over pid order
INSERT INTO NVTX_EVENTS(start, end, eventType, globalTid, textId, domainId, binaryData) VALUES
  (10, 20, 159, {tid:100:100}, 6, 1, X'2a00000000000000' || X'02000000' || X'01000000' || X'00000000' || X'00000000'),
  (10, 20, 159, {tid:200:200}, 6, 1, X'2a00000000000000' || X'02000000' || X'00000000' || X'01000000' || X'00000000'),
  (400, 700, 159, {tid:100:100}, 4, 1, NULL),
  (410, 420, 159, {tid:100:100}, 2, 1, X'2a00000000000000' || X'0010000000000000' || X'00000000' || X'00000000'),
  (430, 440, 159, {tid:100:100}, 3, 1, X'2a00000000000000' || X'0020000000000000' || X'00000000' || X'00000000'),
  (600, 700, 159, {tid:100:100}, 5, 1, NULL),
  (600, 700, 159, {tid:200:200}, 5, 1, NULL);
)sql";
}

struct Imported {
  ss::test::TempDir dir;
  std::string out = dir.file("out.ssdb");
  explicit Imported(const std::string& sql) {
    build_sqlite(dir.file("in.sqlite"), expand(sql));
    import_files({dir.file("in.sqlite")}, out, {.show_progress = false});
  }
  std::int64_t i(const std::string& q) const { return query_int(out, q); }
  std::string t(const std::string& q) const { return query_text(out, q); }
};

// The error message of importing `sql` (which must fail), and that no output was left.
std::string import_error(const std::string& sql) {
  ss::test::TempDir dir;
  build_sqlite(dir.file("in.sqlite"), expand(sql));
  std::string message;
  try {
    import_files({dir.file("in.sqlite")}, dir.file("out.ssdb"), {.show_progress = false});
  } catch (const ImportError& e) {
    message = e.what();
  }
  CHECK_FALSE(std::filesystem::exists(dir.file("out.ssdb")));
  return message;
}

}  // namespace

TEST_CASE("nsys: processes with kernels become ranks in pid order, GPU info joined by deviceId", "[import][nsys]") {
  Imported p(modern_schema() + modern_rows());
  CHECK(p.i("SELECT count(*) FROM ranks") == 2);  // torchrun (no kernels) is not a rank
  CHECK(p.i("SELECT pid FROM ranks WHERE rank = 0") == 100);
  CHECK(p.i("SELECT pid FROM ranks WHERE rank = 1") == 200);
  CHECK(p.i("SELECT device_index FROM ranks WHERE rank = 1") == 1);
  CHECK(p.t("SELECT gpu_name FROM ranks WHERE rank = 0") == "NVIDIA H100 80GB HBM3");
  CHECK(p.i("SELECT sm_count FROM ranks WHERE rank = 0") == 132);
  CHECK(p.i("SELECT compute_major FROM ranks WHERE rank = 1") == 9);
  CHECK(p.i("SELECT world_size FROM ranks WHERE rank = 0") == 2);
}

TEST_CASE("nsys: times are session-start based and relative to the first kernel", "[import][nsys]") {
  Imported p(modern_schema() + modern_rows());
  CHECK(p.t("SELECT value FROM meta WHERE key = 'time_origin_unix_ns'") == std::to_string(kSessionUtc + 1000));
  CHECK(p.i("SELECT min(start_ns) FROM kernels") == 0);
  CHECK(p.i("SELECT start_ns FROM kernels WHERE rank = 1 AND category = 0") == 200);
  CHECK(p.i("SELECT duration_ns FROM kernels WHERE rank = 1 AND category = 0") == 1000);
}

TEST_CASE("nsys: kernels with demangled names, launch configs, streams and categories", "[import][nsys]") {
  Imported p(modern_schema() + modern_rows());
  CHECK(p.i("SELECT count(*) FROM kernels WHERE rank = 0 AND category IN (0, 1)") == 4);
  CHECK(p.i("SELECT count(*) FROM kernels WHERE rank = 1 AND category IN (0, 1)") == 1);
  CHECK(p.i("SELECT count(*) FROM kernel_view WHERE name = 'sm90_xmma_gemm_bf16'") == 3);
  CHECK(p.i("SELECT grid_x * 1000 + block_x FROM kernel_view WHERE rank = 1") == 132384);
  CHECK(p.i("SELECT c.shared_mem_bytes FROM kernels k JOIN launch_configs c ON c.id = k.launch_config_id"
            " WHERE k.rank = 1") == 3072);
  CHECK(p.i("SELECT c.registers_per_thread FROM kernels k JOIN launch_configs c ON c.id = k.launch_config_id"
            " WHERE k.rank = 1") == 32);
  // stream 20 carries NCCL kernels: an NCCL stream; stream 7 a compute stream
  CHECK(p.i("SELECT kind FROM streams WHERE rank = 0 AND native_id = 20") == 2);
  CHECK(p.i("SELECT kind FROM streams WHERE rank = 0 AND native_id = 7") == 1);
  CHECK(p.i("SELECT count(*) FROM streams") == 3);
}

TEST_CASE("nsys: memcpy and memset with bytes and the copy kind label joined through the enum", "[import][nsys]") {
  Imported p(modern_schema() + modern_rows());
  CHECK(p.t("SELECT name FROM kernel_view WHERE rank = 0 AND category = 'memcpy'") == "Memcpy Host-to-Device");
  CHECK(p.i("SELECT bytes FROM kernels WHERE rank = 0 AND category = 2") == 4096);
  CHECK(p.t("SELECT name FROM kernel_view WHERE rank = 1 AND category = 'memcpy'") == "Memcpy Device-to-Device");
  CHECK(p.i("SELECT bytes FROM kernels WHERE rank = 1 AND category = 3") == 128);
  CHECK(p.t("SELECT name FROM kernel_view WHERE category = 'memset'") == "Memset");
  CHECK(p.i("SELECT bytes FROM kernels WHERE category = 0 LIMIT 1") == -999);  // NULL for kernels
}

TEST_CASE("nsys: FSDP ranges become modules by FQN prefix, phases and module ranges", "[import][nsys]") {
  Imported p(modern_schema() + modern_rows());
  CHECK(p.i("SELECT count(*) FROM modules") == 3);  // "", "layers", "layers.0"
  CHECK(p.t("SELECT p.fqn FROM modules m JOIN modules p ON p.id = m.parent_id WHERE m.fqn = 'layers.0'") == "layers");
  CHECK(p.t("SELECT p.fqn FROM modules m JOIN modules p ON p.id = m.parent_id WHERE m.fqn = 'layers'") == "");
  CHECK(p.i("SELECT is_fsdp_unit FROM modules WHERE fqn = 'layers.0'") == 1);
  CHECK(p.i("SELECT is_fsdp_unit FROM modules WHERE fqn = 'layers'") == 0);
  CHECK(p.i("SELECT count(*) FROM range_view WHERE kind = 'fsdp' AND module = 'layers.0'") == 6);
  // a pre_forward .. post_forward pair is one Module range, forward on the main thread
  CHECK(p.i("SELECT duration_ns FROM range_view WHERE kind = 'module' AND phase = 'forward'") == 1200);
  CHECK(p.i("SELECT count(*) FROM range_view WHERE kind = 'module' AND phase = 'backward'") == 1);
  // the forward re-run inside backward (activation checkpointing) is a recompute
  CHECK(p.i("SELECT count(*) FROM range_view WHERE kind = 'module' AND phase = 'recompute'") == 1);
  CHECK(p.i("SELECT count(*) FROM range_view WHERE kind = 'fsdp' AND phase = 'recompute'") == 2);
  CHECK(p.i("SELECT count(*) FROM range_view WHERE kind = 'fsdp' AND phase = 'backward'") == 2);
}

TEST_CASE("nsys: NVTX ranges nest per thread, emit_nvtx suffixes stripped, aten ops are CPU ops", "[import][nsys]") {
  Imported p(modern_schema() + modern_rows());
  CHECK(p.t("SELECT kind FROM range_view WHERE name = 'aten::mm'") == "cpu_op");
  CHECK(p.i("SELECT depth FROM range_view WHERE name = 'aten::mm'") == 3);  // step > module > pre_forward > mm
  CHECK(p.t("SELECT p.name FROM range_view r JOIN range_view p ON p.id = r.parent_id WHERE r.name = 'aten::mm'") ==
        "FSDP::pre_forward (layers.0)");
  CHECK(p.t("SELECT t.name FROM ranges r JOIN threads t ON t.id = r.thread_id JOIN strings s ON s.id = r.name_id"
            " WHERE s.value = 'aten::mm'") == "trainer");
  CHECK(p.i("SELECT count(DISTINCT thread_id) FROM ranges") == 2);
  CHECK(p.i("SELECT count(*) FROM steps WHERE number = 7 AND rank = 0") == 1);
  // the name of the NCCL range comes from StringIds (textId), its kind from the "NCCL" domain
  CHECK(p.t("SELECT kind FROM range_view WHERE name = 'ncclAllGather'") == "nccl");
}

TEST_CASE("nsys: enum values are joined by label, not by nsys's usual numbers", "[import][nsys]") {
  // In this fixture id 59 (nsys's usual PushPop) is CpuCycles: a range typed 59 is not a range.
  Imported p(modern_schema() + modern_rows() +
             "INSERT INTO NVTX_EVENTS(start, end, eventType, text, globalTid, domainId) VALUES"
             " (300, 350, 59, 'typed 59', {tid:100:101}, 0);");
  CHECK(p.i("SELECT count(*) FROM range_view WHERE name = 'typed 59'") == 0);
  CHECK(p.i("SELECT count FROM skipped_events WHERE reason LIKE '%not a range%'") == 2);  // the mark and this
}

TEST_CASE("nsys: kernels are attributed to the innermost module open at their launch", "[import][nsys]") {
  Imported p(modern_schema() + modern_rows());
  // correlation 1 is launched at 500 inside aten::mm inside FSDP::pre_forward (layers.0)
  CHECK(p.t("SELECT module FROM kernel_view WHERE rank = 0 AND correlation = 1") == "layers.0");
  // correlation 3 is launched at 4500 on thread 102, inside the recomputed forward of layers.0
  CHECK(p.t("SELECT module FROM kernel_view WHERE rank = 0 AND correlation = 3") == "layers.0");
  // correlation 2 at 2500: between forward and backward, no module
  CHECK(p.t("SELECT module FROM kernel_view WHERE rank = 0 AND correlation = 2") == "<NULL>");
  // pid 200's correlation 1 is launched at 9000 by its own thread, outside any range
  CHECK(p.t("SELECT module FROM kernel_view WHERE rank = 1 AND correlation = 1") == "<NULL>");
}

TEST_CASE("nsys: NCCL kernels become collectives with payload bytes, communicator and sequence", "[import][nsys]") {
  Imported p(modern_schema() + modern_rows());
  CHECK(p.i("SELECT count(*) FROM collectives") == 2);
  CHECK(p.t("SELECT type FROM collective_view WHERE sequence = 0") == "all_gather");
  CHECK(p.i("SELECT bytes FROM collectives WHERE sequence = 0") == 1048576);
  CHECK(p.t("SELECT process_group FROM collective_view WHERE sequence = 0") == "0x000000000000002a");
  // launched at 2550, inside the same ncclAllGather call: same communicator, next sequence number
  CHECK(p.i("SELECT start_ns FROM collectives WHERE sequence = 1") == 2100);
  CHECK(p.i("SELECT count(*) FROM collectives c JOIN kernels k ON k.id = c.kernel_id WHERE k.category = 1") == 2);
}

TEST_CASE("nsys: GPU memory usage events with sign from the enum label and module by time", "[import][nsys]") {
  Imported p(modern_schema() + modern_rows());
  CHECK(p.i("SELECT count(*) FROM memory_events") == 2);
  CHECK(p.i("SELECT bytes FROM memory_events WHERE time_ns = -550") == 1000);
  CHECK(p.i("SELECT bytes FROM memory_events WHERE time_ns = 8000") == -1000);
  CHECK(p.t("SELECT m.fqn FROM memory_events e JOIN modules m ON m.id = e.module_id") == "layers.0");
  CHECK(p.i("SELECT count(*) FROM memory_events WHERE stream_id IS NOT NULL") == 1);
  CHECK(p.i("SELECT count FROM skipped_events WHERE reason LIKE '%neither Allocation nor Deallocation%'") == 1);
}

TEST_CASE("nsys: skipped events are counted with a reason", "[import][nsys]") {
  Imported p(modern_schema() + modern_rows());
  CHECK(p.i("SELECT count FROM skipped_events WHERE reason LIKE '%without an end%'") == 1);
  CHECK(p.i("SELECT rank FROM skipped_events WHERE reason LIKE '%without an end%'") == 0);  // pid 100
  CHECK(p.i("SELECT count FROM skipped_events WHERE reason LIKE '%not a range%'") == 1);
  CHECK(p.i("SELECT count FROM skipped_events WHERE reason LIKE '%process without CUDA kernels%'") == 1);
  CHECK(p.i("SELECT rank FROM skipped_events WHERE reason LIKE '%process without CUDA kernels%'") == -999);  // NULL
}

TEST_CASE("nsys: non-UTF-8 bytes in a text column are replaced, not passed through", "[import][nsys]") {
  Imported p(modern_schema() + modern_rows());
  CHECK(p.t("SELECT name FROM range_view WHERE name LIKE 'A%B'") == "A\xEF\xBF\xBD" "B");
  CHECK(p.i("SELECT count(*) FROM strings WHERE CAST(value AS BLOB) = X'41FF42'") == 0);
}

TEST_CASE("nsys: an older schema (shortName, text only, few tables) still imports", "[import][nsys]") {
  Imported p(old_schema() + R"sql(
INSERT INTO StringIds VALUES (1, 'volta_sgemm_128x64_nn'), (2, 'ncclKernel_AllReduce_RING_LL_Sum_float');
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (100, 200, 0, 1, 7, 11, {pid:300}, 1, 80, 1, 1, 256, 1, 1),
  (300, 400, 0, 1, 13, 12, {pid:300}, 2, 2, 1, 1, 512, 1, 1), (150, 250, 0, 1, 7, 11, {pid:301}, 1, 80, 1, 1, 256, 1, 1);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (90, 95, 0, {tid:300:300}, 11, 1, 0);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (500, 600, 0, 1, 7, 13, {pid:300}, 64, 18);
INSERT INTO NVTX_EVENTS VALUES (80, 120, 159, NULL, NULL, NULL, 'FSDP::pre_forward (model.encoder)', {tid:300:300}, 0);
)sql");
  CHECK(p.i("SELECT count(*) FROM ranks") == 2);
  CHECK(p.t("SELECT gpu_name FROM ranks WHERE rank = 0") == "");
  CHECK(p.i("SELECT count(*) FROM kernel_view WHERE name = 'volta_sgemm_128x64_nn'") == 2);
  CHECK(p.t("SELECT type FROM collective_view") == "all_reduce");
  CHECK(p.t("SELECT dtype FROM collective_view") == "float");
  CHECK(p.t("SELECT module FROM kernel_view WHERE correlation = 11 AND rank = 0") == "model.encoder");
  CHECK(p.t("SELECT name FROM kernel_view WHERE category = 'memcpy'") == "Memcpy Device-to-Device");
  // no session start time: the profile clock starts at the first kernel
  CHECK(p.i("SELECT min(start_ns) FROM kernels") == 0);
}

TEST_CASE("nsys: NCCL payloads in binaryData are decoded through the schema tables; ranks from ncclCommInitRank",
          "[import][nsys]") {
  // Blobs: ncclSend {comm 0x2a, 0x1000 bytes, peer}, ncclRecv {comm, 0x2000 bytes, peer};
  // ncclCommInitRank {comm, nranks 2, rank, device}.
  Imported p(modern_schema() + payload_rows());
  CHECK(p.i("SELECT pid FROM ranks WHERE rank = 0") == 200);
  CHECK(p.i("SELECT pid FROM ranks WHERE rank = 1") == 100);
  CHECK(p.i("SELECT world_size FROM ranks WHERE rank = 0") == 2);
  CHECK(p.t("SELECT type FROM collective_view WHERE rank = 1") == "send_recv");
  // the grouped launch (inside ncclGroupEnd) gets the send and recv sizes since ncclGroupStart
  CHECK(p.i("SELECT bytes FROM collectives WHERE rank = 1") == 0x1000 + 0x2000);
  CHECK(p.i("SELECT group_size FROM collectives WHERE rank = 1") == 2);
  CHECK(p.i("SELECT kind FROM streams WHERE native_id = 30 AND rank = 0") == 2);
  // rank 0 had a grouped launch without payloads: bytes unknown (0)
  CHECK(p.i("SELECT bytes FROM collectives WHERE rank = 0") == 0);
}

TEST_CASE("nsys: bad inputs give an ImportError and no output file", "[import][nsys]") {
  SECTION("an export with no kernels") {
    const std::string msg = import_error(modern_schema());
    CHECK(msg.find("no CUDA kernels in") != std::string::npos);
    CHECK(msg.find("in.sqlite") != std::string::npos);
  }
  SECTION("an export without a kernel table") {
    const std::string msg = import_error(
        "CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT); CREATE TABLE META_DATA_EXPORT(name, value);");
    CHECK(msg.find("no CUDA kernels") != std::string::npos);
  }
  SECTION("a SQLite file that is not an nsys export") {
    const std::string msg = import_error("CREATE TABLE orders(id INTEGER, total REAL); INSERT INTO orders VALUES (1, 2.5);");
    CHECK(msg.find("not an Nsight Systems export") != std::string::npos);
  }
  SECTION("a kernel table without the columns of an export") {
    const std::string msg = import_error(
        "CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT); CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(a, b);"
        " INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1, 2);");
    CHECK(msg.find("has no 'start' column") != std::string::npos);
  }
}

TEST_CASE("nsys: a truncated export gives an ImportError and no output file", "[import][nsys]") {
  ss::test::TempDir dir;
  // Enough rows that the kernel table spans many pages, then cut the file in half.
  build_sqlite(dir.file("full.sqlite"),
               expand(modern_schema() + "INSERT INTO StringIds VALUES (1, 'k');"
                      " WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)"
                      " INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, correlationId, globalPid,"
                      " demangledName) SELECT i * 10, i * 10 + 5, 0, 7, i, {pid:100}, 1 FROM n;"));
  const std::string full = ss::test::read_file(dir.file("full.sqlite"));
  ss::test::write_file(dir.file("cut.sqlite"), full.substr(0, full.size() / 2));
  // SQLite may notice the damage while import_files reads the schema (detect_format: a ProfileError
  // from SQLite) or while the importer reads rows (an ImportError naming the file). Never a crash,
  // never an output file.
  std::string message;
  bool import_error = false;
  try {
    import_files({dir.file("cut.sqlite")}, dir.file("out.ssdb"), {.show_progress = false});
  } catch (const ImportError& e) {
    import_error = true;
    message = e.what();
  } catch (const ss::ProfileError& e) {
    message = e.what();
  }
  INFO(message);
  CHECK_FALSE(message.empty());
  if (import_error) CHECK(message.find("cut.sqlite") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.file("out.ssdb")));
}

TEST_CASE("nsys: a damaged export (kernel pages overwritten) gives an ImportError naming it", "[import][nsys]") {
  ss::test::TempDir dir;
  build_sqlite(dir.file("full.sqlite"),
               expand(modern_schema() + "INSERT INTO StringIds VALUES (1, 'k');"
                      " WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)"
                      " INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, correlationId, globalPid,"
                      " demangledName) SELECT i * 10, i * 10 + 5, 0, 7, i, {pid:100}, 1 FROM n;"));
  std::string bytes = ss::test::read_file(dir.file("full.sqlite"));
  // The schema pages come first (tables created before any row): damage the middle, where the
  // kernel rows are, so that the file is detected as an nsys export and fails while being read.
  for (std::size_t i = bytes.size() / 2; i < bytes.size() / 2 + 65536 && i < bytes.size(); ++i) bytes[i] = '\xAB';
  ss::test::write_file(dir.file("damaged.sqlite"), bytes);
  std::string message;
  try {
    import_files({dir.file("damaged.sqlite")}, dir.file("out.ssdb"), {.show_progress = false});
  } catch (const ImportError& e) {
    message = e.what();
  }
  INFO(message);
  CHECK(message.find("damaged.sqlite") != std::string::npos);
  CHECK(message.find("damaged or truncated") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.file("out.ssdb")));
}

TEST_CASE("nsys: two exports of one job share one module tree and take the next free ranks", "[import][nsys]") {
  ss::test::TempDir dir;
  build_sqlite(dir.file("a.sqlite"), expand(modern_schema() + modern_rows()));
  build_sqlite(dir.file("b.sqlite"), expand(modern_schema() + modern_rows()));
  import_files({dir.file("a.sqlite"), dir.file("b.sqlite")}, dir.file("out.ssdb"), {.show_progress = false});
  const std::string out = dir.file("out.ssdb");
  CHECK(query_int(out, "SELECT count(*) FROM ranks") == 4);
  CHECK(query_int(out, "SELECT pid FROM ranks WHERE rank = 2") == 100);
  CHECK(query_int(out, "SELECT count(*) FROM modules") == 3);
  CHECK(query_int(out, "SELECT count(*) FROM process_groups") == 1);
  CHECK(query_int(out, "SELECT count(DISTINCT module_id) FROM kernels WHERE module_id IS NOT NULL") == 1);
}

// Not run by ctest (hidden tag): writes small fixtures (512-byte pages, so they fit the fuzzer's
// -max_len) as seeds for tests/fuzz/fuzz_nsys.cpp:
//   SHARDSCOPE_NSYS_SEEDS=build-fuzz/fuzz-corpus/fuzz_nsys build/tests/import/nsys/test_import_nsys "[.seeds]"
TEST_CASE("nsys: write fuzzing seeds", "[.seeds]") {
  const char* dir = std::getenv("SHARDSCOPE_NSYS_SEEDS");
  REQUIRE(dir != nullptr);
  std::filesystem::create_directories(dir);
  const std::pair<const char*, std::string> seeds[] = {
      {"modern.sqlite", modern_schema() + modern_rows()},
      {"old.sqlite", old_schema() + "INSERT INTO StringIds VALUES (1, 'volta_sgemm'), (2, 'ncclKernel_AllReduce_RING_LL_Sum_float');"
                                    " INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (100, 200, 0, 1, 7, 11, {pid:300}, 1, 80, 1, 1, 256, 1, 1),"
                                    " (300, 400, 0, 1, 13, 12, {pid:300}, 2, 2, 1, 1, 512, 1, 1);"
                                    " INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (90, 95, 0, {tid:300:300}, 11, 1, 0);"
                                    " INSERT INTO NVTX_EVENTS VALUES (80, 120, 159, NULL, NULL, NULL, 'FSDP::pre_forward (a.b)',"
                                    " {tid:300:300}, 0);"},
      {"empty.sqlite", modern_schema()},
      {"payload.sqlite", modern_schema() + payload_rows()},
  };
  for (const auto& [name, sql] : seeds) {
    const std::string path = std::string(dir) + "/" + name;
    std::filesystem::remove(path);
    build_sqlite(path, expand(sql), 512);
  }
}

TEST_CASE("nsys: equal pids on two machines of one export are two ranks, with their host names", "[import][nsys]") {
  Imported p(modern_schema() + R"sql(
CREATE TABLE TARGET_INFO_SYSTEM_ENV(globalVid INTEGER, devStateName TEXT, name TEXT, nameEnum INTEGER, value TEXT);
INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES (1 << 48, '', 'Hostname', 0, 'node-a'), (2 << 48, '', 'Hostname', 0, 'node-b');
INSERT INTO StringIds VALUES (1, 'gemm');
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, correlationId, globalPid, demangledName)
  VALUES (100, 200, 0, 7, 1, (2 << 48) | (100 << 24), 1), (100, 200, 0, 7, 1, (1 << 48) | (100 << 24), 1);
)sql");
  CHECK(p.i("SELECT count(*) FROM ranks WHERE pid = 100") == 2);
  CHECK(p.t("SELECT host FROM ranks WHERE rank = 0") == "node-a");
  CHECK(p.t("SELECT host FROM ranks WHERE rank = 1") == "node-b");
}

TEST_CASE("nsys: timestamps that do not fit the profile clock skip their event", "[import][nsys]") {
  Imported p(modern_schema() + modern_rows() + R"sql(
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, correlationId, globalPid, demangledName)
  VALUES (9223372036854775000, 9223372036854775800, 0, 7, 99, {pid:100}, 1), (50000, 40000, 0, 7, 98, {pid:100}, 1);
INSERT INTO NVTX_EVENTS(start, end, eventType, text, globalTid, domainId) VALUES
  (-9223372036854775000, 10, 159, 'from the far past', {tid:100:101}, 0);
)sql");
  CHECK(p.i("SELECT count(*) FROM kernels WHERE rank = 0 AND category IN (0, 1)") == 4);
  CHECK(p.i("SELECT count FROM skipped_events WHERE reason = 'nsys: kernel with a timestamp out of range'") == 1);
  CHECK(p.i("SELECT count FROM skipped_events WHERE reason = 'nsys: kernel with negative duration'") == 1);
  CHECK(p.i("SELECT count FROM skipped_events WHERE reason = 'nsys: NVTX range with a timestamp out of range'") == 1);
}

TEST_CASE("nsys: a payload is decoded with the schema of its call's kind, even when sizes collide", "[import][nsys]") {
  // In payload_rows() the CommInitRank schema and the Send/Recv schema are both 24 bytes: the
  // message size of a send must not be read as a rank count, nor the rank fields as bytes.
  ss::test::TempDir dir;
  build_sqlite(dir.file("p.sqlite"), expand(modern_schema() + payload_rows()));
  ss::import::nsys::NsysDb db(dir.file("p.sqlite"));
  ss::import::nsys::NcclPayloadSchemas schemas;
  schemas.load(db);
  std::string send("\x2a\0\0\0\0\0\0\0" "\0\x10\0\0\0\0\0\0" "\x01\0\0\0\0\0\0\0", 24);
  std::string init("\x2a\0\0\0\0\0\0\0" "\x02\0\0\0" "\x01\0\0\0" "\0\0\0\0\0\0\0\0", 24);
  const auto s = schemas.decode_blob(1, send, "ncclSend");
  CHECK(s.bytes == 0x1000);
  CHECK(s.comm == 0x2aU);
  CHECK_FALSE(s.nranks.has_value());
  CHECK_FALSE(s.rank.has_value());
  const auto i = schemas.decode_blob(1, init, "ncclCommInitRankConfig");
  CHECK(i.rank == 1);
  CHECK(i.nranks == 2);
  CHECK_FALSE(i.bytes.has_value());
  CHECK(schemas.decode_blob(1, send.substr(0, 20), "ncclSend").empty());  // a size no schema has
  CHECK(schemas.decode_blob(2, send, "ncclSend").empty());                 // another domain
  const auto j = ss::import::nsys::decode_json_payload(R"({"NCCL communicator ID": 7, "Message size [bytes]" : 65536})");
  CHECK(j.bytes == 65536);
  CHECK(j.comm == 7U);
}
