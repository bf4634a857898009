#include "profiler/collector/launcher/allocator_history.h"

#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <unordered_map>

#include "profiler/collector/core/merge.h"
#include "profiler/collector/core/rank_identity.h"
#include "profiler/collector/core/rank_phases.h"
#include "profiler/common/memory_categories.h"
#include "profiler/import/common/innermost_range.h"
#include "profiler/import/import.h"
#include "storage/profile_reader.h"
#include "storage/sqlite_handle.h"

namespace ss::record {
namespace fs = std::filesystem;
namespace {

// One per-tensor event on the unix-epoch clock, with what the snapshot said of its module.
struct HistoryEvent {
  TimeNs unix_ns = 0;
  std::int64_t address = 0;
  std::int64_t bytes = 0;
  std::string snapshot_module;  // "" when the snapshot named none
  bool has_snapshot_module = false;
};

TimeNs meta_origin(sql::Db& db, const std::string& path) {
  sql::Stmt st(db.get(), "SELECT value FROM meta WHERE key = 'time_origin_unix_ns'");
  if (!st.step()) throw ProfileError(ProfileErrorKind::MissingTable, path + ": no time_origin_unix_ns");
  return std::stoll(st.col_text(0));
}

// What the snapshot importer made of the pickle: the events of one device (the rank's, else the
// busiest), the record_function ranges that carry a memory context, and its skip counts / meta.
struct SnapshotContent {
  std::vector<HistoryEvent> events;
  std::vector<std::pair<TimeNs, TimeNs>> context_ranges;  // unix ns
  std::vector<std::int64_t> contexts;                     // MemContext per range
  std::vector<std::pair<std::string, std::int64_t>> skipped;
  std::vector<std::pair<std::string, std::string>> meta;
};

SnapshotContent read_snapshot(const std::string& pickle, const std::string& scratch, int preferred_device) {
  import::ImportOptions options;
  options.show_progress = false;
  import::import_files({pickle}, scratch, options);
  SnapshotContent out;
  sql::Db db = open_profile_readonly(scratch);
  const TimeNs origin = meta_origin(db, scratch);
  int device = preferred_device;
  {
    sql::Stmt st(db.get(), "SELECT rank, count(*) FROM memory_events GROUP BY rank ORDER BY count(*) DESC, rank");
    std::vector<int> present;
    while (st.step()) present.push_back(static_cast<int>(st.col_int(0)));
    if (present.empty()) return out;
    if (std::find(present.begin(), present.end(), device) == present.end()) device = present.front();
  }
  {
    sql::Stmt st(db.get(),
                 "SELECT e.time_ns, e.address, e.bytes, m.fqn FROM memory_events e LEFT JOIN modules m ON m.id = e.module_id "
                 "WHERE e.rank = ? ORDER BY e.time_ns, e.id");
    st.bind(1, device);
    while (st.step()) {
      HistoryEvent e;
      e.unix_ns = origin + st.col_int(0);
      e.address = st.col_int_or(1, 0);
      e.bytes = st.col_int(2);
      e.has_snapshot_module = !st.col_null(3);
      if (e.has_snapshot_module) e.snapshot_module = st.col_text(3);
      out.events.push_back(std::move(e));
    }
  }
  {
    sql::Stmt st(db.get(),
                 "SELECT r.start_ns, r.start_ns + r.duration_ns, s.value FROM ranges r JOIN strings s ON s.id = r.name_id "
                 "WHERE r.rank = ? ORDER BY r.start_ns");
    st.bind(1, device);
    while (st.step())
      if (auto c = memory_context_of_range(st.col_text(2))) {
        out.context_ranges.emplace_back(origin + st.col_int(0), origin + st.col_int(1));
        out.contexts.push_back(static_cast<std::int64_t>(*c));
      }
  }
  {
    sql::Stmt st(db.get(), "SELECT reason, count FROM skipped_events WHERE rank = ?");
    st.bind(1, device);
    while (st.step()) out.skipped.emplace_back(st.col_text(0), st.col_int(1));
  }
  {
    sql::Stmt st(db.get(), "SELECT key, value FROM meta WHERE key LIKE 'snapshot.%'");
    while (st.step()) out.meta.emplace_back(st.col_text(0), st.col_text(1));
  }
  return out;
}

// "<unix ns>\t<message>" lines; unreadable lines (a rank killed while writing) are skipped.
std::vector<std::pair<TimeNs, std::string>> read_facts(const fs::path& path) {
  std::vector<std::pair<TimeNs, std::string>> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const auto tab = line.find('\t');
    if (tab == std::string::npos) continue;
    try {
      out.emplace_back(std::stoll(line.substr(0, tab)), line.substr(tab + 1));
    } catch (const std::exception&) {
    }
  }
  return out;
}

class RankFileModules {
 public:
  explicit RankFileModules(sql::Db& db) : db_(db) {
    sql::Stmt st(db.get(), "SELECT id, fqn FROM modules");
    while (st.step()) ids_[st.col_text(1)] = st.col_int(0);
  }
  // The module's row, added (fqn only: the merge adds the tree and the sidecar's facts) if new.
  std::int64_t id(const std::string& fqn) {
    if (auto it = ids_.find(fqn); it != ids_.end()) return it->second;
    sql::Stmt st(db_.get(), "INSERT INTO modules (fqn) VALUES (?)");
    st.bind(1, fqn);
    st.step();
    return ids_[fqn] = sqlite3_last_insert_rowid(db_.get());
  }

 private:
  sql::Db& db_;
  std::unordered_map<std::string, std::int64_t> ids_;
};

// The rank file's module ranges (every thread) as one innermost-range index, times relative to
// the rank file's origin.
import::InnermostRangeIndex module_ranges(sql::Db& db) {
  std::vector<std::pair<TimeNs, TimeNs>> ranges;
  std::vector<std::int64_t> modules;
  sql::Stmt st(db.get(),
               "SELECT start_ns, start_ns + duration_ns, module_id FROM ranges WHERE module_id IS NOT NULL AND kind = ? "
               "ORDER BY start_ns");
  st.bind(1, static_cast<int>(RangeKind::Module));
  while (st.step()) {
    ranges.emplace_back(st.col_int(0), st.col_int(1));
    modules.push_back(st.col_int(2));
  }
  return import::InnermostRangeIndex(ranges, modules);
}

}  // namespace

std::vector<TensorFact> history_tensor_facts(const std::vector<std::pair<TimeNs, std::string>>& lines, TimeNs origin) {
  std::vector<TensorFact> facts;
  for (const auto& [t, message] : lines) {
    if (auto f = parse_tensor_fact(message, t - origin))
      facts.push_back(std::move(*f));
    else if (auto live = parse_live_tensor(message, t - origin))
      facts.push_back(std::move(live->fact));
  }
  return facts;
}

namespace {

std::int64_t attach_one(const fs::path& rank_file, const SnapshotContent& snap,
                        const std::vector<std::pair<TimeNs, std::string>>& fact_lines) {
  sql::Db db(rank_file.string(), SQLITE_OPEN_READWRITE);
  db.exec("PRAGMA busy_timeout = 5000");
  const TimeNs origin = meta_origin(db, rank_file.string());
  int rank = 0;
  {
    sql::Stmt st(db.get(), "SELECT rank FROM ranks LIMIT 1");
    if (st.step()) rank = static_cast<int>(st.col_int(0));
  }
  const collector::RankPhases phases = collector::read_rank_phases(db, 0);
  const import::InnermostRangeIndex modules_at = module_ranges(db);
  std::vector<std::pair<TimeNs, TimeNs>> ctx_ranges;
  for (const auto& [a, b] : snap.context_ranges) ctx_ranges.emplace_back(a - origin, b - origin);
  const import::InnermostRangeIndex snapshot_context(ctx_ranges, snap.contexts);

  const std::vector<TensorFact> facts = history_tensor_facts(fact_lines, origin);

  std::vector<MemoryEventIn> ins;
  ins.reserve(snap.events.size());
  for (const HistoryEvent& e : snap.events) {
    const TimeNs t = e.unix_ns - origin;
    auto c = static_cast<MemContext>(snapshot_context.at(t, static_cast<std::int64_t>(MemContext::None)));
    if (c == MemContext::None) c = phases.context_at(t);
    ins.push_back({t, e.address, e.bytes, c});
  }
  std::vector<int> fact_of_event;
  const std::vector<MemoryCategory> categories = classify_memory(ins, phases.steps, facts, &fact_of_event);

  db.exec("BEGIN");
  RankFileModules modules(db);
  std::int64_t replaced = 0;
  {
    sql::Stmt st(db.get(), "SELECT count(*) FROM memory_events");
    st.step();
    replaced = st.col_int(0);
  }
  db.exec("DELETE FROM memory_events");
  sql::Stmt insert(db.get(),
                   "INSERT INTO memory_events (rank, time_ns, address, bytes, category, module_id) VALUES (?, ?, ?, ?, ?, ?)");
  std::unordered_map<std::int64_t, std::int64_t> owner;  // live address -> its allocation's module row (-1: none)
  for (std::size_t i = 0; i < ins.size(); ++i) {
    const HistoryEvent& e = snap.events[i];
    std::int64_t module = -1;
    if (e.bytes > 0) {
      module = modules_at.at(ins[i].time, -1);
      if (module < 0 && fact_of_event[i] >= 0 && facts[static_cast<std::size_t>(fact_of_event[i])].has_module)
        module = modules.id(facts[static_cast<std::size_t>(fact_of_event[i])].module);
      if (module < 0 && e.has_snapshot_module) module = modules.id(e.snapshot_module);
      owner[e.address] = module;
    } else if (auto it = owner.find(e.address); it != owner.end()) {
      module = it->second;
      owner.erase(it);
    }
    insert.reset();
    insert.bind(1, rank);
    insert.bind(2, ins[i].time);
    insert.bind(3, e.address);
    insert.bind(4, e.bytes);
    insert.bind(5, static_cast<int>(categories[i]));
    insert.bind_id(6, module);
    insert.step();
  }
  auto meta = [&](const std::string& key, const std::string& value) {
    sql::Stmt st(db.get(), "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)");
    st.bind(1, key);
    st.bind(2, value);
    st.step();
  };
  meta("collector.memory_source", "allocator-history");
  meta("collector.history.events", std::to_string(ins.size()));
  meta("collector.history.tensor_facts", std::to_string(facts.size()));
  meta("collector.history.replaced_segment_events", std::to_string(replaced));
  for (const auto& [k, v] : snap.meta) meta("collector." + k, v);
  for (const auto& [reason, count] : snap.skipped) {
    sql::Stmt st(db.get(), "INSERT INTO skipped_events (rank, reason, count) VALUES (?, ?, ?)");
    st.bind(1, rank);
    st.bind(2, reason);
    st.bind(3, count);
    st.step();
  }
  db.exec("COMMIT");
  return static_cast<std::int64_t>(ins.size());
}

}  // namespace

HistoryAttachResult attach_allocator_history(const std::string& parts_dir) {
  HistoryAttachResult result;
  std::error_code ec;
  const std::string suffix = kSnapshotSuffix;
  for (const auto& entry : fs::directory_iterator(parts_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.ends_with(suffix)) continue;
    const std::string stem = name.substr(0, name.size() - suffix.size());
    const auto id = collector::parse_rank_file_stem(stem);
    if (!id) continue;
    const fs::path dir(parts_dir);
    const fs::path rank_file = dir / (stem + std::string(collector::kRankFileSuffix));
    const fs::path scratch = dir / (stem + ".cuda_memory.ssdb");
    try {
      const bool have_rank_file = fs::exists(rank_file);
      int device = id->local_rank;
      if (have_rank_file) {
        sql::Db db = open_profile_readonly(rank_file.string());
        sql::Stmt st(db.get(), "SELECT device_index FROM ranks LIMIT 1");
        if (st.step() && st.col_int_or(0, -1) >= 0) device = static_cast<int>(st.col_int(0));
        // A helper process (a compile worker that touched CUDA) ran no kernel and no module: its
        // file stays empty, so that the merge skips it as before.
        sql::Stmt busy(db.get(), "SELECT (SELECT count(*) FROM kernels) + (SELECT count(*) FROM ranges)");
        if (busy.step() && busy.col_int(0) == 0) continue;
      }
      const SnapshotContent snap = read_snapshot(entry.path().string(), scratch.string(), device);
      fs::remove(scratch, ec);
      if (snap.events.empty()) {
        result.warnings.push_back(name + ": the allocator history holds no allocations; the collector's memory records kept");
        continue;
      }
      if (!have_rank_file) {
        // No collector in that process (a build without CUPTI): its ranges come from the sidecar,
        // on a clock that starts at the first allocation (the model's parameters come before the
        // first module range).
        const fs::path sidecar = dir / (stem + std::string(collector::kSidecarSuffix));
        if (!fs::exists(sidecar) ||
            !collector::rank_file_from_sidecar(sidecar.string(), *id, rank_file.string(), snap.events.front().unix_ns)) {
          result.warnings.push_back(name + ": no rank file and no sidecar ranges for it; its memory is not used");
          continue;
        }
      }
      result.events += attach_one(rank_file, snap, read_facts(dir / (stem + kSnapshotFactsSuffix)));
      ++result.ranks;
    } catch (const std::exception& e) {
      fs::remove(scratch, ec);
      result.warnings.push_back(name + ": " + e.what() + "; that rank is merged without it");
    }
  }
  return result;
}

}  // namespace ss::record
