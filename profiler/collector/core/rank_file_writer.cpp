#include "profiler/collector/core/rank_file_writer.h"

#include <cstdio>

namespace ss::collector {
namespace {

Origin collector_origin(const std::string& command) {
  Origin o;
  o.kind = OriginKind::Measured;
  o.tool = "shardscope collector";
  o.tool_version = "0.1.0";
  o.source_format = "cupti";
  o.source_files = command;
  return o;
}

WriterOptions streaming_options() {
  WriterOptions w;
  w.atomic_rename = false;
  return w;
}

}  // namespace

RankFileWriter::RankFileWriter(const std::string& path, const RankInfo& rank, TimeNs origin_unix_ns,
                               const std::string& command)
    : writer_(path, collector_origin(command), streaming_options()), rank_(rank), origin_(origin_unix_ns) {
  writer_.set_time_origin(origin_unix_ns);
  writer_.add_rank(rank_);
  writer_.commit();
}

RowId RankFileWriter::stream(std::uint32_t device, std::uint32_t native, StreamKind kind) {
  auto key = std::make_pair(device, native);
  if (auto it = streams_.find(key); it != streams_.end()) return it->second;
  StreamInfo s;
  s.rank = rank_.rank;
  s.device = static_cast<int>(device);
  s.native_id = native;
  s.kind = kind;
  s.name = (kind == StreamKind::Nccl ? "NCCL stream " : "stream ") + std::to_string(native);
  return streams_[key] = writer_.add_stream(s);
}

RowId RankFileWriter::thread(std::uint32_t tid) {
  if (auto it = threads_.find(tid); it != threads_.end()) return it->second;
  return threads_[tid] = writer_.add_thread({rank_.rank, tid, "thread " + std::to_string(tid)});
}

RowId RankFileWriter::module(const std::string& fqn) {
  if (auto it = modules_.find(fqn); it != modules_.end()) return it->second;
  ModuleRow m;
  m.fqn = fqn;
  if (!fqn.empty()) {
    auto dot = fqn.rfind('.');
    m.parent = module(dot == std::string::npos ? std::string() : fqn.substr(0, dot));
  }
  return modules_[fqn] = writer_.add_module(m);
}

RowId RankFileWriter::process_group(const ResolvedCollective& c) {
  auto key = std::make_pair(c.has_comm, c.comm);
  if (auto it = groups_.find(key); it != groups_.end()) return it->second;
  ProcessGroupRow g;
  if (c.has_comm) {
    char hex[32];
    std::snprintf(hex, sizeof hex, "nccl:%016llx", static_cast<unsigned long long>(c.comm));
    g.name = hex;
  } else {
    g.name = "nccl:unknown";
  }
  g.size = c.group_size;
  g.backend = "nccl";
  return groups_[key] = writer_.add_process_group(g);
}

void RankFileWriter::write_collective(const ResolvedCollective& c, RowId kernel) {
  CollectiveRow row;
  row.rank = rank_.rank;
  row.kernel = kernel;
  row.type = c.type;
  row.bytes = c.bytes;
  row.dtype = c.dtype.empty() ? 0 : writer_.intern(c.dtype);
  row.process_group = (c.has_comm || c.sequence >= 0) ? process_group(c) : kNoRow;
  row.group_size = c.group_size;
  row.sequence = c.sequence;
  row.start = rel(c.start);
  row.end = rel(c.end);
  writer_.add_collective(row);
  ++rows_;
}

void RankFileWriter::on_kernel(const ResolvedKernel& k) {
  if (!device_from_kernel_)
    if (auto it = devices_.find(k.device); it != devices_.end()) {
      device_from_kernel_ = true;
      if (rank_.device_index != static_cast<int>(k.device)) apply_device(it->second);
    }
  KernelRow row;
  row.rank = rank_.rank;
  const StreamKind kind = k.category == KernelCategory::Collective ? StreamKind::Nccl
                          : k.category == KernelCategory::Compute  ? StreamKind::Compute
                                                                   : StreamKind::Copy;
  row.stream = stream(k.device, k.stream, kind);
  row.start = rel(k.start);
  row.end = rel(std::max(k.end, k.start));
  row.name = writer_.intern(demangle_(k.name));
  row.correlation = k.correlation;
  if (k.category == KernelCategory::Compute || k.category == KernelCategory::Collective)
    row.launch_config = writer_.launch_config(k.config);
  row.category = k.category;
  row.module = k.module ? module(*k.module) : kNoRow;
  row.bytes = k.bytes;
  const RowId id = writer_.add_kernel(row);
  ++rows_;
  for (const auto& c : k.collectives) write_collective(c, id);
  if (k.launch) {
    LaunchRow l;
    l.kernel = id;
    l.rank = rank_.rank;
    l.thread = thread(k.launch->tid);
    l.start = rel(k.launch->start);
    l.end = rel(k.launch->end);
    l.name = k.launch->name.empty() ? 0 : writer_.intern(k.launch->name);
    writer_.add_launch(l);
  }
}

void RankFileWriter::on_collective(const ResolvedCollective& c) { write_collective(c, kNoRow); }

void RankFileWriter::on_range(const ResolvedRange& r) {
  RangeRow row;
  row.rank = rank_.rank;
  row.thread = thread(r.tid);
  row.start = rel(r.start);
  row.end = rel(r.end);
  row.name = writer_.intern(r.name);
  row.kind = r.kind;
  row.phase = r.phase;
  row.module = r.module ? module(*r.module) : kNoRow;
  writer_.add_range(row);
  ++rows_;
}

void RankFileWriter::on_memory(const ResolvedMemory& m) {
  MemoryEventRow row;
  row.rank = rank_.rank;
  row.time = rel(m.time);
  row.address = static_cast<std::int64_t>(m.address);
  row.bytes = m.bytes;
  row.module = m.module ? module(*m.module) : kNoRow;
  row.stream = m.stream >= 0 ? stream(m.device, static_cast<std::uint32_t>(m.stream), StreamKind::Compute) : kNoRow;
  writer_.add_memory_event(row);
  ++rows_;
}

void RankFileWriter::on_step(const ResolvedStep& s) {
  writer_.add_step({rank_.rank, s.number, rel(s.start), rel(s.end)});
  ++rows_;
}

void RankFileWriter::add_device(const DeviceRecord& d) {
  const bool first = devices_.empty();
  devices_[d.id] = d;
  if (first && !device_from_kernel_) apply_device(d);
}

void RankFileWriter::apply_device(const DeviceRecord& d) {
  rank_.device_index = static_cast<int>(d.id);
  rank_.gpu_name = d.name;
  rank_.gpu_memory_bytes = static_cast<std::int64_t>(d.memory_bytes);
  rank_.sm_count = d.sm_count;
  rank_.compute_major = d.compute_major;
  rank_.compute_minor = d.compute_minor;
  writer_.add_rank(rank_);
}

void RankFileWriter::add_skipped(const std::string& reason, std::int64_t count) {
  if (count > 0) writer_.add_skipped(rank_.rank, reason, count);
}

}  // namespace ss::collector
