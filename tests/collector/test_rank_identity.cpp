#include <catch2/catch.hpp>

#include <map>

#include "profiler/collector/core/demangle.h"
#include "profiler/collector/core/rank_identity.h"
#include "profiler/collector/core/step_window.h"

using namespace ss::collector;

namespace {
EnvLookup env_of(std::map<std::string, std::string> m) {
  return [m](std::string_view k) -> std::optional<std::string> {
    auto it = m.find(std::string(k));
    if (it == m.end()) return std::nullopt;
    return it->second;
  };
}
}  // namespace

TEST_CASE("torchrun variables name the rank file") {
  auto id = rank_identity_from_env(env_of({{"RANK", "3"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "8"}}), 4242);
  CHECK(id.rank == 3);
  CHECK(id.local_rank == 1);
  CHECK(id.world_size == 8);
  CHECK(rank_file_stem(id) == "shardscope_rank3_lrank1_pid4242");
}

TEST_CASE("a process started by a recording rank is told apart by the rank's pid it inherited") {
  CHECK_FALSE(started_by_a_rank(env_of({{"RANK", "0"}}), 77));                        // torchrun's worker, unmarked yet
  CHECK_FALSE(started_by_a_rank(env_of({{"SHARDSCOPE_RANK_PID", "77"}}), 77));          // the rank itself
  CHECK(started_by_a_rank(env_of({{"SHARDSCOPE_RANK_PID", "77"}, {"RANK", "0"}}), 78));  // its DataLoader worker
  CHECK_FALSE(started_by_a_rank(env_of({{"SHARDSCOPE_RANK_PID", ""}}), 78));
}

TEST_CASE("srun variables are used when torchrun's are absent; restarts are part of the name") {
  auto id = rank_identity_from_env(
      env_of({{"SLURM_PROCID", "12"}, {"SLURM_LOCALID", "4"}, {"TORCHELASTIC_RESTART_COUNT", "2"}}), 7);
  CHECK(rank_file_stem(id) == "shardscope_rank12_lrank4_pid7_restart2");
  auto back = parse_rank_file_stem(rank_file_stem(id) + ".ssdb");
  REQUIRE(back);
  CHECK(back->rank == 12);
  CHECK(back->local_rank == 4);
  CHECK(back->pid == 7);
  CHECK(back->restart == 2);
}

TEST_CASE("no launcher variables: unknown rank written as x; malformed values ignored") {
  auto id = rank_identity_from_env(env_of({{"RANK", "two"}}), 99);
  CHECK(id.rank == -1);
  CHECK(rank_file_stem(id) == "shardscope_rankx_lrankx_pid99");
  auto back = parse_rank_file_stem("shardscope_rankx_lrankx_pid99.modules.tsv");
  REQUIRE(back);
  CHECK(back->rank == -1);
  CHECK(back->pid == 99);
}

TEST_CASE("names that are not ours are rejected") {
  CHECK_FALSE(parse_rank_file_stem("run.ssdb"));
  CHECK_FALSE(parse_rank_file_stem("shardscope_rank1_pid3.ssdb"));
  CHECK_FALSE(parse_rank_file_stem("shardscope_rank1_lrank0_pidabc.ssdb"));
  CHECK_FALSE(parse_rank_file_stem("shardscope_rank1_lrank0_pid"));
}

TEST_CASE("kernel names are demangled; plain names pass through") {
  CHECK(demangle("_Z6kernelv") == "kernel()");
  CHECK(demangle("_Z31ncclDevKernel_AllGather_RING_LL24ncclDevKernelArgsStorageILm4096EE") ==
        "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  CHECK(demangle("ampere_sgemm_128x64_tn") == "ampere_sgemm_128x64_tn");
  CHECK(demangle("_Znot a name") == "_Znot a name");
  DemangleCache cache;
  CHECK(cache("_Z6kernelv") == "kernel()");
  CHECK(&cache("_Z6kernelv") == &cache("_Z6kernelv"));
}

TEST_CASE("the capture window's first step, as the Python side reads SHARDSCOPE_STEPS") {
  CHECK(first_captured_step(nullptr) == 0);
  CHECK(first_captured_step("") == 0);
  CHECK(first_captured_step("10:20") == 10);
  CHECK(first_captured_step("7:") == 7);
  CHECK(first_captured_step(":5") == 0);
  // Malformed: every step is profiled (_window.from_env ignores it), so the collector traces from the start.
  CHECK(first_captured_step("10") == 0);
  CHECK(first_captured_step("10:10") == 0);
  CHECK(first_captured_step("10:4") == 0);
  CHECK(first_captured_step("-3:4") == 0);
  CHECK(first_captured_step("a:4") == 0);
  CHECK(first_captured_step("3:4x") == 0);
}

TEST_CASE("SHARDSCOPE_TRACE_KINDS picks what the window switches on", "[collector][window]") {
  for (const char* g : {"kernel", "memcpy", "api"}) {
    CHECK(trace_group_on("all", g));
    CHECK(trace_group_on("", g));
    CHECK_FALSE(trace_group_on("none", g));
  }
  CHECK_FALSE(trace_group_on("", "overhead"));  // CUPTI's overhead records: opt-in
  CHECK(trace_group_on("all", "overhead"));
  CHECK(trace_group_on("kernel,overhead", "overhead"));
  CHECK(trace_group_on("kernel,api", "kernel"));
  CHECK(trace_group_on("kernel,api", "api"));
  CHECK_FALSE(trace_group_on("kernel,api", "memcpy"));
  CHECK_FALSE(trace_group_on("kernels", "kernel"));  // whole names only
  CHECK_FALSE(trace_group_on("kernel", "kern"));
}
