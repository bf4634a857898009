#include "storage/profile_writer.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <variant>
#include <vector>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <set>
#include <unordered_map>

#include "storage/background_batches.h"
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

// Binds one row's values from parameter `first` on (rows of a multi-row INSERT).
template <typename... Args>
void bind_row(sql::Stmt& s, int first, const Args&... args) {
  int i = first - 1;
  (bind_value(s, ++i, args), ...);
}

// "INSERT INTO t (cols) VALUES (?,..),(?,..)..." with `rows` rows of `columns` parameters.
std::string multi_row_insert(std::string_view head, int columns, int rows) {
  std::string one = "(";
  for (int c = 0; c < columns; ++c) one += c ? ",?" : "?";
  one += ")";
  std::string sql(head);
  for (int r = 0; r < rows; ++r) sql += (r ? "," : " VALUES ") + one;
  return sql;
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

namespace {

// One row for the writer thread (WriterOptions::background_writer). The ids are assigned when
// the row is added, so the producer never waits for SQLite; the writer inserts rows in the order
// they were added, which gives the same file as writing them directly.
struct StringOp {
  std::int64_t id;
  std::string_view value;  // the interned copy's text: map nodes never move
};
struct ConfigOp {
  RowId id;
  LaunchConfig c;
};
struct KernelOp {
  RowId id;
  KernelRow k;
};
struct LaunchOp {
  RowId id;
  LaunchRow l;
};
struct CollectiveOp {
  RowId id;
  CollectiveRow c;
};
struct RangeOp {
  RowId id;
  RangeRow r;
};
struct MemoryOp {
  RowId id;
  MemoryEventRow m;
};
struct StepOp {
  RowId id;
  StepRow s;
};
struct KernelModuleOp {
  RowId kernel, module;
};
// Rare rows that carry strings of their own (meta, ranks, streams, threads, modules ...).
struct OwnedOp {
  std::function<void()> run;
};
using WriteOp = std::variant<StringOp, ConfigOp, KernelOp, LaunchOp, CollectiveOp, RangeOp, MemoryOp, StepOp,
                             KernelModuleOp, OwnedOp>;

}  // namespace

// Rows per hand-off to the writer thread, and hand-offs it may fall behind by (~6 MB of rows).
constexpr std::size_t kBatchRows = 4096;
constexpr std::size_t kQueuedBatches = 16;
// Rows per multi-row INSERT of a run of ranges, kernels or launches (writer thread only).
constexpr std::size_t kRowsPerInsert = 32;
// The columns after `id`, which the multi-row INSERTs leave out (see write_run).
constexpr int kRangeColumns = 11;
constexpr std::string_view kRangeColumnList =
    "rank, thread_id, stream_id, start_ns, duration_ns, name_id, kind, phase, module_id, parent_id, depth";
constexpr int kKernelColumns = 10;
constexpr std::string_view kKernelColumnList =
    "rank, stream_id, start_ns, duration_ns, name_id, correlation, launch_config_id, category, module_id, bytes";
constexpr int kLaunchColumns = 6;
constexpr std::string_view kLaunchColumnList = "kernel_id, rank, thread_id, start_ns, duration_ns, name_id";
constexpr int kMemoryColumns = 7;
constexpr std::string_view kMemoryColumnList = "rank, time_ns, address, bytes, category, module_id, stream_id";

// "INSERT INTO table (id, columns)" for one row with its id, "INSERT INTO table (columns)" for
// the multi-row form.
std::string insert_head(std::string_view table, std::string_view columns, bool with_id) {
  return "INSERT INTO " + std::string(table) + " (" + (with_id ? "id, " : "") + std::string(columns) + ")";
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
  std::int64_t copies = 0, memsets = 0, skipped = 0;
  std::set<int> ranks;                    // of the ranks and streams tables
  std::set<std::int64_t> step_numbers;

  sql::Stmt ins_string, ins_rank, ins_stream, ins_thread, ins_config, ins_kernel, ins_group, ins_collective,
      ins_module, ins_range, ins_memory, ins_step, ins_skipped, ins_meta, upd_kernel_module, ins_launch,
      ins_ranges, ins_kernels, ins_launches, ins_memories;  // kRowsPerInsert rows each

  // The writer thread, when there is one: it owns `db` and the statements until finish().
  std::unique_ptr<BackgroundBatches<WriteOp>> background;
  double writer_seconds = 0;  // its busy time, kept when it stops

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

  void emit(WriteOp&& op) {
    if (background)
      background->push(std::move(op));
    else
      write(op);
  }
  // A row with strings of its own: the closure holds copies of them.
  template <typename Fn>
  void emit_owned(Fn&& fn) {
    if (background)
      background->push(OwnedOp{std::forward<Fn>(fn)});
    else
      fn();
  }
  // Waits until the writer thread has written everything added so far (rethrows its error).
  void drain() {
    if (background) background->drain();
  }

  void write(const WriteOp& op) {
    std::visit([this](const auto& o) { write_one(o); }, op);
  }
  void write_one(const StringOp& o) {
    insert(ins_string, o.id, o.value);
    row_added();
  }
  void write_one(const ConfigOp& o) {
    const LaunchConfig& c = o.c;
    insert(ins_config, o.id, c.grid_x, c.grid_y, c.grid_z, c.block_x, c.block_y, c.block_z, c.shared_mem_bytes,
           c.registers_per_thread);
  }
  // bind_*: a row's values after its id, from parameter `first` on.
  static void bind_kernel(sql::Stmt& st, int first, const KernelOp& o) {
    const KernelRow& k = o.k;
    const bool copy = k.category == KernelCategory::Memcpy || k.category == KernelCategory::Memset;
    bind_row(st, first, k.rank, k.stream, k.start, k.end - k.start, std::int64_t{k.name}, k.correlation,
             OptionalId{k.launch_config}, static_cast<int>(k.category), OptionalId{k.module},
             OptionalId{copy ? k.bytes : kNoRow});
  }
  void write_one(const KernelOp& o) { step_row(ins_kernel, &bind_kernel, o); }
  static void bind_launch(sql::Stmt& st, int first, const LaunchOp& o) {
    const LaunchRow& l = o.l;
    bind_row(st, first, l.kernel, l.rank, OptionalId{l.thread}, l.start, l.end - l.start,
             OptionalId{l.name == 0 ? kNoRow : std::int64_t{l.name}});
  }
  void write_one(const LaunchOp& o) { step_row(ins_launch, &bind_launch, o); }
  void write_one(const CollectiveOp& o) {
    const CollectiveRow& c = o.c;
    insert(ins_collective, o.id, c.rank, OptionalId{c.kernel}, static_cast<int>(c.type), c.bytes,
           OptionalId{c.dtype == 0 ? kNoRow : std::int64_t{c.dtype}}, OptionalId{c.process_group}, c.group_size,
           OptionalId{c.sequence}, c.start, c.end - c.start);
    row_added();
  }
  static void bind_range(sql::Stmt& st, int first, const RangeOp& o) {
    const RangeRow& r = o.r;
    bind_row(st, first, r.rank, OptionalId{r.thread}, OptionalId{r.stream}, r.start, r.end - r.start,
             std::int64_t{r.name}, static_cast<int>(r.kind), static_cast<int>(r.phase), OptionalId{r.module},
             OptionalId{r.parent}, r.depth);
  }
  void write_one(const RangeOp& o) { step_row(ins_range, &bind_range, o); }

  template <typename Op>
  void step_row(sql::Stmt& st, void (*bind)(sql::Stmt&, int, const Op&), const Op& o) {
    st.bind(1, std::int64_t{o.id});
    bind(st, 2, o);
    st.step();
    sqlite3_reset(st.get());
    row_added();
  }

  // If batch[i] is a row of type Op, writes it and the rows of that type with consecutive ids
  // after it (up to kRowsPerInsert) and returns true. A full run goes in one statement: SQLite
  // then keeps its cursor at the table's end instead of seeking from the root for every row; a
  // shorter one row by one (each row is looked at once). The statement leaves the ids out: SQLite gives each
  // row the table's largest id + 1, which is the row's own id because every table's rows are
  // added in id order (and appending needs no lookup of the id, ~10% of the writer thread's CPU).
  // The last id SQLite gave is checked against the run's, so a row out of order is an error,
  // not a wrong profile. The rows and their order are the same as one by one.
  template <typename Op>
  bool write_run(const std::vector<WriteOp>& batch, std::size_t& i, sql::Stmt& st, int columns,
                 void (*bind)(sql::Stmt&, int, const Op&)) {
    const Op* first = std::get_if<Op>(&batch[i]);
    if (!first) return false;
    std::size_t n = 1;
    for (; n < kRowsPerInsert && i + n < batch.size(); ++n) {
      const Op* o = std::get_if<Op>(&batch[i + n]);
      if (!o || o->id != first->id + static_cast<RowId>(n)) break;
    }
    if (n < kRowsPerInsert) {
      for (std::size_t k = 0; k < n; ++k) write_one(std::get<Op>(batch[i + k]));
      i += n;
      return true;
    }
    for (std::size_t k = 0; k < kRowsPerInsert; ++k)
      bind(st, static_cast<int>(k) * columns + 1, std::get<Op>(batch[i + k]));
    st.step();
    sqlite3_reset(st.get());
    const RowId last = first->id + static_cast<RowId>(kRowsPerInsert) - 1;
    if (sqlite3_last_insert_rowid(db.get()) != last)
      throw ProfileError(ProfileErrorKind::Sql, "internal: rows written out of id order (SQLite gave id " +
                                                    std::to_string(sqlite3_last_insert_rowid(db.get())) +
                                                    ", expected " + std::to_string(last) + ")");
    for (std::size_t k = 0; k < kRowsPerInsert; ++k) row_added();
    i += kRowsPerInsert;
    return true;
  }

  // A batch from the writer thread. Runs of ranges (a lane's ranges come one after another; they
  // are most of a real trace's rows), kernels and launches (an importer adds a rank's kernels,
  // then their launches) and memory events (a rank's, one after another; a quarter of a CPU
  // trace's rows) go in multi-row INSERTs; the other rows one by one.
  void write_batch(const std::vector<WriteOp>& batch) {
    for (std::size_t i = 0; i < batch.size();) {
      if (write_run(batch, i, ins_ranges, kRangeColumns, &bind_range) ||
          write_run(batch, i, ins_kernels, kKernelColumns, &bind_kernel) ||
          write_run(batch, i, ins_memories, kMemoryColumns, &bind_memory) ||
          write_run(batch, i, ins_launches, kLaunchColumns, &bind_launch))
        continue;
      write(batch[i]);
      ++i;
    }
  }
  static void bind_memory(sql::Stmt& st, int first, const MemoryOp& o) {
    const MemoryEventRow& m = o.m;
    bind_row(st, first, m.rank, m.time, m.address, m.bytes, static_cast<int>(m.category), OptionalId{m.module},
             OptionalId{m.stream});
  }
  void write_one(const MemoryOp& o) { step_row(ins_memory, &bind_memory, o); }
  void write_one(const StepOp& o) {
    const StepRow& st = o.s;
    insert(ins_step, o.id, st.rank, st.number, st.start, st.end - st.start);
  }
  void write_one(const KernelModuleOp& o) { insert(upd_kernel_module, OptionalId{o.module}, o.kernel); }
  void write_one(const OwnedOp& o) { o.run(); }
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
  // A throw below (a full disk, a writer thread that cannot start) must not leave the new file
  // behind: the destructor does not run for a constructor that throws.
  struct RemoveOnThrow {
    Impl& d;
    bool armed = true;
    ~RemoveOnThrow() {
      if (!armed) return;
      d.background.reset();
      d.db.close();
      std::remove(d.working.c_str());
    }
  } remove_on_throw{d};

  // 16 KiB pages (as fast as 64 KiB for bulk loads, smaller small files) and no journal; the atomic rename replaces the journal's
  // crash safety. The collector's direct mode keeps a rollback journal so each commit is durable.
  d.db.exec("PRAGMA page_size = 16384");
  d.db.exec(options.atomic_rename ? "PRAGMA journal_mode = OFF" : "PRAGMA journal_mode = DELETE");
  d.db.exec("PRAGMA synchronous = OFF");
  // 8 MiB of page cache: rows are appended, so only each table's last pages are hot, and pages
  // written out are reused. A cache larger than the file (64 MiB before) gave every page of a
  // large import a fresh, zero-filled allocation: 11,000 page faults on a 55 MB profile.
  d.db.exec("PRAGMA cache_size = -8192");
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
  d.ins_kernel = sql::Stmt(d.db.get(), multi_row_insert(insert_head("kernels", kKernelColumnList, true), kKernelColumns + 1, 1));
  d.ins_kernels = sql::Stmt(d.db.get(), multi_row_insert(insert_head("kernels", kKernelColumnList, false), kKernelColumns,
                                                         kRowsPerInsert));
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
  d.ins_range = sql::Stmt(d.db.get(), multi_row_insert(insert_head("ranges", kRangeColumnList, true), kRangeColumns + 1, 1));
  d.ins_ranges = sql::Stmt(d.db.get(), multi_row_insert(insert_head("ranges", kRangeColumnList, false), kRangeColumns,
                                                        kRowsPerInsert));
  d.ins_memory =
      sql::Stmt(d.db.get(), multi_row_insert(insert_head("memory_events", kMemoryColumnList, true), kMemoryColumns + 1, 1));
  d.ins_memories = sql::Stmt(d.db.get(), multi_row_insert(insert_head("memory_events", kMemoryColumnList, false),
                                                          kMemoryColumns, kRowsPerInsert));
  d.ins_step =
      sql::Stmt(d.db.get(), "INSERT INTO steps (id, rank, number, start_ns, duration_ns) VALUES (?,?,?,?,?)");
  d.ins_skipped = sql::Stmt(d.db.get(), "INSERT INTO skipped_events (rank, reason, count) VALUES (?,?,?)");
  d.upd_kernel_module = sql::Stmt(d.db.get(), "UPDATE kernels SET module_id = ? WHERE id = ?");
  d.ins_launch = sql::Stmt(d.db.get(), multi_row_insert(insert_head("launches", kLaunchColumnList, true), kLaunchColumns + 1, 1));
  d.ins_launches = sql::Stmt(d.db.get(), multi_row_insert(insert_head("launches", kLaunchColumnList, false), kLaunchColumns,
                                                          kRowsPerInsert));

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

  if (options.background_writer)
    d.background = std::make_unique<BackgroundBatches<WriteOp>>(
        [&d](std::vector<WriteOp>& batch) {
          d.write_batch(batch);
        },
        kBatchRows, kQueuedBatches);
  remove_on_throw.armed = false;
}

ProfileWriter::~ProfileWriter() {
  if (!impl_ || impl_->finished) return;
  // Abandoned: stop the writer thread first (what it has not written yet is dropped), then never
  // leave a half-written file behind in atomic mode.
  impl_->background.reset();
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
  auto [it, added] = d.strings.emplace(std::string(s), id);
  d.emit(StringOp{std::int64_t{id}, it->first});
  return id;
}

void ProfileWriter::set_meta(std::string_view key, std::string_view value) {
  Impl& d = *impl_;
  d.emit_owned([&d, k = std::string(key), v = std::string(value)] { insert(d.ins_meta, std::string_view(k), std::string_view(v)); });
}

void ProfileWriter::set_time_origin(TimeNs unix_ns) { set_meta("time_origin_unix_ns", std::to_string(unix_ns)); }

void ProfileWriter::add_rank(const RankInfo& r) {
  Impl& d = *impl_;
  d.ranks.insert(r.rank);
  d.emit_owned([&d, r] {
    insert(d.ins_rank, r.rank, std::string_view(r.host), r.pid, r.device_index, std::string_view(r.gpu_name),
           r.gpu_memory_bytes, r.sm_count, r.compute_major, r.compute_minor, r.clock_offset_ns, r.world_size);
  });
}

RowId ProfileWriter::add_stream(const StreamInfo& st) {
  Impl& d = *impl_;
  const RowId id = d.next_stream++;
  d.ranks.insert(st.rank);
  d.emit_owned([&d, id, st] {
    insert(d.ins_stream, id, st.rank, st.device, st.native_id, static_cast<int>(st.kind), std::string_view(st.name));
  });
  return id;
}

RowId ProfileWriter::add_thread(const ThreadInfo& t) {
  Impl& d = *impl_;
  const RowId id = d.next_thread++;
  d.emit_owned([&d, id, t] { insert(d.ins_thread, id, t.rank, t.tid, std::string_view(t.name)); });
  return id;
}

RowId ProfileWriter::launch_config(const LaunchConfig& c) {
  Impl& d = *impl_;
  if (auto it = d.configs.find(c); it != d.configs.end()) return it->second;
  const RowId id = d.next_config++;
  d.emit(ConfigOp{id, c});
  d.configs.emplace(c, id);
  return id;
}

RowId ProfileWriter::add_kernel(const KernelRow& k) {
  Impl& d = *impl_;
  const RowId id = d.next_kernel++;
  if (k.category == KernelCategory::Memcpy) ++d.copies;
  if (k.category == KernelCategory::Memset) ++d.memsets;
  d.emit(KernelOp{id, k});
  return id;
}

RowId ProfileWriter::add_launch(const LaunchRow& l) {
  Impl& d = *impl_;
  const RowId id = d.next_launch++;
  d.emit(LaunchOp{id, l});
  return id;
}

RowId ProfileWriter::add_process_group(const ProcessGroupRow& g) {
  Impl& d = *impl_;
  const RowId id = d.next_group++;
  d.emit_owned([&d, id, g] {
    insert(d.ins_group, id, std::string_view(g.name), std::string_view(g.description), std::string_view(g.ranks),
           g.size, std::string_view(g.backend));
  });
  return id;
}

RowId ProfileWriter::add_collective(const CollectiveRow& c) {
  Impl& d = *impl_;
  const RowId id = d.next_collective++;
  d.emit(CollectiveOp{id, c});
  return id;
}

RowId ProfileWriter::add_module(const ModuleRow& m) {
  Impl& d = *impl_;
  const RowId id = d.next_module++;
  d.emit_owned([&d, id, m] {
    insert(d.ins_module, id, OptionalId{m.parent}, std::string_view(m.fqn), std::string_view(m.class_name),
           m.param_count, m.param_bytes, m.is_fsdp_unit ? 1 : 0, OptionalId{m.fsdp_unit},
           OptionalText{m.reshard_policy});
  });
  return id;
}

RowId ProfileWriter::add_range(const RangeRow& r) {
  Impl& d = *impl_;
  const RowId id = d.next_range++;
  d.emit(RangeOp{id, r});
  return id;
}

RowId ProfileWriter::add_memory_event(const MemoryEventRow& m) {
  Impl& d = *impl_;
  const RowId id = d.next_memory++;
  d.emit(MemoryOp{id, m});
  return id;
}

RowId ProfileWriter::add_step(const StepRow& st) {
  Impl& d = *impl_;
  const RowId id = d.next_step++;
  d.step_numbers.insert(st.number);
  d.emit(StepOp{id, st});
  return id;
}

void ProfileWriter::add_unobserved_step(const StepRow& st, std::int64_t model_calls) {
  Impl& d = *impl_;
  d.emit_owned([&d, st, model_calls] {
    sql::Stmt ins(d.db.get(),
                  "INSERT INTO unobserved_steps (rank, number, start_ns, duration_ns, model_calls) VALUES (?,?,?,?,?)");
    insert(ins, st.rank, st.number, st.start, st.end - st.start, OptionalId{model_calls});
  });
}

void ProfileWriter::add_skipped(int rank, std::string_view reason, std::int64_t count) {
  Impl& d = *impl_;
  d.skipped += count;
  d.emit_owned([&d, rank, r = std::string(reason), count] {
    insert(d.ins_skipped, OptionalId{rank < 0 ? kNoRow : rank}, std::string_view(r), count);
  });
}

void ProfileWriter::set_kernel_module(RowId kernel, RowId module) { impl_->emit(KernelModuleOp{kernel, module}); }

void ProfileWriter::commit() {
  Impl& d = *impl_;
  d.emit_owned([&d] {
    d.commit();
    d.begin();
  });
  d.drain();  // durable when this returns, as without the writer thread
}

void ProfileWriter::finish() {
  Impl& d = *impl_;
  if (d.finished) return;
  if (d.background) {
    d.drain();  // rethrows the writer thread's error; the destructor then removes the file
    d.writer_seconds = d.background->busy_seconds();
    d.background.reset();
  }
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
  d.ins_ranges = {};
  d.ins_kernels = {};
  d.ins_launches = {};
  d.ins_memory = {};
  d.ins_memories = {};
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

double ProfileWriter::writer_thread_seconds() const {
  return impl_->background ? impl_->background->busy_seconds() : impl_->writer_seconds;
}

ProfileWriter::Counts ProfileWriter::counts() const {
  const Impl& d = *impl_;
  Counts c;
  c.ranks = static_cast<std::int64_t>(d.ranks.size());
  c.kernels = d.next_kernel - 1 - d.copies - d.memsets;
  c.copies = d.copies;
  c.memsets = d.memsets;
  c.collectives = d.next_collective - 1;
  c.ranges = d.next_range - 1;
  c.modules = d.next_module - 1;
  c.memory_events = d.next_memory - 1;
  c.steps = static_cast<std::int64_t>(d.step_numbers.size());
  c.skipped_events = d.skipped;
  return c;
}

}  // namespace ss
