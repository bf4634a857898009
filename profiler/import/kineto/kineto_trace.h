// The parsed form of one Kineto (PyTorch profiler) Chrome-trace JSON file: its metadata and one
// compact record per event, in file order. Strings are views into the parser's string buffer
// and stay valid while the KinetoParser that produced them is alive.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/types.h"

namespace ss::import::kineto {

// Event categories, matched case-insensitively so legacy traces (Kernel, Memcpy, Runtime,
// Operator) and current ones (kernel, gpu_memcpy, cuda_runtime, cpu_op) map alike.
enum class Cat : std::uint8_t {
  Other,
  Missing,  // no "cat" field
  Kernel,
  Memcpy,
  Memset,
  Runtime,  // cuda_runtime / cuda_driver: the launch side of a correlation id
  CpuOp,
  UserAnnotation,
  GpuUserAnnotation,
  PythonFunction,
  CpuInstant,
  Flow,  // ac2g / fwdbwd arrows
};

Cat classify_category(std::string_view cat);

inline constexpr std::int64_t kAbsent = INT64_MIN;

struct CommArgs {  // PyTorch's collective metadata (record_param_comms, copied onto NCCL kernels)
  std::string_view collective_name, dtype, pg_name, pg_desc, pg_ranks;
  std::int64_t in_nelems = kAbsent, out_nelems = kAbsent, group_size = kAbsent;
  // From "Input Dims" / "Input type" of a `nccl:*` / `gloo:*` annotation (older traces' only size
  // source) or of a `c10d::*` op (CPU traces: the first two tensors are output and input).
  std::int64_t input_numel = kAbsent, input_numel2 = kAbsent;
  std::string_view input_type;
};

struct MemArgs {  // [memory] instant events
  std::int64_t addr = 0, bytes = 0, device_type = kAbsent, device_id = kAbsent;
  std::int64_t total_allocated = kAbsent;  // the device's allocated bytes after this event
};

struct RawEvent {
  TimeNs ts = kAbsent;   // ns from the file's base time (exact conversion of the us text)
  TimeNs dur = kAbsent;  // ns
  std::int64_t pid = kAbsent, tid = kAbsent;
  std::string_view name;
  std::string_view cat_text;
  std::string_view arg_name;  // args.name (thread_name / process_name metadata)
  std::int64_t correlation = kAbsent, external_id = kAbsent;
  std::int64_t device = kAbsent, stream = kAbsent, bytes = kAbsent;
  std::int32_t comm = -1;    // index into KinetoTrace::comms
  std::int32_t launch = -1;  // index into KinetoTrace::launches
  std::int32_t mem = -1;     // index into KinetoTrace::mems
  std::uint64_t offset = 0;  // byte offset of the event in the (inflated) JSON, for messages
  Cat cat = Cat::Missing;
  char ph = 0;
  bool fwd_thread_arg = false;  // "Fwd thread id": the op runs in the autograd engine (backward)
  bool has_name = false;
};

struct ProcessGroupConfig {
  std::string name, desc, backend, ranks;  // ranks as "[0,1]"
  std::int64_t size = 0;
};

struct DeviceProps {
  std::int64_t id = -1;
  std::string name;
  std::int64_t total_global_mem = 0, num_sms = 0, compute_major = 0, compute_minor = 0;
};

struct KinetoTrace {
  std::optional<int> rank;
  int world_size = 0;
  std::string backend;
  std::vector<ProcessGroupConfig> process_groups;
  // (thread id, process group name): the gloo worker threads each group started, as ShardScope's
  // CPU recorder noted them ("shardscope_pg_threads"); gloo's own events name no group.
  std::vector<std::pair<std::int64_t, std::string>> pg_threads;
  std::vector<DeviceProps> devices;
  TimeNs base_ns = 0;  // baseTimeNanoseconds, 0 when absent (ts then holds unix us)
  std::string display_time_unit;
  std::vector<RawEvent> events;
  std::vector<CommArgs> comms;
  std::vector<LaunchConfig> launches;
  std::vector<MemArgs> mems;
  std::vector<std::pair<std::int64_t, std::string>> thread_names;  // (tid, name) from "M" events
  std::map<std::string, std::int64_t, std::less<>> skipped;  // reason -> events not imported
  std::vector<std::unique_ptr<std::string>> owned_strings;  // text some views point into
};

}  // namespace ss::import::kineto
