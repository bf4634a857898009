// Joins the raw activity streams into profile rows: kernels / copies / allocations get the
// innermost module range open on their launching thread (correlation id -> API record -> thread
// and time -> ModuleLanes), NCCL kernels get the NCCL API calls issued on their launching thread
// since the previous NCCL launch (one call, or every call of an ncclGroupStart/End group) with the
// sizes from the NVTX payload and a sequence number per communicator, NVTX ranges become range
// rows, and optimizer-step ranges close iterations.
//
// CUPTI hands buffers back per thread and per kind in no global order, so an item is resolved only
// once it is `settle` older than the newest time the caller has seen (drain), or at the end
// (drain_all). Everything here is single-threaded: the collector calls it from its writer thread.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "profiler/collector/core/module_lanes.h"
#include "profiler/collector/core/nccl_payload.h"
#include "profiler/collector/core/records.h"

namespace ss::collector {

struct ResolvedCollective {
  CollectiveType type = CollectiveType::Unknown;
  std::int64_t bytes = 0;  // full buffer on this rank (full_buffer_bytes)
  std::string dtype;
  bool has_comm = false;
  std::uint64_t comm = 0;
  int group_size = 0;
  std::int64_t sequence = -1;
  TimeNs start = 0;
  TimeNs end = 0;
};

// The host call that issued a kernel, copy or memset (its launch record).
struct ResolvedLaunch {
  std::uint32_t tid = 0;
  TimeNs start = 0;
  TimeNs end = 0;
  std::string_view name;  // ApiRecord::name
};

struct ResolvedKernel {
  KernelCategory category = KernelCategory::Compute;
  TimeNs start = 0;
  TimeNs end = 0;
  std::uint32_t device = 0;
  std::uint32_t stream = 0;
  std::uint32_t correlation = 0;
  std::string name;
  LaunchConfig config;
  std::int64_t bytes = 0;
  std::optional<std::string> module;  // fqn
  std::vector<ResolvedCollective> collectives;  // NCCL kernels
  std::optional<ResolvedLaunch> launch;         // none without a launch record
};

struct ResolvedRange {
  std::uint32_t tid = 0;
  TimeNs start = 0;
  TimeNs end = 0;
  std::string name;
  RangeKind kind = RangeKind::Annotation;
  RangePhase phase = RangePhase::None;
  std::optional<std::string> module;
};

struct ResolvedMemory {
  TimeNs time = 0;
  std::uint64_t address = 0;
  std::int64_t bytes = 0;  // > 0 allocation, < 0 release
  std::uint32_t device = 0;
  std::int64_t stream = -1;
  std::optional<std::string> module;
};

struct ResolvedStep {
  std::int64_t number = 0;
  TimeNs start = 0;
  TimeNs end = 0;
};

class AttributionSink {
 public:
  virtual ~AttributionSink() = default;
  virtual void on_kernel(const ResolvedKernel& k) = 0;
  // Collectives whose kernel never arrived (dropped), timed by their API call.
  virtual void on_collective(const ResolvedCollective& c) = 0;
  virtual void on_range(const ResolvedRange& r) = 0;
  virtual void on_memory(const ResolvedMemory& m) = 0;
  virtual void on_step(const ResolvedStep& s) = 0;
};

struct AttributorStats {
  std::int64_t kernels_without_launch = 0;   // no API record for the correlation id
  std::int64_t unpaired_marker_ends = 0;      // END without START
  std::int64_t unclosed_ranges = 0;           // START without END at drain_all
  std::int64_t non_device_memory = 0;         // pinned / pageable records skipped
  std::int64_t nccl_calls_without_kernel = 0;
};

class Attributor {
 public:
  explicit Attributor(TimeNs settle_ns = 2'000'000'000) : settle_(settle_ns) {}

  void add(const ApiRecord& r);
  void add(KernelRecord r);
  void add(const CopyRecord& r);
  void add(const MarkerRecord& r);
  void add(MarkerPayload p);
  void add(const MemoryRecord& r);

  // Resolves what is older than now - settle and hands it to the sink.
  void drain(TimeNs now, AttributionSink& sink);
  // Resolves everything (end of recording); open ranges are closed at the newest time seen.
  void drain_all(AttributionSink& sink);

  const AttributorStats& stats() const { return stats_; }
  std::size_t pending() const { return kernels_.size() + copies_.size() + memory_.size(); }

 private:
  struct OpenMarker {
    std::uint32_t tid = 0;
    TimeNs start = 0;
    std::string name;
    std::string domain;
  };
  struct NcclPending {
    std::uint32_t tid = 0;
    TimeNs start = 0;
    TimeNs end = 0;
    std::string function;
    std::uint64_t marker_id = 0;
    bool consumed = false;
  };

  void resolve(TimeNs cutoff, bool all, AttributionSink& sink);
  void complete_marker(std::uint64_t id, const OpenMarker& m, TimeNs end);
  std::optional<std::string> module_at(std::uint32_t correlation, const ApiRecord** api_out) const;
  std::vector<ResolvedCollective> take_nccl_calls(const ApiRecord& api, const std::string& kernel_dtype,
                                                  CollectiveType kernel_type, TimeNs start, TimeNs end);
  ResolvedCollective collective_from_call(const NcclPending& call, const std::string& dtype, TimeNs start, TimeNs end);
  void note_time(TimeNs t) { newest_ = std::max(newest_, t); }

  TimeNs settle_;
  TimeNs newest_ = 0;
  AttributorStats stats_;
  std::unordered_map<std::uint32_t, ApiRecord> api_;
  std::deque<KernelRecord> kernels_;
  std::deque<CopyRecord> copies_;
  std::deque<MemoryRecord> memory_;
  std::unordered_map<std::uint64_t, OpenMarker> open_markers_;
  std::unordered_map<std::uint64_t, TimeNs> early_ends_;
  std::unordered_map<std::uint64_t, MarkerPayload> payloads_;
  std::vector<ResolvedRange> done_ranges_;
  std::vector<NcclPending> nccl_calls_;  // by completion; consumed ones are dropped at drain
  std::map<std::uint64_t, int> comm_sizes_;
  CollectiveSequencer sequencer_;
  ModuleLanes lanes_;
  std::unordered_map<std::uint64_t, std::optional<std::string>> live_allocations_;
  // Steps: iteration n runs from the end of optimizer step n-1 (or the first module range) to the
  // end of optimizer step n.
  std::optional<TimeNs> first_module_start_;
  std::optional<TimeNs> last_step_end_;
  std::vector<ResolvedStep> done_steps_;
};

}  // namespace ss::collector
