#include "storage/profile_writer.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <unordered_map>

#include "storage/schema.h"
#include "storage/sqlite_handle.h"
#include "storage/version.h"

namespace ss {
namespace {

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

struct ConfigHash {
  std::size_t operator()(const LaunchConfig& c) const noexcept {
    std::size_t h = 1469598103934665603ull;
    for (std::int32_t v : {c.grid_x, c.grid_y, c.grid_z, c.block_x, c.block_y, c.block_z, c.shared_mem_bytes,
                           c.registers_per_thread})
      h = (h ^ static_cast<std::uint32_t>(v)) * 1099511628211ull;
    return h;
  }
};

// A value bound as SQL NULL when absent: a negative id (kNoRow), or an empty text.
struct OptionalId {
  std::int64_t value;
};
struct OptionalText {
  std::string_view value;
};

void bind_value(sql::Stmt& s, int i, std::int64_t v) { s.bind(i, v); }
void bind_value(sql::Stmt& s, int i, int v) { s.bind(i, v); }
void bind_value(sql::Stmt& s, int i, std::string_view v) { s.bind(i, v); }
void bind_value(sql::Stmt& s, int i, OptionalId v) { s.bind_id(i, v.value); }
void bind_value(sql::Stmt& s, int i, OptionalText v) {
  if (v.value.empty())
    s.bind_null(i);
  else
    s.bind(i, v.value);
}

// Binds every argument in order (parameters 1..N), runs the statement and resets it. All
// parameters are rebound on every call, so clearing the bindings is unnecessary.
template <typename... Args>
void insert(sql::Stmt& s, const Args&... args) {
  int i = 0;
  (bind_value(s, ++i, args), ...);
  s.step();
  sqlite3_reset(s.get());
}

void write_enum_labels(sql::Db& db) {
  sql::Stmt ins(db.get(), "INSERT INTO enums (type, value, label) VALUES (?, ?, ?)");
  auto add = [&](std::string_view type, int count, auto to_label) {
    for (int i = 0; i < count; ++i) {
      ins.bind(1, type);
      ins.bind(2, i);
      ins.bind(3, to_label(i));
      ins.step();
      ins.reset();
    }
  };
  add("kernel_category", kKernelCategoryCount, [](int i) { return to_string(static_cast<KernelCategory>(i)); });
  add("stream_kind", kStreamKindCount, [](int i) { return to_string(static_cast<StreamKind>(i)); });
  add("range_kind", kRangeKindCount, [](int i) { return to_string(static_cast<RangeKind>(i)); });
  add("range_phase", kRangePhaseCount, [](int i) { return to_string(static_cast<RangePhase>(i)); });
  add("memory_category", kMemoryCategoryCount, [](int i) { return to_string(static_cast<MemoryCategory>(i)); });
  add("collective_type", kCollectiveTypeCount, [](int i) { return to_string(static_cast<CollectiveType>(i)); });
  add("origin_kind", kOriginKindCount, [](int i) { return to_string(static_cast<OriginKind>(i)); });
}

}  // namespace

std::string utc_now_iso8601() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::array<char, 32> buf{};
  std::strftime(buf.data(), buf.size(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf.data();
}

struct ProfileWriter::Impl {
  std::string target;
  std::string working;  // file being written (target itself when not atomic)
  WriterOptions opts;
  sql::Db db;
  bool finished = false;
  bool in_txn = false;
  std::int64_t rows_in_txn = 0;

  std::unordered_map<std::string, std::uint32_t, StringHash, std::equal_to<>> strings;
  std::unordered_map<LaunchConfig, RowId, ConfigHash> configs;
  RowId next_stream = 1, next_thread = 1, next_config = 1, next_kernel = 1, next_group = 1, next_collective = 1,
        next_module = 1, next_range = 1, next_memory = 1, next_step = 1, next_launch = 1;

  sql::Stmt ins_string, ins_rank, ins_stream, ins_thread, ins_config, ins_kernel, ins_group, ins_collective,
      ins_module, ins_range, ins_memory, ins_step, ins_skipped, ins_meta, upd_kernel_module, ins_launch;

  void begin() {
    if (!in_txn) {
      db.exec("BEGIN");
      in_txn = true;
    }
  }
  void commit() {
    if (in_txn) {
      db.exec("COMMIT");
      in_txn = false;
    }
    rows_in_txn = 0;
  }
  void row_added() {
    if (++rows_in_txn >= opts.rows_per_transaction) {
      commit();
      begin();
    }
  }
};

ProfileWriter::ProfileWriter(const std::string& path, const Origin& origin, WriterOptions options)
    : impl_(std::make_unique<Impl>()) {
  Impl& d = *impl_;
  d.target = path;
  d.opts = options;
  d.working = options.atomic_rename ? path + ".partial-" + std::to_string(::getpid()) : path;
  std::remove(d.working.c_str());
  if (!options.atomic_rename) {
    std::remove((path + "-journal").c_str());
  }
  d.db = sql::Db(d.working, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX);

  // 16 KiB pages (as fast as 64 KiB for bulk loads, smaller small files) and no journal; the atomic rename replaces the journal's
  // crash safety. The collector's direct mode keeps a rollback journal so each commit is durable.
  d.db.exec("PRAGMA page_size = 16384");
  d.db.exec(options.atomic_rename ? "PRAGMA journal_mode = OFF" : "PRAGMA journal_mode = DELETE");
  d.db.exec("PRAGMA synchronous = OFF");
  d.db.exec("PRAGMA cache_size = -65536");
  if (options.atomic_rename) d.db.exec("PRAGMA locking_mode = EXCLUSIVE");
  d.db.exec("PRAGMA application_id = " + std::to_string(schema::kApplicationId));
  d.db.exec("PRAGMA user_version = " + std::to_string(schema::kVersion));

  d.begin();
  for (const auto& t : schema::tables()) d.db.exec(schema::create_table_sql(t));
  for (const auto& [name, body] : schema::views())
    d.db.exec("CREATE VIEW " + std::string(name) + " AS " + std::string(body));
  write_enum_labels(d.db);

  d.ins_meta = sql::Stmt(d.db.get(), "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)");
  d.ins_string = sql::Stmt(d.db.get(), "INSERT INTO strings (id, value) VALUES (?, ?)");
  d.ins_rank = sql::Stmt(d.db.get(),
                         "INSERT OR REPLACE INTO ranks (rank, host, pid, device_index, gpu_name, gpu_memory_bytes,"
                         " sm_count, compute_major, compute_minor, clock_offset_ns, world_size)"
                         " VALUES (?,?,?,?,?,?,?,?,?,?,?)");
  d.ins_stream =
      sql::Stmt(d.db.get(), "INSERT INTO streams (id, rank, device, native_id, kind, name) VALUES (?,?,?,?,?,?)");
  d.ins_thread = sql::Stmt(d.db.get(), "INSERT INTO threads (id, rank, tid, name) VALUES (?,?,?,?)");
  d.ins_config = sql::Stmt(d.db.get(),
                           "INSERT INTO launch_configs (id, grid_x, grid_y, grid_z, block_x, block_y, block_z,"
                           " shared_mem_bytes, registers_per_thread) VALUES (?,?,?,?,?,?,?,?,?)");
  d.ins_kernel = sql::Stmt(d.db.get(),
                           "INSERT INTO kernels (id, rank, stream_id, start_ns, duration_ns, name_id, correlation,"
                           " launch_config_id, category, module_id, bytes) VALUES (?,?,?,?,?,?,?,?,?,?,?)");
  d.ins_group = sql::Stmt(d.db.get(),
                          "INSERT INTO process_groups (id, name, description, ranks, size, backend)"
                          " VALUES (?,?,?,?,?,?)");
  d.ins_collective = sql::Stmt(d.db.get(),
                               "INSERT INTO collectives (id, rank, kernel_id, type, bytes, dtype_id,"
                               " process_group_id, group_size, sequence, start_ns, duration_ns)"
                               " VALUES (?,?,?,?,?,?,?,?,?,?,?)");
  d.ins_module = sql::Stmt(d.db.get(),
                           "INSERT INTO modules (id, parent_id, fqn, class_name, param_count, param_bytes,"
                           " is_fsdp_unit, fsdp_unit_id, reshard_policy) VALUES (?,?,?,?,?,?,?,?,?)");
  d.ins_range = sql::Stmt(d.db.get(),
                          "INSERT INTO ranges (id, rank, thread_id, stream_id, start_ns, duration_ns, name_id, kind,"
                          " phase, module_id, parent_id, depth) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
  d.ins_memory = sql::Stmt(d.db.get(),
                           "INSERT INTO memory_events (id, rank, time_ns, address, bytes, category, module_id,"
                           " stream_id) VALUES (?,?,?,?,?,?,?,?)");
  d.ins_step =
      sql::Stmt(d.db.get(), "INSERT INTO steps (id, rank, number, start_ns, duration_ns) VALUES (?,?,?,?,?)");
  d.ins_skipped = sql::Stmt(d.db.get(), "INSERT INTO skipped_events (rank, reason, count) VALUES (?,?,?)");
  d.upd_kernel_module = sql::Stmt(d.db.get(), "UPDATE kernels SET module_id = ? WHERE id = ?");
  d.ins_launch = sql::Stmt(d.db.get(),
                           "INSERT INTO launches (id, kernel_id, rank, thread_id, start_ns, duration_ns, name_id)"
                           " VALUES (?,?,?,?,?,?,?)");

  set_meta("format", schema::kFormatName);
  set_meta("schema_version", std::to_string(schema::kVersion));
  set_meta("writer", std::string("shardscope ") + kShardScopeVersion);
  set_meta("time_origin_unix_ns", "0");
  intern("");  // id 0

  sql::Stmt ins_origin(d.db.get(),
                       "INSERT INTO origin (id, kind, tool, tool_version, source_format, source_files,"
                       " parameters_json, created_utc, notes) VALUES (1,?,?,?,?,?,?,?,?)");
  ins_origin.bind(1, static_cast<int>(origin.kind));
  ins_origin.bind(2, origin.tool);
  ins_origin.bind(3, origin.tool_version.empty() ? std::string(kShardScopeVersion) : origin.tool_version);
  ins_origin.bind(4, origin.source_format);
  ins_origin.bind(5, origin.source_files);
  ins_origin.bind(6, origin.parameters_json.empty() ? std::string("{}") : origin.parameters_json);
  ins_origin.bind(7, origin.created_utc.empty() ? utc_now_iso8601() : origin.created_utc);
  ins_origin.bind(8, origin.notes);
  ins_origin.step();
}

ProfileWriter::~ProfileWriter() {
  if (!impl_ || impl_->finished) return;
  // Abandoned: never leave a half-written file behind in atomic mode.
  if (impl_->opts.atomic_rename) {
    impl_->db.close();
    std::remove(impl_->working.c_str());
  } else {
    try {
      impl_->commit();
    } catch (...) {
    }
    impl_->db.close();
  }
}

std::uint32_t ProfileWriter::intern(std::string_view s) {
  Impl& d = *impl_;
  if (auto it = d.strings.find(s); it != d.strings.end()) return it->second;
  auto id = static_cast<std::uint32_t>(d.strings.size());
  d.strings.emplace(std::string(s), id);
  insert(d.ins_string, std::int64_t{id}, s);
  d.row_added();
  return id;
}

void ProfileWriter::set_meta(std::string_view key, std::string_view value) { insert(impl_->ins_meta, key, value); }

void ProfileWriter::set_time_origin(TimeNs unix_ns) { set_meta("time_origin_unix_ns", std::to_string(unix_ns)); }

void ProfileWriter::add_rank(const RankInfo& r) {
  insert(impl_->ins_rank, r.rank, r.host, r.pid, r.device_index, r.gpu_name, r.gpu_memory_bytes, r.sm_count,
         r.compute_major, r.compute_minor, r.clock_offset_ns, r.world_size);
}

RowId ProfileWriter::add_stream(const StreamInfo& st) {
  Impl& d = *impl_;
  const RowId id = d.next_stream++;
  insert(d.ins_stream, id, st.rank, st.device, st.native_id, static_cast<int>(st.kind), st.name);
  return id;
}

RowId ProfileWriter::add_thread(const ThreadInfo& t) {
  Impl& d = *impl_;
  const RowId id = d.next_thread++;
  insert(d.ins_thread, id, t.rank, t.tid, t.name);
  return id;
}

RowId ProfileWriter::launch_config(const LaunchConfig& c) {
  Impl& d = *impl_;
  if (auto it = d.configs.find(c); it != d.configs.end()) return it->second;
  const RowId id = d.next_config++;
  insert(d.ins_config, id, c.grid_x, c.grid_y, c.grid_z, c.block_x, c.block_y, c.block_z, c.shared_mem_bytes,
         c.registers_per_thread);
  d.configs.emplace(c, id);
  return id;
}

RowId ProfileWriter::add_kernel(const KernelRow& k) {
  Impl& d = *impl_;
  const RowId id = d.next_kernel++;
  const bool copy = k.category == KernelCategory::Memcpy || k.category == KernelCategory::Memset;
  insert(d.ins_kernel, id, k.rank, k.stream, k.start, k.end - k.start, std::int64_t{k.name}, k.correlation,
         OptionalId{k.launch_config}, static_cast<int>(k.category), OptionalId{k.module},
         OptionalId{copy ? k.bytes : kNoRow});
  d.row_added();
  return id;
}

RowId ProfileWriter::add_launch(const LaunchRow& l) {
  Impl& d = *impl_;
  const RowId id = d.next_launch++;
  insert(d.ins_launch, id, l.kernel, l.rank, OptionalId{l.thread}, l.start, l.end - l.start,
         OptionalId{l.name == 0 ? kNoRow : std::int64_t{l.name}});
  d.row_added();
  return id;
}

RowId ProfileWriter::add_process_group(const ProcessGroupRow& g) {
  Impl& d = *impl_;
  const RowId id = d.next_group++;
  insert(d.ins_group, id, g.name, g.description, g.ranks, g.size, g.backend);
  return id;
}

RowId ProfileWriter::add_collective(const CollectiveRow& c) {
  Impl& d = *impl_;
  const RowId id = d.next_collective++;
  insert(d.ins_collective, id, c.rank, OptionalId{c.kernel}, static_cast<int>(c.type), c.bytes,
         OptionalId{c.dtype == 0 ? kNoRow : std::int64_t{c.dtype}}, OptionalId{c.process_group}, c.group_size,
         OptionalId{c.sequence}, c.start, c.end - c.start);
  d.row_added();
  return id;
}

RowId ProfileWriter::add_module(const ModuleRow& m) {
  Impl& d = *impl_;
  const RowId id = d.next_module++;
  insert(d.ins_module, id, OptionalId{m.parent}, m.fqn, m.class_name, m.param_count, m.param_bytes,
         m.is_fsdp_unit ? 1 : 0, OptionalId{m.fsdp_unit}, OptionalText{m.reshard_policy});
  return id;
}

RowId ProfileWriter::add_range(const RangeRow& r) {
  Impl& d = *impl_;
  const RowId id = d.next_range++;
  insert(d.ins_range, id, r.rank, OptionalId{r.thread}, OptionalId{r.stream}, r.start, r.end - r.start,
         std::int64_t{r.name}, static_cast<int>(r.kind), static_cast<int>(r.phase), OptionalId{r.module},
         OptionalId{r.parent}, r.depth);
  d.row_added();
  return id;
}

RowId ProfileWriter::add_memory_event(const MemoryEventRow& m) {
  Impl& d = *impl_;
  const RowId id = d.next_memory++;
  insert(d.ins_memory, id, m.rank, m.time, m.address, m.bytes, static_cast<int>(m.category), OptionalId{m.module},
         OptionalId{m.stream});
  d.row_added();
  return id;
}

RowId ProfileWriter::add_step(const StepRow& st) {
  Impl& d = *impl_;
  const RowId id = d.next_step++;
  insert(d.ins_step, id, st.rank, st.number, st.start, st.end - st.start);
  return id;
}

void ProfileWriter::add_skipped(int rank, std::string_view reason, std::int64_t count) {
  insert(impl_->ins_skipped, OptionalId{rank < 0 ? kNoRow : rank}, reason, count);
}

void ProfileWriter::set_kernel_module(RowId kernel, RowId module) {
  insert(impl_->upd_kernel_module, OptionalId{module}, kernel);
}

void ProfileWriter::commit() {
  impl_->commit();
  impl_->begin();
}

void ProfileWriter::finish() {
  Impl& d = *impl_;
  if (d.finished) return;
  d.commit();
  d.ins_string = {};
  d.ins_rank = {};
  d.ins_stream = {};
  d.ins_thread = {};
  d.ins_config = {};
  d.ins_kernel = {};
  d.ins_group = {};
  d.ins_collective = {};
  d.ins_module = {};
  d.ins_range = {};
  d.ins_memory = {};
  d.ins_step = {};
  d.ins_skipped = {};
  d.ins_meta = {};
  d.upd_kernel_module = {};
  d.ins_launch = {};
  d.db.close();
  if (d.opts.atomic_rename && std::rename(d.working.c_str(), d.target.c_str()) != 0) {
    int err = errno;
    std::remove(d.working.c_str());
    throw ProfileError(ProfileErrorKind::Io, "cannot move finished profile to '" + d.target + "': " +
                                                 std::strerror(err));
  }
  d.finished = true;
}

const std::string& ProfileWriter::path() const { return impl_->target; }
std::int64_t ProfileWriter::kernel_count() const { return impl_->next_kernel - 1; }

}  // namespace ss
