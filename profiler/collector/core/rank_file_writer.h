// The per-rank profile the collector writes while the job runs: an AttributionSink over
// ProfileWriter. Times are kept relative to the rank's own origin (meta.time_origin_unix_ns =
// the collector's start on CLOCK_REALTIME); the merge moves every rank onto one clock.
// Modules appear here by fully-qualified name only (the Python sidecar adds class and sizes at
// merge time); range nesting is computed at merge time too.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include "profiler/collector/core/attributor.h"
#include "profiler/collector/core/demangle.h"
#include "storage/profile_writer.h"

namespace ss::collector {

class RankFileWriter : public AttributionSink {
 public:
  // atomic_rename=false: every commit() leaves a readable file (a SIGKILLed rank keeps its data).
  RankFileWriter(const std::string& path, const RankInfo& rank, TimeNs origin_unix_ns, const std::string& command);

  void on_kernel(const ResolvedKernel& k) override;
  void on_collective(const ResolvedCollective& c) override;
  void on_range(const ResolvedRange& r) override;
  void on_memory(const ResolvedMemory& m) override;
  void on_step(const ResolvedStep& s) override;

  // Devices CUPTI reports (all visible ones); the rank's GPU fields come from the one its first
  // kernel runs on (or the first reported, until a kernel arrives).
  void add_device(const DeviceRecord& d);
  void set_meta(const std::string& key, const std::string& value) { writer_.set_meta(key, value); }
  void add_skipped(const std::string& reason, std::int64_t count);
  void commit() { writer_.commit(); }
  void finish() { writer_.finish(); }
  std::int64_t rows() const { return rows_; }

 private:
  TimeNs rel(TimeNs t) const { return t - origin_; }
  RowId stream(std::uint32_t device, std::uint32_t native, StreamKind kind);
  RowId thread(std::uint32_t tid);
  RowId module(const std::string& fqn);
  RowId process_group(const ResolvedCollective& c);
  void write_collective(const ResolvedCollective& c, RowId kernel);

  ProfileWriter writer_;
  RankInfo rank_;
  TimeNs origin_;
  std::int64_t rows_ = 0;
  std::map<std::pair<std::uint32_t, std::uint32_t>, RowId> streams_;
  std::unordered_map<std::uint32_t, RowId> threads_;
  std::unordered_map<std::string, RowId> modules_;
  std::map<std::pair<bool, std::uint64_t>, RowId> groups_;
  DemangleCache demangle_;
  std::map<std::uint32_t, DeviceRecord> devices_;
  bool device_from_kernel_ = false;
  void apply_device(const DeviceRecord& d);
};

}  // namespace ss::collector
