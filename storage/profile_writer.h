// Writes a profile: schema creation, interned strings, prepared statements batched in large
// transactions. By default the file is built under a temporary name and renamed into place by
// finish(), so an error or a crash never leaves a half-written profile at the target path.
// Optionally (WriterOptions::background_writer) the inserts run on a writer thread of their own.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "storage/types.h"

namespace ss {

struct WriterOptions {
  // false: write the target path directly with a rollback journal, so that every commit() is a
  // readable checkpoint even if the process is killed (the collector's mode).
  bool atomic_rename = true;
  // Rows after which the open transaction is committed (bounds SQLite's page cache use).
  std::int64_t rows_per_transaction = 2'000'000;
  // true: the SQLite inserts run on a writer thread of their own, fed through a bounded queue, so
  // the caller (an importer) goes on parsing while rows are written. Ids are still returned at
  // once. An insert's error comes back from a later add_* call, commit() or finish().
  bool background_writer = false;
};

class ProfileWriter {
 public:
  // Creates (replacing) the profile at `path`. Throws ProfileError on failure.
  ProfileWriter(const std::string& path, const Origin& origin, WriterOptions options = {});
  ~ProfileWriter();  // without finish(): rolls back and removes the partial file
  ProfileWriter(const ProfileWriter&) = delete;
  ProfileWriter& operator=(const ProfileWriter&) = delete;

  // Interned string id; id 0 is the empty string.
  std::uint32_t intern(std::string_view s);
  void set_meta(std::string_view key, std::string_view value);
  // Unix epoch nanoseconds of time 0 on the profile clock (0 when unknown).
  void set_time_origin(TimeNs unix_ns);

  void add_rank(const RankInfo& r);  // insert or replace by rank
  RowId add_stream(const StreamInfo& s);
  RowId add_thread(const ThreadInfo& t);
  RowId launch_config(const LaunchConfig& c);  // interned: equal configs share one row
  RowId add_kernel(const KernelRow& k);
  RowId add_launch(const LaunchRow& l);
  RowId add_process_group(const ProcessGroupRow& g);
  RowId add_collective(const CollectiveRow& c);
  RowId add_module(const ModuleRow& m);
  RowId add_range(const RangeRow& r);
  RowId add_memory_event(const MemoryEventRow& m);
  RowId add_step(const StepRow& s);
  // A step outside `record --steps`' capture window: its wall time only (table unobserved_steps),
  // and how many times the job called its model in it (model_calls; < 0: not counted, NULL).
  void add_unobserved_step(const StepRow& s, std::int64_t model_calls = -1);
  void add_skipped(int rank, std::string_view reason, std::int64_t count);

  // Updates a module's attribution of a kernel after the fact (importers attribute lazily).
  void set_kernel_module(RowId kernel, RowId module);

  void commit();  // everything so far becomes durable and readable by others
  void finish();  // final commit, close and (atomic mode) rename into place; idempotent

  const std::string& path() const;
  std::int64_t kernel_count() const;  // kernel rows of every category

  // What was added so far, as `shardscope info` counts it (known without reading the file back):
  // ranks of the ranks and streams tables, kernels without copies and memsets, distinct step numbers.
  struct Counts {
    std::int64_t ranks = 0, kernels = 0, copies = 0, memsets = 0, collectives = 0, ranges = 0, modules = 0,
                 memory_events = 0, steps = 0, skipped_events = 0;
  };
  Counts counts() const;

  // CPU seconds the writer thread spent inserting (0 without one); final after finish().
  double writer_thread_seconds() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Current time as ISO-8601 UTC (for origin.created_utc).
std::string utc_now_iso8601();

}  // namespace ss
