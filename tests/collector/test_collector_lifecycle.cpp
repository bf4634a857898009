// The collector's life cycle under `record --steps A:B`, against a stand-in for libcupti
// (fake_cupti.cpp): the trace kinds follow the window, and when the window closes every kind goes
// off, what CUPTI holds is flushed and decoded, and CUPTI is detached (cuptiFinalize) at the exit
// of the job's next CUDA call, after which the collector calls CUPTI no more; the rank file says
// so. The collector is one per process, so each scenario runs in a child process of its own.
#include <catch2/catch.hpp>
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

#include "profiler/collector/cupti/collector.h"
#include "profiler/collector/cupti/nvtx_release.h"
#include "tests/collector/fake_cupti.h"
#include "tests/support/test_paths.h"

namespace {

namespace col = ss::collector;

// Runs `scenario` in a child; returns what it reported ("" = every expectation held).
std::string in_child(const std::function<std::string()>& scenario) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    std::string out;
    try {
      out = scenario();
    } catch (const std::exception& e) {
      out = std::string("exception: ") + e.what();
    }
    if (!out.empty() && write(fds[1], out.data(), out.size()) < 0) _exit(3);
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) out += " (child status " + std::to_string(status) + ")";
  return out;
}

struct Expect {
  std::ostringstream failures;
  void operator()(bool ok, const std::string& what) {
    if (!ok) failures << what << "; ";
  }
};

bool wait_for(const std::function<bool()>& done, std::chrono::milliseconds limit = std::chrono::milliseconds(10000)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// The first column of the first row of `sql` (with `arg` bound to its parameter, if any) in the rank file.
std::string query(const std::string& dir, const char* sql, const std::string& arg = "") {
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".ssdb") continue;
    sqlite3* db = nullptr;
    std::string value = "(no row)";
    if (sqlite3_open_v2(e.path().c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
      sqlite3_stmt* st = nullptr;
      if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) == SQLITE_OK) {
        if (sqlite3_bind_parameter_count(st) > 0) sqlite3_bind_text(st, 1, arg.c_str(), -1, SQLITE_TRANSIENT);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
          value = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
      }
      sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return value;
  }
  return "(no rank file)";
}

std::string meta(const std::string& dir, const std::string& key) {
  return query(dir, "SELECT value FROM meta WHERE key = ?", key);
}

std::string kernels(const std::string& dir) { return query(dir, "SELECT COUNT(*) FROM kernels"); }

std::string kernels_without_launch(const std::string& dir) {
  return query(dir, "SELECT COALESCE(SUM(count), 0) FROM skipped_events WHERE reason = ?", "kernels without a launch record");
}

// Closes the window and lets the job's next CUDA calls detach CUPTI, as a job after its window does.
bool close_window_and_detach() {
  if (!col::set_capture(false)) return false;
  return wait_for([] {
    fake_cupti::api_call(CUPTI_API_EXIT);
    return fake_cupti::snapshot().finalizes == 1;
  });
}

// One copy of NVTX whose (core) function table CUPTI was handed (nvtx_release.h; the layouts are
// tested in test_nvtx_release.cpp): NCCL's ranges after the window go through such a slot.
void tool_handler() {}
NvtxFunctionPointer nvtx_slot = nullptr;
NvtxFunctionPointer* nvtx_table[3] = {nullptr, &nvtx_slot, nullptr};
int module_table(NvtxCallbackModule module, NvtxFunctionTable* out, unsigned int* size) {
  if (module != NVTX_CB_MODULE_CORE) return 0;
  *out = nvtx_table;
  *size = 2;
  return 1;
}
const NvtxExportTableCallbacks nvtx_callbacks{sizeof(NvtxExportTableCallbacks), &module_table};
const void* nvtx_export_table(uint32_t id) { return id == NVTX_ETID_CALLBACKS ? &nvtx_callbacks : nullptr; }

void hand_nvtx_to_cupti() {
  nvtx_slot = &tool_handler;
  col::remember_nvtx_tables(reinterpret_cast<const void*>(&nvtx_export_table));
}

void setenv_for_record(const std::string& dir, const char* steps, const char* detach) {
  setenv("SHARDSCOPE_OUTPUT_DIR", dir.c_str(), 1);
  setenv("SHARDSCOPE_STEPS", steps, 1);
  setenv("SHARDSCOPE_MEMORY", "history", 1);
  if (detach) setenv("SHARDSCOPE_CUPTI_DETACH", detach, 1);
}

// Runs a scenario in a child process of its own (the collector is one per process) with a fresh
// output folder; every expectation it reports must have held.
void scenario(const std::function<void(const std::string& dir, Expect& expect)>& body) {
  ss::test::TempDir dir;
  const std::string failures = in_child([&] {
    Expect expect;
    body(dir.path(), expect);
    return expect.failures.str();
  });
  CHECK(failures == "");
}

}  // namespace

TEST_CASE("a closed capture window detaches CUPTI at the next CUDA call, then the collector leaves it alone",
          "[collector][lifecycle]") {
  scenario([&](const std::string& dir, Expect& expect) {
    setenv_for_record(dir, "2:4", nullptr);
    expect(col::start_collector(), "the collector starts");
    hand_nvtx_to_cupti();
    auto s = fake_cupti::snapshot();
    expect(!s.kinds.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "no kernel trace before the window");
    expect(s.kinds.count(CUPTI_ACTIVITY_KIND_MEMORY2) == 1, "memory records on from the start");
    expect(s.domains.empty(), "no callback domain before the window closes");
    fake_cupti::api_call(CUPTI_API_EXIT);  // nothing armed: nothing happens
    expect(!fake_cupti::snapshot().kinds.count(CUPTI_ACTIVITY_KIND_RUNTIME), "no launch records before the window");
    expect(col::set_capture(true), "the window opens");
    expect(fake_cupti::snapshot().kinds.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == 1, "kernels traced in the window");
    expect(fake_cupti::snapshot().runtime_apis.count(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) == 1,
           "launch records in the window");
    expect(col::set_capture(false), "the window closes");
    s = fake_cupti::snapshot();
    expect(s.kinds.empty(), "every kind off, memory too");
    expect(s.forced_flushes == 1, "one forced flush at the window's end");
    expect(s.finalizes == 0, "not finalized before a CUDA call's exit");
    expect(wait_for([] { return fake_cupti::snapshot().domains.size() == 2; }),
           "the writer arms the detach (runtime and driver domains enabled)");
    fake_cupti::api_call(CUPTI_API_ENTER);
    expect(fake_cupti::snapshot().finalizes == 0, "not at an API entry");
    // The writer sets its ready flag just after the second domain: the first exit after it finalizes.
    expect(wait_for([] {
             fake_cupti::api_call(CUPTI_API_EXIT);
             return fake_cupti::snapshot().finalizes == 1;
           }),
           "finalized at an API exit");
    fake_cupti::api_call(CUPTI_API_EXIT);
    expect(fake_cupti::snapshot().finalizes == 1, "finalized once");
    expect(fake_cupti::snapshot().nvtx_released_at_finalize, "NVTX's tables released before cuptiFinalize");
    expect(nvtx_slot == nullptr, "NVTX's slot says 'no tool'");
    expect(!col::set_capture(true), "the window does not open again");
    // A commit period of the writer thread: it must not flush or count through CUPTI any more.
    std::this_thread::sleep_for(std::chrono::milliseconds(1300));
    col::stop_collector();
    s = fake_cupti::snapshot();
    expect(s.calls_after_finalize == 0, "no CUPTI call after finalize (last: " + s.last_call_after_finalize + ")");
    expect(meta(dir, "collector.cupti_detached") == "1", "rank file: cupti_detached 1");
    expect(meta(dir, "collector.nvtx_slots_released") == "1", "rank file: one NVTX slot released");
    expect(meta(dir, "collector.capture_switches") == "2", "rank file: two switches");
    expect(meta(dir, "collector.dropped_records") == "0", "rank file: dropped records counted");
  });
}

TEST_CASE("a job busy with CUDA calls while the detach is armed: finalized once, after both domains are on",
          "[collector][lifecycle]") {
  scenario([&](const std::string& dir, Expect& expect) {
    setenv_for_record(dir, "1:2", nullptr);
    expect(col::start_collector(), "the collector starts");
    fake_cupti::api_exit_after_each_domain_enable();
    expect(col::set_capture(true) && col::set_capture(false), "the window opens and closes");
    expect(wait_for([] { return fake_cupti::snapshot().domains.size() == 2; }), "both callback domains armed");
    expect(fake_cupti::snapshot().finalizes == 0, "no finalize between or during the arming calls");
    // The job's next calls: the first exit after the arming finalizes (the writer may still be
    // between its last enable and the ready flag, hence the loop).
    expect(wait_for([] {
             fake_cupti::api_call(CUPTI_API_EXIT);
             return fake_cupti::snapshot().finalizes == 1;
           }),
           "finalized at a CUDA call's exit after the arming");
    col::stop_collector();
    const auto s = fake_cupti::snapshot();
    expect(s.finalizes == 1, "finalized once");
    expect(s.calls_after_finalize == 0, "no CUPTI call after finalize (last: " + s.last_call_after_finalize + ")");
    expect(meta(dir, "collector.cupti_detached") == "1", "rank file: cupti_detached 1");
  });
}

TEST_CASE("a process started by a recording rank (a spawned DataLoader worker) records nothing", "[collector][lifecycle]") {
  scenario([&](const std::string& dir, Expect& expect) {
    setenv_for_record(dir, "0:4", nullptr);
    setenv("SHARDSCOPE_RANK_PID", std::to_string(getppid()).c_str(), 1);
    expect(!col::start_collector(), "the collector stays off");
    expect(fake_cupti::snapshot().kinds.empty(), "no activity kind enabled");
    col::stop_collector();
    expect(std::filesystem::is_empty(dir), "no rank file");
  });
}

TEST_CASE("a window from step 0 takes the launch records per API, from the start", "[collector][lifecycle]") {
  scenario([&](const std::string& dir, Expect& expect) {
    setenv_for_record(dir, "0:4", nullptr);
    expect(col::start_collector(), "the collector starts");
    const auto s = fake_cupti::snapshot();
    expect(s.kinds.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == 1, "kernels traced from the start");
    expect(!s.kinds.count(CUPTI_ACTIVITY_KIND_RUNTIME) && !s.kinds.count(CUPTI_ACTIVITY_KIND_DRIVER),
           "not the whole API kinds (per-API records, enabled before any CUDA call)");
    col::stop_collector();
  });
}

TEST_CASE("SHARDSCOPE_CUPTI_DETACH=0 keeps CUPTI attached after the window, as before", "[collector][lifecycle]") {
  scenario([&](const std::string& dir, Expect& expect) {
    setenv_for_record(dir, "1:2", "0");
    expect(col::start_collector(), "the collector starts");
    hand_nvtx_to_cupti();
    expect(col::set_capture(true) && col::set_capture(false), "the window opens and closes");
    auto s = fake_cupti::snapshot();
    expect(s.kinds.count(CUPTI_ACTIVITY_KIND_MEMORY2) == 1, "memory records stay on");
    expect(!s.kinds.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "kernels off after the window");
    expect(!s.kinds.count(CUPTI_ACTIVITY_KIND_RUNTIME) && !s.kinds.count(CUPTI_ACTIVITY_KIND_DRIVER),
           "launch records off after the window");
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    fake_cupti::api_call(CUPTI_API_EXIT);
    expect(fake_cupti::snapshot().domains.empty(), "no callback domain armed");
    expect(col::set_capture(true), "the window can open again");
    col::stop_collector();
    s = fake_cupti::snapshot();
    expect(s.finalizes == 0, "never finalized");
    expect(nvtx_slot == &tool_handler && !col::nvtx_released(), "NVTX stays with CUPTI");
    expect(s.forced_flushes == 1, "the exit's forced flush only");
    expect(meta(dir, "collector.cupti_detached") == "0", "rank file: cupti_detached 0");
  });
}

TEST_CASE("a job that ends before its next CUDA call: nothing lost, nothing called after the flush",
          "[collector][lifecycle]") {
  scenario([&](const std::string& dir, Expect& expect) {
    setenv_for_record(dir, "1:2", nullptr);
    expect(col::start_collector() && col::set_capture(true) && col::set_capture(false), "a window");
    col::stop_collector();  // at once: the writer may not have armed the detach yet
    const auto s = fake_cupti::snapshot();
    expect(s.finalizes == 0, "no CUDA call, no finalize");
    expect(s.forced_flushes == 1, "the window's flush only (the exit does not flush again)");
    expect(meta(dir, "collector.cupti_detached") == "0", "rank file written, cupti_detached 0");
  });
}

TEST_CASE("a window from step A > 0 gets its launch records per API: seeded before CUDA's context",
          "[collector][lifecycle]") {
  scenario([&](const std::string& dir, Expect& expect) {
    setenv_for_record(dir, "2:4", nullptr);
    expect(col::start_collector(), "the collector starts");
    auto s = fake_cupti::snapshot();
    expect(s.runtime_apis.count(CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000) == 1 &&
               s.driver_apis.count(CUPTI_DRIVER_TRACE_CBID_cuProfilerStart) == 1,
           "a runtime and a driver function switched on before the context");
    expect(!s.runtime_apis.count(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000), "no launch record before the window");
    fake_cupti::create_context();
    fake_cupti::launch_kernels(40);  // steps 0-1: untraced
    expect(col::set_capture(true), "the window opens");
    fake_cupti::launch_kernels(300);
    std::this_thread::sleep_for(std::chrono::milliseconds(1300));  // a commit of the writer: the launch check
    s = fake_cupti::snapshot();
    expect(!s.kinds.count(CUPTI_ACTIVITY_KIND_RUNTIME) && !s.kinds.count(CUPTI_ACTIVITY_KIND_DRIVER),
           "no fallback to the whole API kinds");
    expect(close_window_and_detach(), "the window closes, CUPTI detached");
    col::stop_collector();
    expect(kernels(dir) == "300", "the window's 300 kernels (got " + kernels(dir) + ")");
    expect(kernels_without_launch(dir) == "0", "every kernel with its launch record (without: " +
                                                          kernels_without_launch(dir) + ")");
    expect(meta(dir, "collector.launch_records") == "per-api", "rank file: launch_records per-api");
    const std::string launches = query(dir,
                                       "SELECT count(*) || ' ' || group_concat(DISTINCT s.value) FROM launches l "
                                       "JOIN strings s ON s.id = l.name_id");
    expect(launches == "300 cudaLaunchKernel", "a launch row per kernel, named as Kineto names it (got " + launches + ")");
  });
}

TEST_CASE("where a window's per-API launch records do not arrive, the writer switches to the whole API kinds",
          "[collector][lifecycle]") {
  scenario([&](const std::string& dir, Expect& expect) {
    setenv_for_record(dir, "2:4", nullptr);
    // A context made before the collector could seed: CUPTI then delivers no function switched on later.
    fake_cupti::create_context();
    expect(col::start_collector(), "the collector starts");
    expect(col::set_capture(true), "the window opens");
    fake_cupti::launch_kernels(300);
    expect(wait_for([] { return fake_cupti::snapshot().kinds.count(CUPTI_ACTIVITY_KIND_RUNTIME) == 1; }),
           "the writer turns the RUNTIME kind on");
    expect(fake_cupti::snapshot().kinds.count(CUPTI_ACTIVITY_KIND_DRIVER) == 1, "and the DRIVER kind");
    fake_cupti::launch_kernels(100);
    expect(close_window_and_detach(), "the window closes, CUPTI detached");
    col::stop_collector();
    expect(kernels(dir) == "400", "400 kernels (got " + kernels(dir) + ")");
    expect(kernels_without_launch(dir) == "300",
           "the 300 before the fallback without a launch record (got " + kernels_without_launch(dir) + ")");
    expect(meta(dir, "collector.launch_records") == "kinds (fallback: per-API records not delivered)",
           "rank file says so: " + meta(dir, "collector.launch_records"));
  });
}

TEST_CASE("SHARDSCOPE_LAUNCH_RECORDS=kinds: a window from A > 0 takes the whole API kinds, nothing seeded",
          "[collector][lifecycle]") {
  scenario([&](const std::string& dir, Expect& expect) {
    setenv_for_record(dir, "2:4", nullptr);
    setenv("SHARDSCOPE_LAUNCH_RECORDS", "kinds", 1);
    expect(col::start_collector(), "the collector starts");
    expect(fake_cupti::snapshot().runtime_apis.empty() && fake_cupti::snapshot().driver_apis.empty(), "nothing seeded");
    fake_cupti::create_context();
    expect(col::set_capture(true), "the window opens");
    auto s = fake_cupti::snapshot();
    expect(s.kinds.count(CUPTI_ACTIVITY_KIND_RUNTIME) == 1 && s.kinds.count(CUPTI_ACTIVITY_KIND_DRIVER) == 1,
           "the whole API kinds in the window");
    fake_cupti::launch_kernels(50);
    expect(close_window_and_detach(), "the window closes, CUPTI detached");
    col::stop_collector();
    expect(kernels_without_launch(dir) == "0", "every kernel with its launch record");
    expect(meta(dir, "collector.launch_records") == "kinds", "rank file: launch_records kinds");
  });
}

TEST_CASE("a CUPTI that refuses per-function records: a window takes the whole API kinds, from A > 0 or from 0",
          "[collector][lifecycle]") {
  for (const char* steps : {"2:4", "0:4"}) {
    INFO("window " << steps);
    scenario([&](const std::string& dir, Expect& expect) {
      setenv_for_record(dir, steps, nullptr);
      fake_cupti::refuse_per_api_records();
      expect(col::start_collector(), "the collector starts");
      expect(fake_cupti::snapshot().runtime_apis.empty(), "nothing seeded");
      expect(col::set_capture(true), "the window is open");
      const auto s = fake_cupti::snapshot();
      expect(s.kinds.count(CUPTI_ACTIVITY_KIND_RUNTIME) == 1 && s.kinds.count(CUPTI_ACTIVITY_KIND_DRIVER) == 1,
             "the whole API kinds in the window");
      fake_cupti::launch_kernels(50);
      expect(close_window_and_detach(), "the window closes, CUPTI detached");
      col::stop_collector();
      expect(kernels_without_launch(dir) == "0", "every kernel with its launch record");
      expect(meta(dir, "collector.launch_records") == "kinds", "rank file: launch_records kinds");
    });
  }
}

TEST_CASE("trace kinds without launch records: nothing seeded, no fallback", "[collector][lifecycle]") {
  scenario([&](const std::string& dir, Expect& expect) {
    setenv_for_record(dir, "2:4", nullptr);
    setenv("SHARDSCOPE_TRACE_KINDS", "kernel", 1);
    expect(col::start_collector(), "the collector starts");
    expect(fake_cupti::snapshot().runtime_apis.empty() && fake_cupti::snapshot().driver_apis.empty(), "nothing seeded");
    fake_cupti::create_context();
    expect(col::set_capture(true), "the window opens");
    fake_cupti::launch_kernels(300);
    std::this_thread::sleep_for(std::chrono::milliseconds(1300));  // a commit of the writer
    expect(!fake_cupti::snapshot().kinds.count(CUPTI_ACTIVITY_KIND_RUNTIME), "no launch records asked for");
    expect(close_window_and_detach(), "the window closes, CUPTI detached");
    col::stop_collector();
    expect(kernels(dir) == "300", "the window's kernels");
    expect(kernels_without_launch(dir) == "300", "none with a launch record");
    expect(meta(dir, "collector.launch_records") == "(no row)", "no launch_records meta");
  });
}
