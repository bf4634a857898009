// Value types shared by the profile writer, the reader and everything that produces a profile.
// Enums are stored as integers in the profile; their labels are also written to the `enums`
// table so that SQL users can join on them (docs/profile-format.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ss {

// Every time in a profile is integer nanoseconds on the profile's single clock, counted from
// meta.time_origin_unix_ns (so that most values fit in 6 bytes on disk).
using TimeNs = std::int64_t;

enum class KernelCategory : std::uint8_t { Compute = 0, Collective = 1, Memcpy = 2, Memset = 3 };
enum class StreamKind : std::uint8_t { Unknown = 0, Compute = 1, Nccl = 2, Copy = 3 };
enum class RangeKind : std::uint8_t {
  Annotation = 0,     // user / NVTX range on a CPU thread
  Module = 1,         // nn.Module forward/backward range (fully-qualified name in module_id)
  Fsdp = 2,           // FSDP runtime range (FSDP::pre_forward (layers.3), FSDP::all_gather ...)
  CpuOp = 3,          // framework operator (aten::mm)
  Nccl = 4,           // NCCL API range (ncclAllGather ...)
  GpuAnnotation = 5,  // range drawn on a GPU stream (Kineto gpu_user_annotation)
};
enum class RangePhase : std::uint8_t { None = 0, Forward = 1, Backward = 2, Recompute = 3, Optimizer = 4 };
enum class MemoryCategory : std::uint8_t {
  Unknown = 0,
  ShardedParameter = 1,
  UnshardedParameter = 2,
  Gradient = 3,
  OptimizerState = 4,
  Activation = 5,
  AllGatherBuffer = 6,
  ReduceScatterBuffer = 7,
  Temporary = 8,
};
enum class CollectiveType : std::uint8_t {
  Unknown = 0,
  AllReduce = 1,
  AllGather = 2,
  ReduceScatter = 3,
  Broadcast = 4,
  Reduce = 5,
  AllToAll = 6,
  SendRecv = 7,
  Send = 8,
  Recv = 9,
  Gather = 10,
  Scatter = 11,
  Barrier = 12,
};
enum class OriginKind : std::uint8_t { Measured = 0, Imported = 1, Simulated = 2, Synthetic = 3 };

std::string_view to_string(KernelCategory v);
std::string_view to_string(StreamKind v);
std::string_view to_string(RangeKind v);
std::string_view to_string(RangePhase v);
std::string_view to_string(MemoryCategory v);
std::string_view to_string(CollectiveType v);
std::string_view to_string(OriginKind v);
std::optional<OriginKind> origin_kind_from_string(std::string_view s);
std::optional<RangePhase> range_phase_from_string(std::string_view s);
std::optional<MemoryCategory> memory_category_from_string(std::string_view s);
std::optional<CollectiveType> collective_type_from_string(std::string_view s);

// Counts of each enum, for loops over labels (enums table, summaries).
inline constexpr int kKernelCategoryCount = 4;
inline constexpr int kStreamKindCount = 4;
inline constexpr int kRangeKindCount = 6;
inline constexpr int kRangePhaseCount = 5;
inline constexpr int kMemoryCategoryCount = 9;
inline constexpr int kCollectiveTypeCount = 13;
inline constexpr int kOriginKindCount = 4;

// Rows as producers hand them to the writer. Ids are assigned by the writer and returned, so a
// producer can refer to a row (parent range, module, stream) before anything is flushed.
using RowId = std::int64_t;
inline constexpr RowId kNoRow = -1;  // stored as SQL NULL

struct Origin {
  OriginKind kind = OriginKind::Measured;
  std::string tool;            // program that produced the profile, e.g. "shardscope import"
  std::string tool_version;
  std::string source_format;   // "kineto-json", "nsys-sqlite", "cupti", "fsdp-sim", "synthetic"
  std::string source_files;    // newline-separated input paths (imports) or the recorded command
  std::string parameters_json; // simulation plan / cluster / model, generator seed, ... (JSON)
  std::string created_utc;     // ISO-8601; filled by the writer when empty
  std::string notes;
};

struct RankInfo {
  int rank = 0;
  std::string host;
  std::int64_t pid = 0;
  int device_index = -1;
  std::string gpu_name;
  std::int64_t gpu_memory_bytes = 0;
  int sm_count = 0;
  int compute_major = 0;
  int compute_minor = 0;
  TimeNs clock_offset_ns = 0;  // correction already applied to this rank's raw timestamps
  int world_size = 0;
};

struct StreamInfo {
  int rank = 0;
  int device = 0;
  std::int64_t native_id = 0;  // CUDA stream id as reported by CUPTI / the trace
  StreamKind kind = StreamKind::Unknown;
  std::string name;
};

struct ThreadInfo {
  int rank = 0;
  std::int64_t tid = 0;
  std::string name;
};

struct LaunchConfig {
  std::int32_t grid_x = 0, grid_y = 0, grid_z = 0;
  std::int32_t block_x = 0, block_y = 0, block_z = 0;
  std::int32_t shared_mem_bytes = 0;
  std::int32_t registers_per_thread = 0;
  bool operator==(const LaunchConfig&) const = default;
};

struct KernelRow {
  int rank = 0;
  RowId stream = kNoRow;  // streams.id
  TimeNs start = 0;
  TimeNs end = 0;
  std::uint32_t name = 0;  // strings.id
  std::int64_t correlation = 0;
  RowId launch_config = kNoRow;  // launch_configs.id (kernels only)
  KernelCategory category = KernelCategory::Compute;
  RowId module = kNoRow;  // innermost module range active at launch
  std::int64_t bytes = 0;  // memcpy / memset size; 0 for kernels
};

// The host API call that launched a kernel, copy or memset.
struct LaunchRow {
  RowId kernel = kNoRow;  // kernels.id
  int rank = 0;
  RowId thread = kNoRow;  // threads.id of the launching thread
  TimeNs start = 0;
  TimeNs end = 0;
  std::uint32_t name = 0;  // strings.id of the API call (cudaLaunchKernel ...), 0 = unknown
};

struct ProcessGroupRow {
  std::string name;         // PyTorch pg name ("0", "1", ...) or NCCL comm hash
  std::string description;  // "default_pg", "fsdp_shard", ...
  std::string ranks;        // JSON array of global ranks, e.g. "[0,1,2,3]"
  int size = 0;
  std::string backend;
};

struct CollectiveRow {
  int rank = 0;
  RowId kernel = kNoRow;  // kernels.id of the NCCL kernel, when known
  CollectiveType type = CollectiveType::Unknown;
  std::int64_t bytes = 0;  // bytes of the full (gathered / input) buffer on this rank
  std::uint32_t dtype = 0;  // strings.id, 0 = unknown
  RowId process_group = kNoRow;
  int group_size = 0;
  std::int64_t sequence = -1;  // per process group, per rank; equal across ranks for one collective
  TimeNs start = 0;
  TimeNs end = 0;
};

struct ModuleRow {
  RowId parent = kNoRow;
  std::string fqn;         // "layers.3.attention"; "" for the root model
  std::string class_name;  // "TransformerBlock"
  std::int64_t param_count = 0;
  std::int64_t param_bytes = 0;
  bool is_fsdp_unit = false;    // fully_shard was applied to this module
  RowId fsdp_unit = kNoRow;     // the unit whose parameters this module's belong to
  std::string reshard_policy;   // "true", "false", an integer k, or "" when unknown / not a unit
};

struct RangeRow {
  int rank = 0;
  RowId thread = kNoRow;  // threads.id for CPU ranges
  RowId stream = kNoRow;  // streams.id for GPU-side ranges
  TimeNs start = 0;
  TimeNs end = 0;
  std::uint32_t name = 0;
  RangeKind kind = RangeKind::Annotation;
  RangePhase phase = RangePhase::None;
  RowId module = kNoRow;
  RowId parent = kNoRow;  // enclosing range on the same lane (see range_nesting.h)
  int depth = 0;
};

struct MemoryEventRow {
  int rank = 0;
  TimeNs time = 0;
  std::int64_t address = 0;
  std::int64_t bytes = 0;  // > 0 allocation, < 0 free
  MemoryCategory category = MemoryCategory::Unknown;
  RowId module = kNoRow;
  RowId stream = kNoRow;
};

struct StepRow {
  int rank = 0;
  std::int64_t number = 0;
  TimeNs start = 0;
  TimeNs end = 0;
};

}  // namespace ss
