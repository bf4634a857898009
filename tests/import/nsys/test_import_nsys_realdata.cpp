// The two real Nsight Systems 2026.2 exports (2 x H100, FSDP + activation checkpointing), each
// fact checked independently with the sqlite3 one-liner next to it (F = the .sqlite file).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "profiler/import/import.h"
#include "tests/import/nsys/nsys_fixture.h"
#include "tests/support/test_paths.h"

using ss::test::nsys::query_int;
using ss::test::nsys::query_text;

namespace {

std::string import_real(const std::string& name, ss::test::TempDir& dir) {
  if (!ss::test::traces_available()) {
    std::cerr << "SKIP: real traces not found at " << ss::test::traces_dir() << "\n";
    std::exit(77);
  }
  const std::string out = dir.file(name + ".ssdb");
  ss::import::import_files({ss::test::trace("nsys-h100-fsdp-2gpu/" + name)}, out, {.show_progress = false});
  return out;
}

}  // namespace

TEST_CASE("realdata nsys: mfu_2gpu_before.sqlite", "[import][nsys][realdata]") {
  ss::test::TempDir dir;
  const std::string p = import_real("mfu_2gpu_before.sqlite", dir);
  // sqlite3 F "SELECT count(DISTINCT globalPid) FROM CUPTI_ACTIVITY_KIND_KERNEL"  -> 2
  CHECK(query_int(p, "SELECT count(*) FROM ranks") == 2);
  // sqlite3 F "SELECT (globalPid>>24)&16777215, count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY 1" -> 144|1993, 145|2017
  CHECK(query_int(p, "SELECT pid FROM ranks WHERE rank = 0") == 144);
  // sqlite3 F "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname'" -> modal
  CHECK(query_text(p, "SELECT host FROM ranks WHERE rank = 1") == "modal");
  CHECK(query_int(p, "SELECT count(*) FROM kernels WHERE rank = 0 AND category IN (0, 1)") == 1993);
  CHECK(query_int(p, "SELECT count(*) FROM kernels WHERE rank = 1 AND category IN (0, 1)") == 2017);
  // Launch calls are kept (issue 14): every kernel, copy and memset whose correlation id has a
  // runtime row of the same process. sqlite3 F "SELECT sum(n) FROM (SELECT count(*) n FROM
  //   CUPTI_ACTIVITY_KIND_KERNEL k WHERE EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r WHERE
  //   r.correlationId = k.correlationId AND r.globalTid>>24 = k.globalPid>>24) UNION ALL ... MEMCPY ... MEMSET)" -> 5268
  CHECK(query_int(p, "SELECT count(*) FROM launches") == 5268);
  CHECK(query_int(p, "SELECT count(*) FROM launch_view WHERE delay_ns < 0") == 0);  // issued before it ran
  CHECK(query_int(p, "SELECT count(*) FROM launch_view WHERE api = 'cudaLaunchKernel_v7000'") == 3587);
  CHECK(query_int(p, "SELECT count(*) FROM launches l JOIN threads t ON t.id = l.thread_id AND t.rank = l.rank") == 5268);
  // sqlite3 F "SELECT (k.globalPid>>24)&16777215, count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s
  //   ON s.id = k.demangledName WHERE s.value LIKE 'ncclDevKernel_SendRecv%' GROUP BY 1" -> 144|33, 145|33
  CHECK(query_int(p, "SELECT count(*) FROM collective_view WHERE rank = 0 AND type = 'send_recv'") == 33);
  CHECK(query_int(p, "SELECT count(*) FROM collective_view WHERE rank = 1 AND type = 'send_recv'") == 33);
  CHECK(query_int(p, "SELECT count(*) FROM collectives WHERE type != 7") == 0);
  CHECK(query_int(p, "SELECT max(sequence) FROM collectives WHERE rank = 1") == 32);
  // sqlite3 F "SELECT (globalPid>>24)&16777215, deviceId, streamId, count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY 1,2,3"
  //   -> 144|0|7|1993, 145|1|15|2017: one stream per rank, which runs the SendRecv kernels too
  CHECK(query_int(p, "SELECT count(*) FROM streams") == 2);
  // 33 of its 2,017 kernels are NCCL: a compute stream that also runs the SendRecv (stream_kind.h)
  CHECK(query_int(p, "SELECT native_id FROM streams WHERE rank = 1 AND kind = 1") == 15);
  // sqlite3 F "SELECT (globalPid>>24)&16777215, count(*), sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY 1"
  //   -> 144|510|4023067272, 145|510|4023067272
  CHECK(query_int(p, "SELECT count(*) FROM kernels WHERE rank = 0 AND category = 2") == 510);
  CHECK(query_int(p, "SELECT sum(bytes) FROM kernels WHERE rank = 1 AND category = 2") == 4023067272);
  // sqlite3 F "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET" -> 269
  CHECK(query_int(p, "SELECT count(*) FROM kernels WHERE category = 3") == 269);
  // sqlite3 F "SELECT count(DISTINCT substr(text, instr(text, '(') + 1, instr(text, ')') - instr(text, '(') - 1))
  //   FROM NVTX_EVENTS WHERE text LIKE 'FSDP::%'" -> 18
  CHECK(query_int(p, "SELECT count(*) FROM modules WHERE is_fsdp_unit = 1") == 18);
  // sqlite3 F "SELECT count(*) FROM NVTX_EVENTS WHERE text LIKE 'FSDP::%(blocks.3._checkpoint_wrapped_module)%'" -> 4
  CHECK(query_int(p, "SELECT count(*) FROM range_view WHERE kind = 'fsdp' AND module = 'blocks.3._checkpoint_wrapped_module'") == 4);
  CHECK(query_text(p, "SELECT p.fqn FROM modules m JOIN modules p ON p.id = m.parent_id"
                      " WHERE m.fqn = 'blocks.19._checkpoint_wrapped_module'") == "blocks.19");
  // sqlite3 F "SELECT count(*) FROM NVTX_EVENTS WHERE text LIKE 'ProfilerStep#%'" -> 0 (a 0.3 s window, no steps)
  CHECK(query_int(p, "SELECT count(*) FROM steps") == 0);
  // sqlite3 F "SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 59 AND end IS NOT NULL" -> 19118
  CHECK(query_int(p, "SELECT count(*) FROM ranges WHERE kind != 1") == 19118);
  // Module ranges = pre_forward hooks with a later post_forward of the same FQN on the thread:
  // sqlite3 F "WITH f AS (SELECT globalTid, start, text, substr(text, instr(text, '(') + 1, instr(text, ')')
  //   - instr(text, '(') - 1) AS fqn FROM NVTX_EVENTS WHERE text LIKE 'FSDP::%') SELECT count(*) FROM f p
  //   WHERE p.text LIKE 'FSDP::pre_forward%' AND EXISTS (SELECT 1 FROM f q WHERE q.globalTid = p.globalTid
  //   AND q.fqn = p.fqn AND q.text LIKE 'FSDP::post_forward%' AND q.start > p.start)" -> 32
  CHECK(query_int(p, "SELECT count(*) FROM range_view WHERE kind = 'module' AND phase = 'forward'") == 32);
  // sqlite3 F "SELECT count(*) FROM NVTX_EVENTS WHERE domainId != 0" -> 462 (ncclSend/Recv/GroupStart/...)
  CHECK(query_int(p, "SELECT count(*) FROM range_view WHERE kind = 'nccl'") == 462);
  // Kernels launched (runtime record, same pid) inside an FSDP range or a pre..post_forward window:
  // sqlite3 F "WITH f AS (SELECT globalTid, start, end, text, substr(text, instr(text, '(') + 1, instr(text, ')')
  //   - instr(text, '(') - 1) AS fqn FROM NVTX_EVENTS WHERE text LIKE 'FSDP::%'), win AS (SELECT p.globalTid,
  //   p.start AS s, (SELECT min(q.end) FROM f q WHERE q.globalTid = p.globalTid AND q.fqn = p.fqn AND q.text LIKE
  //   'FSDP::post_forward%' AND q.start > p.start) AS e FROM f p WHERE p.text LIKE 'FSDP::pre_forward%' UNION ALL
  //   SELECT globalTid, start, end FROM f) SELECT (k.globalPid >> 24) & 16777215, count(DISTINCT k.rowid) FROM
  //   CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId AND
  //   (r.globalTid >> 24) = (k.globalPid >> 24) JOIN win ON win.globalTid = r.globalTid AND r.start BETWEEN
  //   win.s AND win.e GROUP BY 1" -> 144|1931, 145|1931
  CHECK(query_int(p, "SELECT count(*) FROM kernels WHERE rank = 0 AND module_id IS NOT NULL AND category IN (0, 1)") == 1931);
  CHECK(query_int(p, "SELECT count(*) FROM kernels WHERE rank = 1 AND module_id IS NOT NULL AND category IN (0, 1)") == 1931);
  // sqlite3 F "SELECT utcEpochNs + (SELECT min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL) FROM TARGET_INFO_SESSION_START_TIME"
  //   -> 1779782390288265548
  CHECK(query_text(p, "SELECT value FROM meta WHERE key = 'time_origin_unix_ns'") == "1779782390288265548");
  CHECK(query_int(p, "SELECT min(start_ns) FROM kernels") == 0);
}

TEST_CASE("realdata nsys: mfu_2gpu_after.sqlite", "[import][nsys][realdata]") {
  ss::test::TempDir dir;
  const std::string p = import_real("mfu_2gpu_after.sqlite", dir);
  // sqlite3 F "SELECT (globalPid>>24)&16777215, count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY 1" -> 148|1793, 149|1794
  CHECK(query_int(p, "SELECT count(*) FROM ranks") == 2);
  CHECK(query_int(p, "SELECT pid FROM ranks WHERE rank = 1") == 149);
  CHECK(query_int(p, "SELECT count(*) FROM kernels WHERE rank = 0 AND category IN (0, 1)") == 1793);
  CHECK(query_int(p, "SELECT count(*) FROM kernels WHERE rank = 1 AND category IN (0, 1)") == 1794);
  // sqlite3 F "SELECT (k.globalPid>>24)&16777215, count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s
  //   ON s.id = k.demangledName WHERE s.value LIKE 'ncclDevKernel_SendRecv%' GROUP BY 1" -> 148|31, 149|31
  CHECK(query_int(p, "SELECT count(*) FROM collective_view WHERE rank = 0 AND type = 'send_recv'") == 31);
  CHECK(query_int(p, "SELECT count(*) FROM collective_view WHERE rank = 1 AND type = 'send_recv'") == 31);
  // sqlite3 F "SELECT count(DISTINCT substr(text, instr(text, '(') + 1, instr(text, ')') - instr(text, '(') - 1))
  //   FROM NVTX_EVENTS WHERE text LIKE 'FSDP::%'" -> 16 (blocks.8 ... blocks.23)
  CHECK(query_int(p, "SELECT count(*) FROM modules WHERE is_fsdp_unit = 1") == 16);
  CHECK(query_int(p, "SELECT count(*) FROM modules WHERE fqn = 'blocks.23._checkpoint_wrapped_module'") == 1);
  CHECK(query_int(p, "SELECT count(*) FROM modules WHERE fqn = 'blocks.3._checkpoint_wrapped_module'") == 0);
  // sqlite3 F "SELECT count(*) FROM NVTX_EVENTS WHERE (globalTid>>24)&16777215 IN (148, 149) AND eventType = 59
  //   AND end IS NOT NULL" -> 17113
  CHECK(query_int(p, "SELECT count(*) FROM ranges WHERE kind != 1") == 17113);
  // (the kernel-launch-window query of the "before" test) -> 148|1693, 149|1693
  CHECK(query_int(p, "SELECT count(*) FROM kernels WHERE rank = 0 AND module_id IS NOT NULL AND category IN (0, 1)") == 1693);
  CHECK(query_int(p, "SELECT count(*) FROM kernels WHERE rank = 1 AND module_id IS NOT NULL AND category IN (0, 1)") == 1693);
  CHECK(query_int(p, "SELECT count(*) FROM steps") == 0);
}

TEST_CASE("realdata nsys: both files of one job cannot be imported as one (same ranks)", "[import][nsys][realdata]") {
  ss::test::TempDir dir;
  import_real("mfu_2gpu_before.sqlite", dir);  // skips (77) without the traces
  const std::string before = ss::test::trace("nsys-h100-fsdp-2gpu/mfu_2gpu_before.sqlite");
  const std::string after = ss::test::trace("nsys-h100-fsdp-2gpu/mfu_2gpu_after.sqlite");
  // two exports each holding ranks 0 and 1: the second one's processes take the next free ranks
  ss::import::import_files({before, after}, dir.file("both.ssdb"), {.show_progress = false});
  CHECK(query_int(dir.file("both.ssdb"), "SELECT count(*) FROM ranks") == 4);
}

TEST_CASE("realdata nsys: a truncated copy of a real export gives an ImportError and no output", "[import][nsys][realdata]") {
  ss::test::TempDir dir;
  import_real("mfu_2gpu_before.sqlite", dir);
  const std::string full = ss::test::read_file(ss::test::trace("nsys-h100-fsdp-2gpu/mfu_2gpu_before.sqlite"));
  for (std::size_t keep : {full.size() / 2, full.size() / 10, std::size_t(4096)}) {
    ss::test::write_file(dir.file("cut.sqlite"), full.substr(0, keep));
    // Damage found while reading the schema surfaces as SQLite's ProfileError (detect_format);
    // found by the importer, as an ImportError naming the file.
    std::string message;
    bool import_error = false;
    try {
      ss::import::import_files({dir.file("cut.sqlite")}, dir.file("out.ssdb"), {.show_progress = false});
    } catch (const ss::import::ImportError& e) {
      import_error = true;
      message = e.what();
    } catch (const ss::ProfileError& e) {
      message = e.what();
    }
    INFO("kept " << keep << " bytes: " << message);
    CHECK_FALSE(message.empty());
    if (import_error) CHECK(message.find("cut.sqlite") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir.file("out.ssdb")));
  }
}
