// Which rank a process is, from the launcher's environment, and the per-rank file names derived
// from it. torchrun sets RANK / LOCAL_RANK / TORCHELASTIC_RESTART_COUNT; srun sets SLURM_PROCID /
// SLURM_LOCALID; mpirun sets OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_LOCAL_RANK. The pid is always
// part of the name because compile / autotune subprocesses inherit the environment and may
// initialise CUDA too (each gets its own file; the merge drops empty ones).
// The Python package builds the same stem (shardscope/_rank.py); keep the two in step.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace ss::collector {

struct RankIdentity {
  int rank = -1;        // -1 when no launcher variable says
  int local_rank = -1;
  int world_size = 0;
  int restart = 0;      // TORCHELASTIC_RESTART_COUNT
  std::int64_t pid = 0;
};

using EnvLookup = std::function<std::optional<std::string>(std::string_view)>;
EnvLookup process_env();  // getenv

RankIdentity rank_identity_from_env(const EnvLookup& env, std::int64_t pid);

// "shardscope_rank3_lrank1_pid4242" (+ "_restart2" after an elastic restart); an unknown rank or
// local rank is written as "x": "shardscope_rankx_lrankx_pid77".
std::string rank_file_stem(const RankIdentity& id);
inline constexpr std::string_view kRankFileSuffix = ".ssdb";         // written by the collector
inline constexpr std::string_view kSidecarSuffix = ".modules.tsv";    // written by the Python package
inline constexpr std::string_view kCpuTraceSuffix = ".kineto.json";   // torch.profiler trace of a CPU rank

// Parses a stem (or a file name with either suffix); nullopt when it is not one of ours.
std::optional<RankIdentity> parse_rank_file_stem(std::string_view name);

// Environment variables shared by the launcher, the collector and the Python package.
inline constexpr const char* kEnvOutputDir = "SHARDSCOPE_OUTPUT_DIR";
inline constexpr const char* kEnvMemoryMode = "SHARDSCOPE_MEMORY";        // history | per-tensor | segments | off
inline constexpr const char* kEnvModules = "SHARDSCOPE_MODULES";          // "0" = no module hooks
inline constexpr const char* kEnvCollector = "SHARDSCOPE_COLLECTOR";      // "1" when the CUPTI collector is injected
inline constexpr const char* kEnvVerbose = "SHARDSCOPE_VERBOSE";
inline constexpr const char* kEnvSteps = "SHARDSCOPE_STEPS";              // record --steps A:B (the capture window)
// Which trace kinds the collector switches on (kernel,memcpy,memset,marker,api,overhead; "none"; "all"; unset = all but overhead):
// for measuring what each costs the job (bench/gpu), not a user setting.
inline constexpr const char* kEnvTraceKinds = "SHARDSCOPE_TRACE_KINDS";
// "0": keep CUPTI attached after a capture window closes (default: detach, cupti/collector.cpp).
inline constexpr const char* kEnvCuptiDetach = "SHARDSCOPE_CUPTI_DETACH";
// "kinds": a window from A > 0 takes launch records through the whole RUNTIME / DRIVER kinds (a
// measurement switch: the per-API records are the default).
inline constexpr const char* kEnvLaunchRecords = "SHARDSCOPE_LAUNCH_RECORDS";
// The pid of a rank, set by the Python package in the rank itself (a torchrun worker when it
// imports torch; any process when it calls init_process_group) and inherited by every process it
// starts: a DataLoader worker under the "spawn" start method, a helper. Such a process imports
// torch, inherits RANK and may initialise CUDA, but is no rank of the job: it records nothing
// (before, each was merged as one more rank, "rank 0 appears twice; renumbered").
inline constexpr const char* kEnvRankPid = "SHARDSCOPE_RANK_PID";

// True when kEnvRankPid names another process than `pid`: this one was started by a recording rank.
bool started_by_a_rank(const EnvLookup& env, std::int64_t pid);

}  // namespace ss::collector
