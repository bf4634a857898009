#include "storage/profile_reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "storage/range_lanes.h"
#include "storage/schema.h"
#include "storage/value_bounds.h"

namespace ss {
namespace {

constexpr std::int64_t kRowsBetweenChecks = 1 << 16;

}  // namespace

void rethrow_with_path(const ProfileError& e, const std::string& path) {
  const std::string prefix = "'" + path + "'";
  const std::string what = e.what();
  if (what.rfind(prefix, 0) == 0) throw e;
  // A SQLite error in the middle of a read means the file is damaged, not that our SQL is wrong.
  const auto kind = e.kind() == ProfileErrorKind::Sql ? ProfileErrorKind::Corrupt : e.kind();
  throw ProfileError(kind, prefix + ": cannot read: " + what);
}

namespace {

[[noreturn]] void fail(ProfileErrorKind kind, const std::string& path, const std::string& what) {
  throw ProfileError(kind, "'" + path + "': " + what);
}

std::uint32_t be32(const unsigned char* p) {
  return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) | p[3];
}

// Checks the 100-byte SQLite header before SQLite sees the file: a clear "not a SQLite file" and
// "truncated" beat SQLite's generic "file is not a database" / "disk image is malformed".
void check_sqlite_header(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw ProfileError(ProfileErrorKind::Io, "cannot open '" + path + "': " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw ProfileError(ProfileErrorKind::Io, "cannot open '" + path + "': it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ProfileError(ProfileErrorKind::Io, "cannot open '" + path + "' for reading");
  std::array<unsigned char, 100> h{};
  in.read(reinterpret_cast<char*>(h.data()), h.size());
  const auto got = static_cast<std::size_t>(in.gcount());
  static constexpr char kMagic[] = "SQLite format 3";  // 16 bytes with the terminating NUL
  if (got < 16 || std::memcmp(h.data(), kMagic, 16) != 0) {
    if (got == 0) fail(ProfileErrorKind::NotSqlite, path, "the file is empty; it is not a ShardScope profile");
    fail(ProfileErrorKind::NotSqlite, path,
         "not a SQLite database (it does not start with \"SQLite format 3\"); ShardScope profiles are SQLite files"
         " - to read a trace from another tool use `shardscope import`");
  }
  if (got < h.size())
    fail(ProfileErrorKind::Truncated, path,
         "truncated: the file ends inside the 100-byte SQLite header (" + std::to_string(got) + " bytes)");
  std::uint64_t page_size = (std::uint32_t(h[16]) << 8) | h[17];
  if (page_size == 1) page_size = 65536;
  const std::uint32_t change_counter = be32(&h[24]);
  const std::uint32_t page_count = be32(&h[28]);
  const std::uint32_t valid_for = be32(&h[92]);
  if (page_count != 0 && valid_for == change_counter) {
    const std::uint64_t expected = page_size * page_count;
    if (static_cast<std::uint64_t>(st.st_size) < expected)
      fail(ProfileErrorKind::Truncated, path,
           "truncated: its SQLite header says " + std::to_string(page_count) + " pages of " +
               std::to_string(page_size) + " bytes (" + std::to_string(expected) + " bytes) but the file has " +
               std::to_string(st.st_size) + " bytes");
  }
}

std::vector<std::string> table_names(sql::Db& db) {
  std::vector<std::string> names;
  sql::Stmt s(db.get(), "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name");
  while (s.step()) names.push_back(s.col_text(0));
  return names;
}

void check_cancel(const LoadOptions& o) {
  if (o.cancel && o.cancel->load(std::memory_order_relaxed))
    throw ProfileError(ProfileErrorKind::Cancelled, "loading cancelled");
}

std::int64_t max_id(sql::Db& db, const char* table, const char* column = "id") {
  sql::Stmt s(db.get(), std::string("SELECT coalesce(max(") + column + "), 0) FROM " + table);
  s.step();
  return s.col_int(0);
}

// Tracks progress across load stages, weighted by estimated row counts.
class Progress {
 public:
  Progress(const LoadOptions& o, std::int64_t total_rows) : o_(o), total_(std::max<std::int64_t>(total_rows, 1)) {}
  void rows(std::int64_t n, const char* stage) {
    done_ += n;
    check_cancel(o_);
    if (o_.progress) o_.progress(std::min(1.0, double(done_) / double(total_)), stage);
  }

 private:
  const LoadOptions& o_;
  std::int64_t total_;
  std::int64_t done_ = 0;
};

std::string row_of(const char* table, std::int64_t id) {
  return std::string("table '") + table + "' row id " + std::to_string(id);
}

// The loops below test each row with these predicates (value_bounds.h; `total` carries the sum
// over the rows read so far) and build a message only for a row that fails: the row's id is read
// then, not for every row.
bool times_ok(std::int64_t start, std::int64_t duration, std::int64_t& total) {
  return time_in_bounds(start) && duration_in_bounds(duration) && add_to_total(total, duration);
}
bool bytes_ok(std::int64_t v, std::int64_t& total) { return bytes_in_bounds(v) && add_to_total(total, v); }

[[noreturn]] void bad_times(std::int64_t start, std::int64_t duration, const std::string& path, const char* table,
                            std::int64_t id) {
  if (duration < 0) fail(ProfileErrorKind::MalformedTable, path, row_of(table, id) + " has a negative duration");
  if (!time_in_bounds(start) || !duration_in_bounds(duration))
    fail(ProfileErrorKind::MalformedTable, path,
         row_of(table, id) + " has start " + std::to_string(start) + " ns and duration " + std::to_string(duration) +
             " ns: beyond 2^61 ns (73 years)");
  fail(ProfileErrorKind::MalformedTable, path, std::string("table '") + table + "': durations add up to more than 2^62 ns");
}

[[noreturn]] void bad_bytes(std::int64_t v, const std::string& path, const char* table, const char* column,
                            std::int64_t id) {
  if (!bytes_in_bounds(v))
    fail(ProfileErrorKind::MalformedTable, path,
         row_of(table, id) + " has " + column + " " + std::to_string(v) + ": beyond 2^50 (1 PiB) either way");
  fail(ProfileErrorKind::MalformedTable, path, std::string("table '") + table + "': " + column + " adds up to more than 2^62");
}

// Rejects a row whose time columns are not integers or out of bounds; returns the start.
std::int64_t checked_start(const sql::Stmt& s, int start_col, int dur_col, std::int64_t& total, const std::string& path,
                           const char* table, int id_col) {
  if (sqlite3_column_type(s.get(), start_col) != SQLITE_INTEGER ||
      sqlite3_column_type(s.get(), dur_col) != SQLITE_INTEGER)
    fail(ProfileErrorKind::MalformedTable, path, row_of(table, s.col_int(id_col)) + " has a non-integer time");
  const std::int64_t start = s.col_int(start_col), duration = s.col_int(dur_col);
  if (!times_ok(start, duration, total)) bad_times(start, duration, path, table, s.col_int(id_col));
  return start;
}

template <typename Track>
void finish_track(Track& t) {
  auto by_start = [](const auto& a, const auto& b) { return a.start < b.start || (a.start == b.start && a.end > b.end); };
  if (!std::is_sorted(t.events.begin(), t.events.end(), by_start))
    std::stable_sort(t.events.begin(), t.events.end(), by_start);
  t.events.shrink_to_fit();
  t.max_duration = 0;
  for (const auto& e : t.events) t.max_duration = std::max(t.max_duration, e.end - e.start);
}

}  // namespace

void validate_profile_schema(sql::Db& db, const std::string& path) {
  for (const auto& t : schema::tables()) {
    sql::Stmt info(db.get(), "SELECT name FROM pragma_table_info(?)");
    info.bind(1, t.name);
    std::vector<std::string> cols;
    while (info.step()) cols.push_back(info.col_text(0));
    if (cols.empty() && t.optional) continue;
    if (cols.empty())
      fail(ProfileErrorKind::MissingTable, path, "required table '" + std::string(t.name) + "' is missing");
    for (const auto& c : t.columns)
      if (!c.optional && std::find(cols.begin(), cols.end(), c.name) == cols.end())
        fail(ProfileErrorKind::MalformedTable, path,
             "table '" + std::string(t.name) + "' has no column '" + std::string(c.name) + "'");
  }
}

sql::Db open_profile_readonly(const std::string& path) {
  check_sqlite_header(path);
  sql::Db db(path, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX);
  // Nothing in a profile is ever executed: no triggers, no schema-defined functions.
  sqlite3_db_config(db.get(), SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(db.get(), SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_db_config(db.get(), SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, nullptr);
  try {
    std::vector<std::string> names = table_names(db);
    if (std::find(names.begin(), names.end(), "meta") == names.end()) {
      std::string list;
      for (std::size_t i = 0; i < names.size() && i < 8; ++i) list += (i ? ", " : "") + names[i];
      if (names.size() > 8) list += ", ...";
      fail(ProfileErrorKind::NotProfile, path,
           "a SQLite database but not a ShardScope profile (it has no 'meta' table; its tables: " +
               (list.empty() ? std::string("none") : list) + ")");
    }
    std::string format, version;
    {
      sql::Stmt m(db.get(), "SELECT key, value FROM meta WHERE key IN ('format', 'schema_version')");
      while (m.step()) (m.col_text(0) == "format" ? format : version) = m.col_text(1);
    }
    if (format != schema::kFormatName)
      fail(ProfileErrorKind::NotProfile, path,
           "a SQLite database but not a ShardScope profile (meta.format is '" + format + "', expected '" +
               std::string(schema::kFormatName) + "')");
    char* end = nullptr;
    long v = std::strtol(version.c_str(), &end, 10);
    if (version.empty() || *end != '\0' || v < 1)
      fail(ProfileErrorKind::MalformedTable, path, "meta.schema_version is '" + version + "', not a version number");
    if (v > schema::kVersion)
      fail(ProfileErrorKind::NewerVersion, path,
           "profile schema version " + version + " is newer than this build of ShardScope reads (up to " +
               std::to_string(schema::kVersion) + "); update ShardScope");
    validate_profile_schema(db, path);
  } catch (const ProfileError& e) {
    if (e.kind() == ProfileErrorKind::Sql || e.kind() == ProfileErrorKind::NotSqlite ||
        e.kind() == ProfileErrorKind::Corrupt)
      fail(e.kind() == ProfileErrorKind::NotSqlite ? ProfileErrorKind::NotSqlite : ProfileErrorKind::Corrupt, path,
           std::string("cannot read the database: ") + e.what());
    throw;
  }
  return db;
}

void StringTable::add(std::string_view s) {
  chars_.append(s);
  offsets_.push_back(static_cast<std::uint32_t>(chars_.size()));
}

std::string_view StringTable::operator[](std::uint32_t id) const {
  if (id + 1 >= offsets_.size()) return {};
  return std::string_view(chars_).substr(offsets_[id], offsets_[id + 1] - offsets_[id]);
}

void StringTable::reserve(std::size_t n, std::size_t chars) {
  offsets_.reserve(n + 1);
  chars_.reserve(chars);
}

const RankModel* Profile::rank(int r) const {
  for (const auto& m : ranks)
    if (m.info.rank == r) return &m;
  return nullptr;
}

std::int32_t Profile::module_index(RowId id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= module_index_by_id.size()) return -1;
  return static_cast<std::int32_t>(module_index_by_id[static_cast<std::size_t>(id)]);
}

std::int32_t Profile::find_module(std::string_view fqn) const {
  for (std::size_t i = 0; i < modules.size(); ++i)
    if (modules[i].fqn == fqn) return static_cast<std::int32_t>(i);
  return -1;
}

std::size_t Profile::memory_bytes() const {
  std::size_t b = strings.memory_bytes();
  for (const auto& t : stream_tracks) b += sizeof(t) + t.events.capacity() * sizeof(KernelEvent);
  for (const auto& t : range_tracks) b += sizeof(t) + t.events.capacity() * sizeof(RangeEvent);
  for (const auto& r : ranks) b += sizeof(r) + r.memory.capacity() * sizeof(CounterPoint) + r.steps.capacity() * sizeof(StepRow);
  b += collectives.capacity() * sizeof(CollectiveEvent) + modules.capacity() * sizeof(ModuleNode);
  b += module_index_by_id.capacity() * sizeof(std::int64_t);
  return b;
}

Profile load_profile(const std::string& path, const LoadOptions& options) {
  sql::Db db = open_profile_readonly(path);
  Profile p;
  p.path = path;
  p.schema_version = schema::kVersion;
  auto rank_for = [&p](int r) -> RankModel& {
    for (auto& m : p.ranks)
      if (m.info.rank == r) return m;
    RankModel m;
    m.info.rank = r;
    auto it = std::lower_bound(p.ranks.begin(), p.ranks.end(), r,
                               [](const RankModel& x, int v) { return x.info.rank < v; });
    return *p.ranks.insert(it, std::move(m));
  };
  check_cancel(options);

  try {
    {
      sql::Stmt s(db.get(), "SELECT key, value FROM meta");
      while (s.step()) p.meta[s.col_text(0)] = s.col_text(1);
    }
    {
      sql::Stmt s(db.get(),
                  "SELECT kind, tool, tool_version, source_format, source_files, parameters_json, created_utc, notes"
                  " FROM origin WHERE id = 1");
      if (!s.step()) fail(ProfileErrorKind::MalformedTable, path, "table 'origin' has no row");
      auto k = s.col_int(0);
      if (k < 0 || k >= kOriginKindCount)
        fail(ProfileErrorKind::MalformedTable, path, "origin.kind " + std::to_string(k) + " is not a known origin");
      p.origin = {static_cast<OriginKind>(k), s.col_text(1), s.col_text(2), s.col_text(3),
                  s.col_text(4),                s.col_text(5), s.col_text(6), s.col_text(7)};
    }

    const std::int64_t n_strings = max_id(db, "strings") + 1;
    const std::int64_t n_kernels = options.kernel_id_limit > 0 ? std::min(max_id(db, "kernels"), options.kernel_id_limit)
                                                                : max_id(db, "kernels");
    const std::int64_t n_ranges = options.ranges ? max_id(db, "ranges") : 0;
    const std::int64_t n_memory = options.memory ? max_id(db, "memory_events") : 0;
    Progress progress(options, n_strings + n_kernels + n_ranges + n_memory);

    // Strings: ids are dense from 0 in files we write; tolerate gaps but not absurd ids.
    {
      sql::Stmt cnt(db.get(), "SELECT count(*) FROM strings");
      cnt.step();
      const std::int64_t count = cnt.col_int(0);
      if (n_strings > 16 * count + 1024 || n_strings > (std::int64_t(1) << 32))
        fail(ProfileErrorKind::MalformedTable, path, "table 'strings' has sparse ids up to " + std::to_string(n_strings));
      p.strings.reserve(static_cast<std::size_t>(n_strings), static_cast<std::size_t>(count) * 24);
      sql::Stmt s(db.get(), "SELECT id, value FROM strings ORDER BY id");
      std::int64_t next = 0;
      while (s.step()) {
        std::int64_t id = s.col_int(0);
        if (id < 0) fail(ProfileErrorKind::MalformedTable, path, "table 'strings' has a negative id");
        for (; next < id; ++next) p.strings.add({});
        const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 1));
        p.strings.add(t ? std::string_view(t, static_cast<std::size_t>(sqlite3_column_bytes(s.get(), 1)))
                        : std::string_view{});
        ++next;
      }
      progress.rows(n_strings, "strings");
    }
    const auto n_string_ids = static_cast<std::int64_t>(p.strings.size());
    auto check_name = [&](std::int64_t name_id, const char* table, std::int64_t row) {
      if (name_id < 0 || name_id >= n_string_ids)
        fail(ProfileErrorKind::MalformedTable, path,
             std::string("table '") + table + "' row id " + std::to_string(row) + " names string id " +
                 std::to_string(name_id) + ", which does not exist");
      return static_cast<std::uint32_t>(name_id);
    };

    {
      sql::Stmt s(db.get(),
                  "SELECT rank, host, pid, device_index, gpu_name, gpu_memory_bytes, sm_count, compute_major,"
                  " compute_minor, clock_offset_ns, world_size FROM ranks ORDER BY rank");
      while (s.step()) {
        RankModel r;
        r.info = {static_cast<int>(s.col_int(0)),
                  s.col_text(1),
                  s.col_int(2),
                  static_cast<int>(s.col_int_or(3, -1)),
                  s.col_text(4),
                  s.col_int(5),
                  static_cast<int>(s.col_int(6)),
                  static_cast<int>(s.col_int(7)),
                  static_cast<int>(s.col_int(8)),
                  s.col_int(9),
                  static_cast<int>(s.col_int(10))};
        if (!time_in_bounds(r.info.clock_offset_ns))
          fail(ProfileErrorKind::MalformedTable, path,
               "table 'ranks' rank " + std::to_string(r.info.rank) + " has a clock offset beyond 2^61 ns");
        p.ranks.push_back(std::move(r));
      }
    }

    // Streams -> tracks.
    std::unordered_map<RowId, std::int32_t> stream_track;
    {
      sql::Stmt s(db.get(), "SELECT id, rank, device, native_id, kind, name FROM streams ORDER BY rank, id");
      while (s.step()) {
        StreamTrack t;
        t.stream_id = s.col_int(0);
        t.rank = static_cast<int>(s.col_int(1));
        t.device = static_cast<int>(s.col_int(2));
        t.native_id = s.col_int(3);
        auto k = s.col_int(4);
        t.kind = (k >= 0 && k < kStreamKindCount) ? static_cast<StreamKind>(k) : StreamKind::Unknown;
        t.name = s.col_text(5);
        stream_track[t.stream_id] = static_cast<std::int32_t>(p.stream_tracks.size());
        p.stream_tracks.push_back(std::move(t));
      }
    }

    // Modules (before events, which refer to them by index).
    {
      const std::int64_t n_mod_ids = max_id(db, "modules") + 1;
      if (n_mod_ids > (std::int64_t(1) << 26))
        fail(ProfileErrorKind::MalformedTable, path, "table 'modules' has ids up to " + std::to_string(n_mod_ids));
      p.module_index_by_id.assign(static_cast<std::size_t>(std::max<std::int64_t>(n_mod_ids, 0)), -1);
      std::vector<RowId> parent_ids, unit_ids;
      std::int64_t param_count_total = 0, param_bytes_total = 0;
      sql::Stmt s(db.get(),
                  "SELECT id, parent_id, fqn, class_name, param_count, param_bytes, is_fsdp_unit, fsdp_unit_id,"
                  " reshard_policy FROM modules ORDER BY id");
      while (s.step()) {
        ModuleNode m;
        m.id = s.col_int(0);
        if (m.id < 0) fail(ProfileErrorKind::MalformedTable, path, "table 'modules' has a negative id");
        parent_ids.push_back(s.col_int_or(1, kNoRow));
        m.fqn = s.col_text(2);
        m.class_name = s.col_text(3);
        m.param_count = s.col_int(4);
        m.param_bytes = s.col_int(5);
        if (!bytes_ok(m.param_count, param_count_total)) bad_bytes(m.param_count, path, "modules", "param_count", m.id);
        if (!bytes_ok(m.param_bytes, param_bytes_total)) bad_bytes(m.param_bytes, path, "modules", "param_bytes", m.id);
        m.is_fsdp_unit = s.col_int(6) != 0;
        unit_ids.push_back(s.col_int_or(7, kNoRow));
        m.reshard_policy = s.col_text(8);
        p.module_index_by_id[static_cast<std::size_t>(m.id)] = static_cast<std::int64_t>(p.modules.size());
        p.modules.push_back(std::move(m));
      }
      for (std::size_t i = 0; i < p.modules.size(); ++i) {
        std::int32_t parent = p.module_index(parent_ids[i]);
        // A parent cycle would make tree walks loop forever: refuse it.
        for (std::int32_t a = parent, hops = 0; a >= 0; a = p.module_index(parent_ids[static_cast<std::size_t>(a)])) {
          if (a == static_cast<std::int32_t>(i) || ++hops > static_cast<std::int32_t>(p.modules.size()))
            fail(ProfileErrorKind::MalformedTable, path,
                 "table 'modules' has a parent cycle through module id " + std::to_string(p.modules[i].id));
        }
        p.modules[i].parent = parent;
        p.modules[i].fsdp_unit = p.module_index(unit_ids[i]);
        if (parent >= 0) p.modules[static_cast<std::size_t>(parent)].children.push_back(static_cast<std::int32_t>(i));
      }
    }
    auto module_of = [&](const sql::Stmt& s, int col) -> std::int32_t {
      return s.col_null(col) ? -1 : p.module_index(s.col_int(col));
    };

    // Kernels: the hot loop, split by rowid range over a few threads (one connection each);
    // each thread fills its own per-track arrays, concatenated in rowid order afterwards.
    {
      std::vector<std::int64_t> track_of_stream;  // dense stream id -> track index
      for (const auto& [sid, t] : stream_track) {
        if (sid < 0 || sid > (std::int64_t(1) << 24))
          fail(ProfileErrorKind::MalformedTable, path, "table 'streams' has id " + std::to_string(sid));
        if (static_cast<std::size_t>(sid) >= track_of_stream.size()) track_of_stream.resize(static_cast<std::size_t>(sid) + 1, -1);
        track_of_stream[static_cast<std::size_t>(sid)] = t;
      }
      const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
      const int n_threads = n_kernels > 1'000'000 ? static_cast<int>(std::min(hw, 8u)) : 1;
      std::vector<std::vector<std::vector<KernelEvent>>> parts(static_cast<std::size_t>(n_threads),
                                                               std::vector<std::vector<KernelEvent>>(p.stream_tracks.size()));
      std::vector<std::int64_t> counts(static_cast<std::size_t>(n_threads), 0);
      // Per thread: the durations' total (value_bounds.h), summed in a local and stored once
      // (neighbouring slots written per row would share a cache line between the threads).
      std::vector<std::int64_t> duration_totals(static_cast<std::size_t>(n_threads), 0);
      std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n_threads));
      auto worker = [&](int t) {
        try {
          sql::Db own;
          sql::Db* conn = &db;
          if (t > 0) {
            own = sql::Db(path, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX);
            conn = &own;
          }
          const std::int64_t lo = n_kernels * t / n_threads + 1, hi = n_kernels * (t + 1) / n_threads;
          sql::Stmt s(conn->get(),
                      "SELECT id, stream_id, start_ns, duration_ns, name_id, module_id, category FROM kernels"
                      " WHERE id BETWEEN ? AND ?");
          // The last range is open-ended so rows with ids beyond max(id) estimates are never lost.
          s.bind(1, t == 0 ? std::numeric_limits<std::int64_t>::min() : lo);
          const std::int64_t last = options.kernel_id_limit > 0 ? options.kernel_id_limit : std::numeric_limits<std::int64_t>::max();
          s.bind(2, t == n_threads - 1 ? last : hi);
          auto& mine = parts[static_cast<std::size_t>(t)];
          std::int64_t batch = 0, duration_total = 0;
          sqlite3_stmt* st = s.get();
          while (s.step()) {
            // Raw column calls: this loop is the load's hot path (each API call counts).
            const std::int64_t id = sqlite3_column_int64(st, 0);
            const RowId stream = sqlite3_column_int64(st, 1);
            if (stream < 0 || static_cast<std::size_t>(stream) >= track_of_stream.size() ||
                track_of_stream[static_cast<std::size_t>(stream)] < 0)
              fail(ProfileErrorKind::MalformedTable, path,
                   "table 'kernels' row id " + std::to_string(id) + " refers to stream id " + std::to_string(stream) +
                       ", which is not in 'streams'");
            if (sqlite3_column_type(st, 2) != SQLITE_INTEGER || sqlite3_column_type(st, 3) != SQLITE_INTEGER)
              fail(ProfileErrorKind::MalformedTable, path,
                   "table 'kernels' row id " + std::to_string(id) + " has a non-integer time");
            const TimeNs start = sqlite3_column_int64(st, 2);
            const TimeNs duration = sqlite3_column_int64(st, 3);
            if (!times_ok(start, duration, duration_total)) bad_times(start, duration, path, "kernels", id);
            const auto cat = sqlite3_column_int64(st, 6);
            if (cat < 0 || cat >= kKernelCategoryCount)
              fail(ProfileErrorKind::MalformedTable, path,
                   "table 'kernels' row id " + std::to_string(id) + " has unknown category " + std::to_string(cat));
            mine[static_cast<std::size_t>(track_of_stream[static_cast<std::size_t>(stream)])].push_back(
                {start, start + duration, check_name(sqlite3_column_int64(st, 4), "kernels", id), module_of(s, 5),
                 static_cast<std::uint32_t>(id), static_cast<KernelCategory>(cat), {}});
            if (++batch == kRowsBetweenChecks) {
              check_cancel(options);
              if (t == 0) progress.rows(batch * n_threads, "kernels");
              counts[static_cast<std::size_t>(t)] += batch;
              batch = 0;
            }
          }
          counts[static_cast<std::size_t>(t)] += batch;
          duration_totals[static_cast<std::size_t>(t)] = duration_total;
        } catch (...) {
          errors[static_cast<std::size_t>(t)] = std::current_exception();
        }
      };
      std::vector<std::thread> threads;
      for (int t = 1; t < n_threads; ++t) threads.emplace_back(worker, t);
      worker(0);
      for (auto& th : threads) th.join();
      for (auto& e : errors)
        if (e) std::rethrow_exception(e);
      std::int64_t duration_total = 0;
      for (auto d : duration_totals)
        if (!add_to_total(duration_total, d))
          fail(ProfileErrorKind::MalformedTable, path, "table 'kernels': durations add up to more than 2^62 ns");
      for (std::size_t tr = 0; tr < p.stream_tracks.size(); ++tr) {
        auto& dst = p.stream_tracks[tr].events;
        std::size_t total = 0;
        for (auto& part : parts) total += part[tr].size();
        dst.reserve(total);
        for (auto& part : parts) {
          dst.insert(dst.end(), part[tr].begin(), part[tr].end());
          std::vector<KernelEvent>().swap(part[tr]);
        }
      }
      for (auto c : counts) p.kernel_count += c;
      for (auto& t : p.stream_tracks) finish_track(t);
    }

    if (options.ranges) {
      std::map<std::tuple<int, RowId, RowId, int>, std::int32_t> track_of;
      sql::Stmt s(db.get(),
                  "SELECT id, rank, thread_id, stream_id, start_ns, duration_ns, name_id, kind, phase, module_id, depth"
                  " FROM ranges");
      std::tuple<int, RowId, RowId, int> last_key{-1, -2, -2, -1};
      RangeTrack* track = nullptr;
      std::int64_t batch = 0, duration_total = 0;
      while (s.step()) {
        const std::int64_t id = s.col_int(0);
        const std::int64_t depth = s.col_int(10);
        if (depth < 0 || depth > 4096)
          fail(ProfileErrorKind::MalformedTable, path,
               "table 'ranges' row id " + std::to_string(id) + " has depth " + std::to_string(depth));
        std::tuple<int, RowId, RowId, int> key{static_cast<int>(s.col_int(1)), s.col_int_or(2, kNoRow),
                                               s.col_int_or(3, kNoRow), static_cast<int>(depth)};
        if (key != last_key || !track) {
          auto [it, added] = track_of.try_emplace(key, static_cast<std::int32_t>(p.range_tracks.size()));
          if (added) {
            RangeTrack t;
            std::tie(t.rank, t.thread_id, t.stream_id, t.depth) = key;
            p.range_tracks.push_back(std::move(t));
          }
          track = &p.range_tracks[static_cast<std::size_t>(it->second)];
          last_key = key;
        }
        const TimeNs start = checked_start(s, 4, 5, duration_total, path, "ranges", 0);
        const auto kind = s.col_int(7), phase = s.col_int(8);
        if (kind < 0 || kind >= kRangeKindCount || phase < 0 || phase >= kRangePhaseCount)
          fail(ProfileErrorKind::MalformedTable, path,
               "table 'ranges' row id " + std::to_string(id) + " has an unknown kind or phase");
        track->events.push_back({start, start + s.col_int(5), check_name(s.col_int(6), "ranges", id),
                                 module_of(s, 9), static_cast<std::uint32_t>(id), static_cast<RangeKind>(kind),
                                 static_cast<RangePhase>(phase), {}});
        if (++batch == kRowsBetweenChecks) {
          progress.rows(batch, "ranges");
          batch = 0;
        }
        ++p.range_count;
      }
      progress.rows(batch, "ranges");
      lay_out_range_lanes(p.range_tracks);
      for (auto& t : p.range_tracks) finish_track(t);
    }

    if (options.collectives) {
      sql::Stmt s(db.get(),
                  "SELECT rank, start_ns, duration_ns, bytes, sequence, kernel_id, process_group_id, type, id, group_size"
                  " FROM collectives");
      std::int64_t duration_total = 0, bytes_total = 0;
      while (s.step()) {
        const TimeNs start = checked_start(s, 1, 2, duration_total, path, "collectives", 8);
        if (!bytes_ok(s.col_int(3), bytes_total)) bad_bytes(s.col_int(3), path, "collectives", "bytes", s.col_int(8));
        auto type = s.col_int(7);
        if (type < 0 || type >= kCollectiveTypeCount) type = 0;
        p.collectives.push_back({start, start + s.col_int(2), s.col_int(3), s.col_int_or(4, -1),
                                 s.col_int_or(5, -1), static_cast<std::int32_t>(s.col_int(0)),
                                 static_cast<std::int32_t>(s.col_int_or(6, -1)), static_cast<CollectiveType>(type),
                                 static_cast<std::int32_t>(std::clamp<std::int64_t>(s.col_int_or(9, 0), 0, 1 << 30))});
      }
      // By rank, then start: sorted here rather than by SQLite's ORDER BY (there is no index, so
      // SQLite sorted whole rows through its external sorter: ~0.7 s of CPU at 1.4 M collectives,
      // against ~0.1 s here); stable, so equal keys keep the file's order.
      std::stable_sort(p.collectives.begin(), p.collectives.end(), [](const CollectiveEvent& a, const CollectiveEvent& b) {
        return a.rank != b.rank ? a.rank < b.rank : a.start < b.start;
      });
    }

    if (options.memory) {
      sql::Stmt s(db.get(), "SELECT rank, time_ns, bytes FROM memory_events");
      // The loop reads no ids (a column per row); a refused row's is looked up by its values.
      const auto id_of = [&](TimeNs time, std::int64_t bytes) {
        sql::Stmt q(db.get(), "SELECT id FROM memory_events WHERE time_ns = ?1 AND bytes = ?2 LIMIT 1");
        q.bind(1, time);
        q.bind(2, bytes);
        return q.step() ? q.col_int(0) : std::int64_t{-1};
      };
      int last_rank = -1;
      RankModel* rm = nullptr;
      std::int64_t batch = 0, bytes_total = 0;  // the bound on the total bounds every running sum below
      while (s.step()) {
        const int r = static_cast<int>(s.col_int(0));
        const TimeNs time = s.col_int(1);
        const std::int64_t bytes = s.col_int(2);
        if (!time_in_bounds(time))
          fail(ProfileErrorKind::MalformedTable, path, row_of("memory_events", id_of(time, bytes)) + " has a time beyond 2^61 ns");
        if (!bytes_ok(bytes, bytes_total)) bad_bytes(bytes, path, "memory_events", "bytes", id_of(time, bytes));
        if (r != last_rank || !rm) {
          rm = &rank_for(r);
          last_rank = r;
        }
        rm->memory.push_back({time, bytes});  // value = delta until summed below
        ++p.memory_event_count;
        if (++batch == kRowsBetweenChecks) {
          progress.rows(batch, "memory");
          batch = 0;
        }
      }
      progress.rows(batch, "memory");
      for (auto& r : p.ranks) {
        std::stable_sort(r.memory.begin(), r.memory.end(),
                         [](const CounterPoint& a, const CounterPoint& b) { return a.time < b.time; });
        std::int64_t total = 0;
        for (auto& c : r.memory) c.value = (total += c.value);
        r.memory.shrink_to_fit();
      }
    }

    {
      sql::Stmt s(db.get(), "SELECT rank, number, start_ns, duration_ns, id FROM steps ORDER BY rank, start_ns");
      std::int64_t duration_total = 0;
      while (s.step()) {
        const TimeNs start = checked_start(s, 2, 3, duration_total, path, "steps", 4);
        rank_for(static_cast<int>(s.col_int(0))).steps.push_back({static_cast<int>(s.col_int(0)), s.col_int(1), start,
                                                  start + s.col_int(3)});
      }
    }
  } catch (const ProfileError& e) {
    rethrow_with_path(e, path);
  }

  // Ranks own their tracks; the time span covers every event.
  std::int32_t idx = 0;
  bool any = false;
  auto extend = [&](TimeNs a, TimeNs b) {
    p.time_begin = any ? std::min(p.time_begin, a) : a;
    p.time_end = any ? std::max(p.time_end, b) : b;
    any = true;
  };
  for (auto& t : p.stream_tracks) rank_for(t.rank);
  for (auto& t : p.range_tracks) rank_for(t.rank);
  for (auto& r : p.ranks) {
    r.stream_tracks.clear();
    r.range_tracks.clear();
  }
  idx = 0;
  for (auto& t : p.stream_tracks) {
    rank_for(t.rank).stream_tracks.push_back(idx++);
    if (!t.events.empty()) {
      TimeNs last_end = t.events.front().end;
      for (const auto& e : t.events) last_end = std::max(last_end, e.end);
      extend(t.events.front().start, last_end);
    }
  }
  // Range tracks: by lane, then depth, so views can draw nesting top-down.
  std::vector<std::int32_t> order(p.range_tracks.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::int32_t>(i);
  std::sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
    const auto& x = p.range_tracks[static_cast<std::size_t>(a)];
    const auto& y = p.range_tracks[static_cast<std::size_t>(b)];
    return std::tie(x.rank, x.stream_id, x.thread_id, x.operators, x.depth) < std::tie(y.rank, y.stream_id, y.thread_id, y.operators, y.depth);
  });
  for (std::int32_t i : order) {
    auto& t = p.range_tracks[static_cast<std::size_t>(i)];
    rank_for(t.rank).range_tracks.push_back(i);
    if (!t.events.empty()) {
      TimeNs last_end = t.events.front().end;
      for (const auto& e : t.events) last_end = std::max(last_end, e.end);
      extend(t.events.front().start, last_end);
    }
  }
  // Memory counters too: a profile of memory alone (an imported PyTorch memory snapshot) has no
  // kernels or ranges, and its views still need the time the allocations span.
  for (const auto& r : p.ranks)
    if (!r.memory.empty()) extend(r.memory.front().time, r.memory.back().time);
  if (options.progress) options.progress(1.0, "done");
  return p;
}

}  // namespace ss
