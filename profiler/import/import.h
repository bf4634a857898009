// Importing other tools' traces into one profile. `import_files` detects each input's format,
// runs the matching importer into one shared ProfileWriter (so several files of one job, one
// per rank, merge into one profile on one clock) and renames the result into place only when
// every input was read: a failure leaves no output file.
//
// Contract for an importer (import_kineto, import_nsys, ...):
//  - write rows through ctx.writer; convert times to ns relative to ctx.time_origin_unix_ns()
//    (the first input fixes the origin; later inputs are placed on the same clock);
//  - claim every rank with ctx.claim_rank(rank, path) (two files claiming one rank is an error);
//  - count what it skips with ctx.skip(rank, reason) (reported by `shardscope info`);
//  - report progress with ctx.progress(bytes_done) for inputs over 50 MB;
//  - throw ImportError (file, position, what was expected) on bad input; never crash.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "storage/errors.h"
#include "storage/profile_writer.h"

namespace ss::import {
namespace kineto {
struct ReusableBuffers;
}

enum class Format { Unknown, KinetoJson, NsysSqlite, TorchMemorySnapshot };
const char* to_string(Format f);

// Detects the format from the file's content (gzip / JSON / SQLite header and tables, pickle
// protocol opcode), not its name.
Format detect_format(const std::string& path);

// Bad input. The message names the file and, where it applies, the byte offset or row.
class ImportError : public ProfileError {
 public:
  explicit ImportError(const std::string& message) : ProfileError(ProfileErrorKind::MalformedTable, message) {}
};

class ImportContext {
 public:
  ImportContext(ProfileWriter& profile_writer, std::function<void(const std::string& line)> progress_line = {})
      : writer(profile_writer), progress_line_(std::move(progress_line)) {}

  ProfileWriter& writer;

  // The profile clock: unix-epoch ns of time 0. The first call fixes it (and writes meta).
  TimeNs time_origin_unix_ns(TimeNs first_seen_unix_ns);
  bool has_time_origin() const { return origin_.has_value(); }

  void claim_rank(int rank, const std::string& path);  // throws ImportError on a duplicate
  bool rank_claimed(int rank) const { return claimed_.count(rank) != 0; }
  int next_free_rank() const;

  void skip(int rank, const std::string& reason, std::int64_t count = 1) { skipped_[{rank, reason}] += count; }
  void flush_skipped();  // writes the counts to skipped_events (called once at the end)

  // Progress for large inputs: prints "importing FILE: 45% (900 MB of 2.0 GB)" at most ~10x/s.
  // Also where a cancelled import stops (throws ProfileError Cancelled) and where on_progress
  // hears of every input's progress, whatever its size.
  void progress(const std::string& path, std::uint64_t done, std::uint64_t total);

  // For a caller that shows progress itself and can cancel (the desktop app); both optional.
  std::function<void(const std::string& path, double fraction)> on_progress;
  const std::atomic<bool>* cancel = nullptr;
  void check_cancel() const;

  // Rows shared by every input of one import (the modules table and process groups are not per
  // rank), so that several ranks' files write each module / group once.
  std::map<std::string, RowId> module_ids;         // fqn -> modules.id
  std::map<std::string, RowId> process_group_ids;  // name + '|' + ranks -> process_groups.id

  // Buffers the Kineto importer reuses from one input file to the next (kineto_import.h).
  std::shared_ptr<kineto::ReusableBuffers> kineto_buffers;

 private:
  std::optional<TimeNs> origin_;
  std::map<int, std::string> claimed_;
  std::map<std::pair<int, std::string>, std::int64_t> skipped_;
  std::function<void(const std::string&)> progress_line_;
  std::int64_t last_progress_ms_ = 0;
};

void import_kineto(const std::string& path, ImportContext& ctx);  // .json and .json.gz
void import_nsys(const std::string& path, ImportContext& ctx);    // nsys export --type sqlite
// torch.cuda.memory._dump_snapshot pickles, read by a restricted reader that executes nothing.
void import_torch_snapshot(const std::string& path, ImportContext& ctx);

struct ImportOptions {
  bool show_progress = true;  // progress lines on stderr for inputs over 50 MB
  // Overall progress in [0, 1] across all inputs, with the input being read (called often: keep
  // it cheap). Setting `cancel` stops the import with ProfileErrorKind::Cancelled and no output.
  std::function<void(double fraction, const std::string& path)> on_progress{};
  const std::atomic<bool>* cancel = nullptr;
};

struct ImportSummary {
  std::vector<std::pair<std::string, Format>> inputs;
  std::int64_t kernels = 0;  // kernel rows of every category
  ProfileWriter::Counts rows;  // what the profile holds, as `shardscope info` counts it
  // Where the time went (bench/import), in wall seconds: reading, parsing and attributing every
  // input (rows handed to the writer thread meanwhile), then waiting for the writer thread and
  // finishing the file. In CPU seconds: the calling thread's over the inputs, and the writer
  // thread's (the SQLite inserts, overlapping the inputs).
  double inputs_seconds = 0, finish_seconds = 0, inputs_cpu_seconds = 0, sqlite_cpu_seconds = 0;
};

// Imports every input into `output` (written atomically). Throws ImportError / ProfileError.
ImportSummary import_files(const std::vector<std::string>& inputs, const std::string& output,
                           const ImportOptions& options = {});

}  // namespace ss::import
