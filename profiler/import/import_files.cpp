#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "profiler/import/import.h"

#include <cstdlib>
#include <thread>

#include "profiler/import/kineto/kineto_import.h"

#include "profiler/common/comm_kernels.h"
#include "storage/sqlite_handle.h"
#include "storage/thread_cpu_time.h"
#include "storage/units.h"

namespace ss::import {

const char* to_string(Format f) {
  switch (f) {
    case Format::KinetoJson: return "kineto-json";
    case Format::NsysSqlite: return "nsys-sqlite";
    case Format::TorchMemorySnapshot: return "torch-memory-snapshot";
    case Format::Unknown: break;
  }
  return "unknown";
}

Format detect_format(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ProfileError(ProfileErrorKind::Io, "cannot open '" + path + "': " + std::strerror(errno));
  std::array<unsigned char, 16> head{};
  in.read(reinterpret_cast<char*>(head.data()), head.size());
  const auto n = static_cast<std::size_t>(in.gcount());
  if (n >= 2 && head[0] == 0x1f && head[1] == 0x8b) return Format::KinetoJson;  // gzip: Kineto .json.gz
  // A pickle of protocol 2 to 5 starts with PROTO (0x80) and its number: torch.cuda.memory._dump_snapshot.
  if (n >= 2 && head[0] == 0x80 && head[1] >= 2 && head[1] <= 5) return Format::TorchMemorySnapshot;
  if (n >= 16 && std::memcmp(head.data(), "SQLite format 3", 16) == 0) {
    bool nsys = false, profile = false;
    try {
      sql::Db db(path, SQLITE_OPEN_READONLY);
      sql::Stmt s(db.get(),
                  "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN ('StringIds',"
                  " 'META_DATA_EXPORT', 'TARGET_INFO_SESSION_START_TIME', 'CUPTI_ACTIVITY_KIND_KERNEL')");
      nsys = s.step() && s.col_int(0) > 0;
      sql::Stmt m(db.get(), "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'meta'");
      profile = m.step() && m.col_int(0) > 0;
    } catch (const ProfileError& e) {
      throw ImportError("'" + path + "': damaged or truncated SQLite file: " + e.what());
    }
    if (nsys) return Format::NsysSqlite;
    if (profile)
      throw ImportError("'" + path + "' is already a ShardScope profile; open it directly (shardscope info / gui)");
    throw ImportError("'" + path +
                      "' is a SQLite database but not an Nsight Systems export (no StringIds / META_DATA_EXPORT /"
                      " CUPTI_ACTIVITY_KIND_* tables); export one with `nsys export --type sqlite`");
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isspace(head[i])) continue;
    if (head[i] == '{' || head[i] == '[') return Format::KinetoJson;
    break;
  }
  return Format::Unknown;
}

TimeNs ImportContext::time_origin_unix_ns(TimeNs first_seen_unix_ns) {
  if (!origin_) {
    origin_ = first_seen_unix_ns;
    writer.set_time_origin(first_seen_unix_ns);
  }
  return *origin_;
}

void ImportContext::claim_rank(int rank, const std::string& path) {
  auto [it, added] = claimed_.emplace(rank, path);
  if (!added)
    throw ImportError("'" + path + "' claims rank " + std::to_string(rank) + ", which '" + it->second +
                      "' already holds; import the files of one job with one file per rank");
}

int ImportContext::next_free_rank() const {
  int r = 0;
  while (claimed_.count(r)) ++r;
  return r;
}

void ImportContext::flush_skipped() {
  for (const auto& [key, count] : skipped_) writer.add_skipped(key.first, key.second, count);
  skipped_.clear();
}

void ImportContext::check_cancel() const {
  if (cancel && cancel->load(std::memory_order_relaxed)) throw ProfileError(ProfileErrorKind::Cancelled, "import cancelled");
}

void ImportContext::progress(const std::string& path, std::uint64_t done, std::uint64_t total) {
  check_cancel();
  if (on_progress && total > 0) on_progress(path, std::min(1.0, double(done) / double(total)));
  if (!progress_line_ || total < 50ull * 1000 * 1000) return;
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::steady_clock::now().time_since_epoch())
                       .count();
  if (done < total && now - last_progress_ms_ < 100) return;
  last_progress_ms_ = now;
  char line[256];
  std::snprintf(line, sizeof line, "importing %s: %3.0f%% (%s of %s)", path.c_str(),
                100.0 * double(done) / double(total), format_bytes(static_cast<std::int64_t>(done)).c_str(),
                format_bytes(static_cast<std::int64_t>(total)).c_str());
  progress_line_(line);
}

ImportSummary import_files(const std::vector<std::string>& inputs, const std::string& output,
                           const ImportOptions& options) {
  if (inputs.empty()) throw ImportError("no input files");
  ImportSummary summary;
  const auto t_start = std::chrono::steady_clock::now();
  const double cpu_start = thread_cpu_seconds();
  std::vector<Format> formats;
  for (const auto& in : inputs) {
    Format f = detect_format(in);
    if (f == Format::Unknown)
      throw ImportError("'" + in + "': unknown format (expected a PyTorch profiler / Kineto JSON trace, .json or"
                        " .json.gz, an Nsight Systems SQLite export, or a PyTorch memory snapshot pickle)");
    formats.push_back(f);
    summary.inputs.emplace_back(in, f);
  }
  Origin origin;
  origin.kind = OriginKind::Imported;
  origin.tool = "shardscope import";
  std::string fmts, files;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    std::string f = to_string(formats[i]);
    if (fmts.find(f) == std::string::npos) fmts += (fmts.empty() ? "" : ",") + f;
    files += (i ? "\n" : "") + inputs[i];
  }
  origin.source_format = fmts;
  origin.source_files = files;
  // The writer builds OUT under a temporary name; if anything below throws, its destructor
  // removes the partial file, so no output is left behind. Its SQLite inserts run on a thread of
  // their own, so the next events are parsed while rows are written (an insert's error comes
  // back from a later writer call or from finish()).
  WriterOptions writer_options;
  writer_options.background_writer = true;
  // Commits every 50,000 rows write the pages out on the writer thread as the import goes, instead
  // of all of them in one final commit that the import waits for (no journal: a commit is only
  // the page writes; the file is renamed into place only at the end anyway).
  writer_options.rows_per_transaction = 50'000;
  ProfileWriter writer(output, origin, writer_options);
  // The communication-kernel rules this import classified with, so `info` can name the rule
  // that matched each kernel even if the user's rules change later.
  writer.set_meta("comm_kernel_rules", format_comm_kernel_rules(comm_kernel_rules()));
  ImportContext ctx(writer, options.show_progress ? std::function<void(const std::string&)>(
                                                        [](const std::string& l) { std::fprintf(stderr, "%s\r", l.c_str()); })
                                                  : std::function<void(const std::string&)>());
  ctx.cancel = options.cancel;
  std::size_t current = 0;  // which input on_progress is about: overall = (current + fraction) / n
  if (options.on_progress)
    ctx.on_progress = [&](const std::string& path, double fraction) {
      options.on_progress((static_cast<double>(current) + fraction) / static_cast<double>(inputs.size()), path);
    };
  // Several Kineto files (one per rank): the next ones are read and parsed on helper threads,
  // each into buffers of its own, while the current one is attributed and written; they are
  // taken in input order (so ranks are assigned as in a sequential import). One ahead on 2 or 3
  // cores: with the writer's thread that is a three-stage pipeline, and two or three ahead
  // measured slower there (more buffers to fault in, the writer starved; docs/benchmarks.md).
  // Up to 4 ahead with more cores. SHARDSCOPE_IMPORT_THREADS=N sets the files in flight (each
  // holds its JSON and parsed events); 0 reads and parses every file on this thread.
  const unsigned cores = std::thread::hardware_concurrency();
  std::size_t ahead = cores >= 4 ? std::min(4u, cores - 1) : 1;
  if (const char* env = std::getenv("SHARDSCOPE_IMPORT_THREADS"); env && *env)
    ahead = static_cast<std::size_t>(std::max(0, std::atoi(env)));
  std::vector<std::string> kineto_inputs;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (formats[i] == Format::KinetoJson) kineto_inputs.push_back(inputs[i]);
  std::size_t kineto_seen = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    current = i;
    ctx.check_cancel();
    if (options.on_progress) options.on_progress(static_cast<double>(i) / static_cast<double>(inputs.size()), inputs[i]);
    switch (formats[i]) {
      case Format::KinetoJson: {
        if (!ctx.kineto_buffers) ctx.kineto_buffers = std::make_shared<kineto::ReusableBuffers>();
        kineto::ReusableBuffers& buffers = *ctx.kineto_buffers;
        ++kineto_seen;
        buffers.ahead = ahead;
        buffers.upcoming.assign(kineto_inputs.begin() + static_cast<std::ptrdiff_t>(kineto_seen),
                                kineto_inputs.begin() + static_cast<std::ptrdiff_t>(std::min(kineto_inputs.size(), kineto_seen + ahead)));
        import_kineto(inputs[i], ctx);
        break;
      }
      case Format::NsysSqlite: import_nsys(inputs[i], ctx); break;
      case Format::TorchMemorySnapshot: import_torch_snapshot(inputs[i], ctx); break;
      case Format::Unknown: break;
    }
  }
  // The parse buffers (JSON text, indexes, event records: ~100 MB for a few rank files) are freed
  // now, while the writer thread still inserts the last rows, not after the file is in place.
  ctx.kineto_buffers.reset();
  if (options.show_progress) std::fprintf(stderr, "\n");
  ctx.check_cancel();  // the last chance: after finish() the profile is in place
  ctx.flush_skipped();
  summary.kernels = writer.kernel_count();
  summary.rows = writer.counts();
  const auto t_inputs = std::chrono::steady_clock::now();
  summary.inputs_cpu_seconds = thread_cpu_seconds() - cpu_start;
  writer.finish();
  summary.inputs_seconds = std::chrono::duration<double>(t_inputs - t_start).count();
  summary.finish_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_inputs).count();
  summary.sqlite_cpu_seconds = writer.writer_thread_seconds();
  return summary;
}

}  // namespace ss::import
