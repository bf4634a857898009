// shardscope record [-o run.ssdb] [--memory history|per-tensor|segments|off] [--no-modules]
//                   [--backward-ranges modules|units] [--steps A:B] [--keep-parts] -- CMD...
// Runs CMD with the collector injected and the Python hooks on PYTHONPATH, waits for it (Ctrl+C
// and SIGTERM are forwarded to its process group), merges the per-rank files into one profile on
// one clock, and exits with CMD's exit code.
#include <filesystem>
#include <iostream>

#include "app/cli/arg_parser.h"
#include "app/cli/command.h"
#include "profiler/collector/core/merge.h"
#include "profiler/collector/launcher/allocator_history.h"
#include "profiler/collector/launcher/child_process.h"
#include "profiler/collector/launcher/locate.h"
#include "profiler/collector/launcher/record_env.h"
#include "profiler/import/import.h"
#include "storage/errors.h"

namespace ss::cli {
namespace fs = std::filesystem;

namespace {

std::string join_command(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    if (!s.empty()) s += ' ';
    s += a.find_first_of(" \t'\"") == std::string::npos ? a : "'" + a + "'";
  }
  return s;
}

// Removes only files a previous recording left (our naming), never anything else in the folder.
void clear_parts_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw ProfileError(ProfileErrorKind::Io, dir.string() + ": cannot create the per-rank folder: " + ec.message());
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (collector::parse_rank_file_stem(e.path().filename().string())) fs::remove(e.path(), ec);
}

// CPU ranks (no CUDA, so no CUPTI collector) leave a torch.profiler trace, <stem>.kineto.json
// (profiler/python/shardscope/_cpu_trace.py). Each becomes that rank's file, <stem>.ssdb, through
// the Kineto importer: operators, gloo collectives, steps and memory by category; the merge then
// adds the sidecar's module facts. A trace that cannot be read (a rank killed while writing it)
// leaves the rank to its sidecar, with a warning.
void rank_files_from_cpu_traces(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    constexpr std::string_view kTrace = collector::kCpuTraceSuffix;
    if (!name.ends_with(kTrace) || !collector::parse_rank_file_stem(name)) continue;
    const fs::path rank_file = dir / (name.substr(0, name.size() - kTrace.size()) + std::string(collector::kRankFileSuffix));
    if (fs::exists(rank_file)) continue;  // the CUPTI collector recorded this rank
    try {
      import::ImportOptions options;
      options.show_progress = false;
      import::import_files({e.path().string()}, rank_file.string(), options);
    } catch (const std::exception& err) {
      std::cerr << "[shardscope] warning: " << err.what() << "; using that rank's module ranges only\n";
    }
  }
}

}  // namespace

int cmd_record(const std::vector<std::string>& args) {
  ArgParser p("record",
              "Run a training command with the ShardScope collector: kernels, copies, NCCL collectives (type, bytes,\n"
              "communicator, sequence), module ranges (forward / backward / recompute), steps and GPU allocations\n"
              "from every rank, merged into one profile on one clock. CMD's exit code is passed through.");
  p.option("output", "FILE", "profile to write", "run.ssdb", 'o')
      .option("memory", "MODE",
              "history: the job's own allocator, one event per tensor from its history\n"
              "(torch.cuda.memory._record_memory_history); per-tensor: switches the job to PyTorch's cudaMallocAsync\n"
              "backend, one CUPTI event per tensor (changes the job's memory and speed, docs/gpu-runs.md);\n"
              "segments: the native allocator's cudaMalloc segments only; off: no memory events",
              "history", 0, {"history", "per-tensor", "segments", "off"})
      .flag("no-modules", "no Python module hooks (kernels and collectives only)")
      .option("backward-ranges", "SCOPE",
              "modules: a backward range for every module call, as in forward; units: for FSDP units only (what\n"
              "simulate and plan read; forward ranges stay per module, a model without FSDP units keeps them all).\n"
              "Each backward range is a Python gradient hook, on CUDA ranks called from autograd's device thread:\n"
              "units calls one per FSDP unit instead of one per module (docs/collector.md)",
              "modules", 0, {"modules", "units"})
      .option("steps", "A:B",
              "profile only steps A to B-1 (optimizer steps, from 0; 'A:' to the end): before and after, the job runs\n"
              "unprofiled and only its step wall times are kept (the profile's unobserved_steps, which simulate and plan\n"
              "calibrate to). On CUDA ranks the collector traces kernels, copies and ranges inside the window only.\n"
              "Default: 0:10, the first ten steps, then the job's steps are timed only: a traced step costs a launch-bound\n"
              "GPU job ~40 % (the steps after the window run as without record), and torch.profiler's trace on CPU ranks\n"
              "grows in the job's memory each step. '0:' profiles every step")
      .flag("keep-parts", "keep the per-rank files (<output>.parts/) after merging")
      .option("label", "TEXT", "what the recording is (device, backend, model), stored as the profile's origin notes")
      .allow_passthrough("CMD...", "the command to record, e.g. torchrun --nproc_per_node=8 train.py")
      .epilog("Example: shardscope record -o llama.ssdb -- torchrun --nproc_per_node=8 train.py\n"
              "Environment it sets: SHARDSCOPE_OUTPUT_DIR, CUDA_INJECTION64_PATH, NVTX_INJECTION64_PATH, PYTHONPATH,\n"
              "PYTORCH_CUDA_ALLOC_CONF (per-tensor); see docs/collector.md.");
  if (!p.parse(args)) return kExitOk;
  const auto& cmd = p.passthrough();
  if (cmd.empty()) throw UsageError("missing the command to record after '--'");

  record::RecordSettings settings;
  if (p.has("steps")) {
    settings.steps = record::parse_step_window(p.get("steps"));
    if (!settings.steps)
      throw UsageError("--steps: expected A:B with 0 <= A < B (steps A to B-1), A: or :B, not '" + p.get("steps") + "'");
  }
  const fs::path output = fs::absolute(p.get("output"));
  const fs::path parts = output.string() + ".parts";
  clear_parts_dir(parts);

  settings.output_dir = parts.string();
  const std::string memory = p.get("memory");
  settings.memory = memory == "off"          ? record::MemoryMode::Off
                    : memory == "segments"   ? record::MemoryMode::Segments
                    : memory == "per-tensor" ? record::MemoryMode::PerTensor
                                             : record::MemoryMode::History;
  settings.modules = !p.flag_set("no-modules");
  settings.unit_backward_ranges = p.get("backward-ranges") == "units";
  settings.collector_library = record::locate_collector_library();
  settings.python_dir = record::locate_python_dir();
  if (settings.collector_library.empty())
    std::cerr << "[shardscope] the CUPTI collector library is not available (built without CUPTI, or set "
                 "SHARDSCOPE_COLLECTOR_LIB): recording Python-side module ranges and steps only, no GPU activity\n";
  if (settings.python_dir.empty())
    std::cerr << "[shardscope] the shardscope Python package was not found (set SHARDSCOPE_PYTHON_DIR): no module "
                 "ranges, parameter sizes or steps\n";

  auto env = record::build_record_env(record::current_environment(), settings);
  for (const auto& w : env.warnings) std::cerr << "[shardscope] warning: " << w << "\n";

  const record::ChildResult child = record::run_child(cmd, env.env);
  if (!child.started) {
    std::cerr << "shardscope record: " << child.error << "\n";
    std::error_code ec;
    fs::remove_all(parts, ec);
    return child.exit_code;
  }
  if (child.signal) std::cerr << "[shardscope] the command ended with signal " << child.signal << "; merging what it recorded\n";

  try {
    collector::MergeOptions mo;
    mo.output = output.string();
    mo.command = join_command(cmd);
    if (p.has("label")) mo.notes = p.get("label");
    for (const auto& w : record::attach_allocator_history(parts.string()).warnings) std::cerr << "[shardscope] warning: " << w << "\n";
    rank_files_from_cpu_traces(parts);
    auto inputs = collector::find_rank_inputs(parts.string());
    auto result = collector::merge_rank_files(inputs, mo);
    for (const auto& w : result.warnings) std::cerr << "[shardscope] " << w << "\n";
    std::cerr << "[shardscope] wrote " << output.string() << ": " << result.ranks << " rank(s), " << result.kernels
              << " kernels, " << result.ranges << " ranges\n";
    if (!p.flag_set("keep-parts")) {
      std::error_code ec;
      fs::remove_all(parts, ec);
    }
  } catch (const std::exception& e) {
    std::cerr << "shardscope record: merge failed: " << e.what() << " (per-rank files kept in " << parts.string() << ")\n";
    return child.exit_code != 0 ? child.exit_code : kExitBadInput;
  }
  return child.exit_code;
}

}  // namespace ss::cli
