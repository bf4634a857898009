// Nsight Systems SQLite export -> profile. See docs/importers-nsys.md for the table mapping.
//
// Order of work: ranks (processes with kernels) -> NVTX ranges per thread (so that modules, phases
// and NCCL payloads are known) -> streams -> kernels / memcpy / memset (attributed to modules
// through the runtime launch that shares their correlation id) -> collectives -> memory events.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <tuple>
#include <limits>
#include <map>
#include <unordered_map>

#include "profiler/common/nccl_names.h"
#include "profiler/import/common/stream_kind.h"
#include "profiler/import/import.h"
#include "profiler/import/nsys/nccl_payload.h"
#include "profiler/import/nsys/nsys_db.h"
#include "profiler/import/nsys/nsys_lanes.h"
#include "profiler/import/nsys/range_names.h"

namespace ss::import {

namespace nsys {
namespace {

constexpr const char* kKernels = "CUPTI_ACTIVITY_KIND_KERNEL";
constexpr const char* kRuntime = "CUPTI_ACTIVITY_KIND_RUNTIME";
constexpr const char* kMemcpy = "CUPTI_ACTIVITY_KIND_MEMCPY";
constexpr const char* kMemset = "CUPTI_ACTIVITY_KIND_MEMSET";
constexpr const char* kNvtx = "NVTX_EVENTS";
constexpr const char* kMemUsage = "CUDA_GPU_MEMORY_USAGE_EVENTS";

struct Launch {
  std::int64_t global_tid = 0;
  TimeNs start = 0;  // nsys clock
  TimeNs end = 0;
  std::int64_t name_id = 0;  // StringIds.id of the API call
};

struct StreamKey {
  int rank;
  std::int64_t device, stream;
  bool operator<(const StreamKey& o) const {
    return std::tie(rank, device, stream) < std::tie(o.rank, o.device, o.stream);
  }
};

struct StreamUse {
  std::int64_t kernels = 0, nccl = 0, copies = 0;
  RowId id = kNoRow;
};

class Importer {
 public:
  Importer(const std::string& path, ImportContext& ctx) : db_(path), ctx_(ctx), w_(ctx.writer) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) file_bytes_ = static_cast<std::uint64_t>(st.st_size);
  }

  void run() {
    require_kernel_columns();
    total_rows_ = db_.count_rows(kKernels) + db_.count_rows(kNvtx) + db_.count_rows(kRuntime) +
                  db_.count_rows(kMemcpy) + db_.count_rows(kMemset) + db_.count_rows(kMemUsage);
    if (db_.count_rows(kKernels) == 0)
      throw ImportError("no CUDA kernels in '" + db_.path() +
                        "' (CUPTI_ACTIVITY_KIND_KERNEL is empty); profile with `nsys profile --trace=cuda,nvtx`");
    set_clock();
    payload_schemas_.load(db_);
    load_ranks();
    load_nvtx();
    assign_ranks();
    write_ranks_and_threads();
    load_runtime();
    lanes_.write(ctx_, offset_);
    write_streams();
    import_kernels();
    import_copies(kMemcpy, KernelCategory::Memcpy);
    import_copies(kMemset, KernelCategory::Memset);
    import_memory_events();
    ctx_.progress(db_.path(), file_bytes_, file_bytes_);
  }

 private:
  // --- schema -------------------------------------------------------------------------------------
  void require_kernel_columns() {
    for (const char* c : {"start", "end", "globalPid", "correlationId"})
      if (!db_.has_column(kKernels, c))
        db_.fail(std::string("CUPTI_ACTIVITY_KIND_KERNEL has no '") + c + "' column; is this an nsys export?");
    kernel_name_col_ = db_.pick_column(kKernels, {"demangledName", "shortName", "mangledName", "nameId", "name"});
    if (kernel_name_col_.empty())
      db_.fail("CUPTI_ACTIVITY_KIND_KERNEL has no kernel name column (demangledName / shortName / mangledName)");
  }

  // --- clock --------------------------------------------------------------------------------------
  void set_clock() {
    TimeNs session_utc = 0;
    if (db_.has_column("TARGET_INFO_SESSION_START_TIME", "utcEpochNs")) {
      sql::Stmt s(db_.get(), "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1");
      if (s.step() && !s.col_null(0)) session_utc = s.col_int(0);
    }
    sql::Stmt m(db_.get(), "SELECT min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL");
    TimeNs first = (m.step() && !m.col_null(0)) ? m.col_int(0) : 0;
    TimeNs first_utc = 0;
    if (__builtin_add_overflow(session_utc, first, &first_utc))
      db_.fail("session start + first kernel start overflows 64-bit nanoseconds");
    const TimeNs origin = ctx_.time_origin_unix_ns(first_utc);
    if (__builtin_sub_overflow(session_utc, origin, &offset_) || !in_range(offset_))
      db_.fail("its clock is too far from the first input's to share one profile clock");
  }

  // Profile times stay within +-2^61 ns so that differences (durations) cannot overflow; a
  // timestamp outside (damaged input) makes its event skipped.
  static bool in_range(TimeNs t) { return t > -kTimeLimit && t < kTimeLimit; }
  static constexpr TimeNs kTimeLimit = TimeNs{1} << 61;
  std::optional<TimeNs> rel(TimeNs nsys_time) const {
    TimeNs v = 0;
    if (__builtin_add_overflow(nsys_time, offset_, &v) || !in_range(v)) return std::nullopt;
    return v;
  }
  // Start and end of an activity row (columns 0 and 1), or nullopt with the reason counted.
  std::optional<std::pair<TimeNs, TimeNs>> interval(const sql::Stmt& s, int rank, const std::string& what) {
    const auto start = rel(s.col_int(0));
    const auto end = s.col_null(1) ? std::nullopt : rel(s.col_int(1));
    if (!start || !end) {
      ctx_.skip(rank, "nsys: " + what + (s.col_null(1) ? " without an end time" : " with a timestamp out of range"));
      return std::nullopt;
    }
    if (*end < *start) {
      ctx_.skip(rank, "nsys: " + what + " with negative duration");
      return std::nullopt;
    }
    return std::make_pair(*start, *end);
  }

  // --- ranks --------------------------------------------------------------------------------------
  void load_ranks() {
    // Processes as ranks: every process that ran a kernel, with its most used device.
    sql::Stmt s(db_.get(), "SELECT globalPid, " + db_.column_or_null(kKernels, "deviceId") +
                               ", count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY 1, 2 ORDER BY 1, 3 DESC");
    while (s.step()) {
      const std::int64_t pid = process_key(s.col_int(0));
      if (proc_.count(pid)) continue;
      Proc p;
      p.pid = pid;
      p.vm = s.col_int(0) >> 48;  // the target machine
      p.device = s.col_int_or(1, -1);
      proc_.emplace(pid, p);
    }
    if (db_.has_column("PROCESSES", "globalPid") && db_.has_column("PROCESSES", "name")) {
      sql::Stmt n(db_.get(), "SELECT globalPid, name FROM PROCESSES");
      while (n.step())
        if (auto it = proc_.find(process_key(n.col_int(0))); it != proc_.end()) it->second.name = column_utf8(n.get(), 1);
    }
  }

  // A rank named by the process itself (NCCL ncclCommInitRank payload) wins over pid order.
  void assign_ranks() {
    std::set<std::int64_t> discovered;
    bool usable = true;
    for (auto& [pid, p] : proc_) {
      if (!p.discovered_rank || *p.discovered_rank < 0 || *p.discovered_rank > kMaxRank ||
          ctx_.rank_claimed(int(*p.discovered_rank)) ||
          !discovered.insert(*p.discovered_rank).second)
        usable = false;
    }
    for (auto& [pid, p] : proc_) {  // std::map: pid order
      p.rank = usable ? int(*p.discovered_rank) : ctx_.next_free_rank();
      ctx_.claim_rank(p.rank, db_.path());
      rank_of_pid_[pid] = p.rank;
    }
    // NVTX skips were counted per process before the ranks were known.
    for (const auto& [key, n] : nvtx_skips_) ctx_.skip(rank_of_pid_.at(key.first), key.second, n);
    lanes_.set_ranks(rank_of_pid_);
  }

  void write_ranks_and_threads() {
    const bool gpu_table = db_.has_column("TARGET_INFO_GPU", "id");
    // Host names per target machine (globalVid's high bits = globalPid's high bits).
    std::map<std::int64_t, std::string> hosts;
    if (db_.has_column("TARGET_INFO_SYSTEM_ENV", "globalVid") && db_.has_column("TARGET_INFO_SYSTEM_ENV", "name") &&
        db_.has_column("TARGET_INFO_SYSTEM_ENV", "value")) {
      sql::Stmt h(db_.get(), "SELECT globalVid, value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname'");
      while (h.step()) hosts[h.col_int(0) >> 48] = column_utf8(h.get(), 1);
    }
    for (auto& [pid, p] : proc_) {
      RankInfo r;
      r.rank = p.rank;
      r.pid = pid & 0xFFFFFF;  // the key is (machine << 24) | pid
      if (auto h = hosts.find(p.vm); h != hosts.end()) r.host = h->second;
      r.device_index = static_cast<int>(p.device);
      r.world_size = world_size_ > 0 ? world_size_ : static_cast<int>(proc_.size());
      if (gpu_table) fill_gpu(r, p.device);
      w_.add_rank(r);
    }
    // Thread names for the lanes that carry ranges.
    std::map<std::int64_t, std::string> thread_names;
    if (db_.has_column("ThreadNames", "nameId") && db_.has_column("ThreadNames", "globalTid")) {
      sql::Stmt s(db_.get(), "SELECT globalTid, nameId FROM ThreadNames");
      while (s.step()) thread_names[s.col_int(0)] = db_.string_by_id(s.col_int(1));
    }
    lanes_.set_thread_names(std::move(thread_names));
  }

  void fill_gpu(RankInfo& r, std::int64_t device) {
    auto col = [&](const char* c) { return db_.column_or_null("TARGET_INFO_GPU", c); };
    const std::string join = db_.has_column("TARGET_INFO_GPU", "cuDevice") ? "(id = ?1 OR cuDevice = ?1)" : "id = ?1";
    sql::Stmt s(db_.get(), "SELECT " + col("name") + ", " + col("totalMemory") + ", " + col("smCount") + ", " +
                               col("computeMajor") + ", " + col("computeMinor") + " FROM TARGET_INFO_GPU WHERE " +
                               join + " ORDER BY (id = ?1) DESC LIMIT 1");
    s.bind(1, device);
    if (!s.step()) return;
    r.gpu_name = column_utf8(s.get(), 0);
    r.gpu_memory_bytes = s.col_int_or(1, 0);
    r.sm_count = static_cast<int>(s.col_int_or(2, 0));
    r.compute_major = static_cast<int>(s.col_int_or(3, 0));
    r.compute_minor = static_cast<int>(s.col_int_or(4, 0));
  }

  // --- NVTX ---------------------------------------------------------------------------------------
  void load_nvtx() {
    if (!db_.has_table(kNvtx)) return;
    for (const char* c : {"start", "eventType", "globalTid"})
      if (!db_.has_column(kNvtx, c)) {
        ctx_.skip(-1, std::string("nsys: NVTX_EVENTS has no '") + c + "' column", db_.count_rows(kNvtx));
        return;
      }
    const auto push_pop = db_.enum_value("ENUM_NSYS_EVENT_TYPE", "NvtxPushPopRange");
    const auto start_end = db_.enum_value("ENUM_NSYS_EVENT_TYPE", "NvtxStartEndRange");
    const auto domain_create = db_.enum_value("ENUM_NSYS_EVENT_TYPE", "NvtxDomainCreate");
    if (!push_pop && !start_end) {
      ctx_.skip(-1, "nsys: NVTX event types unknown (no ENUM_NSYS_EVENT_TYPE labels)", db_.count_rows(kNvtx));
      return;
    }
    const std::string text = db_.column_or_null(kNvtx, "text");
    const std::string text_id = db_.column_or_null(kNvtx, "textId");
    const std::string end = db_.column_or_null(kNvtx, "end");
    const std::string domain = db_.column_or_null(kNvtx, "domainId");
    const std::string blob = db_.column_or_null(kNvtx, "binaryData");
    const std::string json = db_.pick_column(kNvtx, {"jsonText"});
    const std::string json_id = db_.pick_column(kNvtx, {"jsonTextId"});

    // Domain names: DomainCreate rows (text = the name), per process.
    std::map<std::pair<std::int64_t, std::int64_t>, std::string> domains;
    if (domain_create) {
      sql::Stmt d(db_.get(), "SELECT globalTid, " + domain + ", " + text + ", " + text_id +
                                 " FROM NVTX_EVENTS WHERE eventType = ?");
      d.bind(1, *domain_create);
      while (d.step()) {
        std::string name = d.col_null(2) ? (d.col_null(3) ? "" : db_.string_by_id(d.col_int(3))) : column_utf8(d.get(), 2);
        domains[{process_key(d.col_int(0)), d.col_int_or(1, 0)}] = name;
      }
    }

    sql::Stmt s(db_.get(), "SELECT start, " + end + ", eventType, globalTid, " + text + ", " + text_id + ", " +
                               domain + ", " + blob + ", " + (json.empty() ? "NULL" : json) + ", " +
                               (json_id.empty() ? "NULL" : json_id) + " FROM NVTX_EVENTS");
    std::int64_t rows = 0;
    while (s.step()) {
      if (++rows % 65536 == 0) advance(65536);
      const std::int64_t type = s.col_int(2);
      if (domain_create && type == *domain_create) continue;
      const std::int64_t gtid = s.col_int(3);
      const std::int64_t pid = process_key(gtid);
      auto proc = proc_.find(pid);
      if (proc == proc_.end()) {
        ctx_.skip(-1, "nsys: NVTX event of a process without CUDA kernels");
        continue;
      }
      if (!(push_pop && type == *push_pop) && !(start_end && type == *start_end)) {
        nvtx_skips_[{pid, "nsys: NVTX event that is not a range (mark, counter, ...)"}]++;
        continue;
      }
      if (s.col_null(1)) {
        nvtx_skips_[{pid, "nsys: NVTX range without an end (still open when capture stopped)"}]++;
        continue;
      }
      NvtxRange r;
      r.pid = pid;
      r.global_tid = gtid;
      r.start = s.col_int(0);
      r.end = s.col_int(1);
      if (r.end < r.start) {
        nvtx_skips_[{pid, "nsys: NVTX range with negative duration"}]++;
        continue;
      }
      if (!rel(r.start) || !rel(r.end)) {  // Lanes adds offset_ to both
        nvtx_skips_[{pid, "nsys: NVTX range with a timestamp out of range"}]++;
        continue;
      }
      std::string name = !s.col_null(4) ? column_utf8(s.get(), 4) : (s.col_null(5) ? std::string() : db_.string_by_id(s.col_int(5)));
      r.name = std::string(strip_emit_nvtx_suffix(name));
      const std::int64_t dom = s.col_int_or(6, 0);
      if (dom != 0) {
        auto it = domains.find({pid, dom});
        // Without the DomainCreate row (a cut window), NCCL's API names identify its domain.
        r.nccl = it != domains.end() ? it->second == "NCCL" : r.name.rfind("nccl", 0) == 0;
      }
      if (r.nccl) {
        NcclPayload p;
        if (!s.col_null(7)) {
          const void* b = sqlite3_column_blob(s.get(), 7);
          const int n = sqlite3_column_bytes(s.get(), 7);
          if (b && n > 0)
            p = payload_schemas_.decode_blob(dom, std::string_view(static_cast<const char*>(b), std::size_t(n)), r.name);
        }
        if (p.empty() && !s.col_null(8)) p = decode_json_payload(column_utf8(s.get(), 8));
        if (p.empty() && !s.col_null(9)) p = decode_json_payload(db_.string_by_id(s.col_int(9)));
        r.payload = p;
        if (!is_comm_creation(r.name)) p.rank = p.nranks = std::nullopt;  // only communicator creation names them
        if (p.rank) {
          proc->second.discovered_rank = p.rank;
          if (p.nranks && *p.nranks > 0 && *p.nranks <= kMaxRank + 1)
            world_size_ = std::max(world_size_, static_cast<int>(*p.nranks));
        }
      }
      lanes_.add(std::move(r));
    }
    advance(rows % 65536);
  }

  void load_runtime() {
    if (!db_.has_column(kRuntime, "correlationId") || !db_.has_column(kRuntime, "globalTid")) return;
    sql::Stmt s(db_.get(), "SELECT globalTid, correlationId, start, " + db_.column_or_null(kRuntime, "end") + ", " +
                               db_.column_or_null(kRuntime, "nameId") + " FROM CUPTI_ACTIVITY_KIND_RUNTIME");
    std::int64_t rows = 0;
    while (s.step()) {
      if (++rows % 65536 == 0) advance(65536);
      const std::int64_t gtid = s.col_int(0);
      auto it = rank_of_pid_.find(process_key(gtid));
      if (it == rank_of_pid_.end()) continue;
      launches_[it->second][s.col_int(1)] = Launch{gtid, s.col_int(2), s.col_int_or(3, s.col_int(2)), s.col_int_or(4, 0)};
    }
  }

  // The launching call of a kernel / copy / memset, on the profile clock.
  void write_launch(RowId kernel, int rank, const Launch& launch) {
    const auto start = rel(launch.start), end = rel(launch.end);
    if (!start || !end || *end < *start) return;
    LaunchRow l;
    l.kernel = kernel;
    l.rank = rank;
    l.thread = lanes_.thread_row(ctx_, launch.global_tid);
    l.start = *start;
    l.end = *end;
    if (launch.name_id > 0) {
      auto it = api_names_.find(launch.name_id);
      if (it == api_names_.end()) it = api_names_.emplace(launch.name_id, w_.intern(db_.string_by_id(launch.name_id))).first;
      l.name = it->second;
    }
    w_.add_launch(l);
  }

  const Launch* launch_of(int rank, std::int64_t correlation) const {
    auto r = launches_.find(rank);
    if (r == launches_.end()) return nullptr;
    auto it = r->second.find(correlation);
    return it == r->second.end() ? nullptr : &it->second;
  }

  // --- streams ------------------------------------------------------------------------------------
  void count_stream_use(const std::string& table, bool kernels) {
    if (!db_.has_column(table, "globalPid")) return;
    const std::string dev = db_.column_or_null(table, "deviceId");
    const std::string str = db_.column_or_null(table, "streamId");
    const std::string name = kernels ? kernel_name_col_ : std::string("NULL");
    sql::Stmt s(db_.get(), "SELECT globalPid, " + dev + ", " + str + ", " + name + ", count(*) FROM " + table +
                               " GROUP BY 1, 2, 3, 4");
    while (s.step()) {
      auto rk = rank_of_pid_.find(process_key(s.col_int(0)));
      if (rk == rank_of_pid_.end()) continue;
      StreamUse& u = streams_[StreamKey{rk->second, s.col_int_or(1, 0), s.col_int_or(2, 0)}];
      if (!kernels) {
        u.copies += s.col_int(4);
        continue;
      }
      u.kernels += s.col_int(4);
      if (kernel_info(s.col_int_or(3, 0)).nccl.is_comm) u.nccl += s.col_int(4);
    }
  }

  void write_streams() {
    count_stream_use(kKernels, true);
    count_stream_use(kMemcpy, false);
    count_stream_use(kMemset, false);
    for (auto& [key, use] : streams_) {
      StreamInfo si;
      si.rank = key.rank;
      si.device = static_cast<int>(key.device);
      si.native_id = key.stream;
      si.kind = stream_kind_of(use.kernels, use.nccl);  // the 2-GPU sample's one stream: compute
      si.name = "stream " + std::to_string(key.stream);
      use.id = w_.add_stream(si);
    }
  }

  RowId stream_id(int rank, std::int64_t device, std::int64_t stream) const {
    auto it = streams_.find(StreamKey{rank, device, stream});
    return it == streams_.end() ? kNoRow : it->second.id;
  }

  // --- kernels ------------------------------------------------------------------------------------
  struct KernelName {
    std::uint32_t id = 0;
    NcclKernelInfo nccl;
    std::uint32_t dtype = 0;
  };

  const KernelName& kernel_info(std::int64_t string_id) {
    auto it = kernel_names_.find(string_id);
    if (it != kernel_names_.end()) return it->second;
    KernelName k;
    const std::string& name = db_.string_by_id(string_id);
    k.id = w_.intern(name);
    k.nccl = classify_nccl_kernel(name);
    if (k.nccl.is_comm && k.nccl.type == CollectiveType::Unknown && k.nccl.collective == "SendRecv")
      k.nccl.type = CollectiveType::SendRecv;
    if (!k.nccl.dtype.empty()) k.dtype = w_.intern(k.nccl.dtype);
    return kernel_names_.emplace(string_id, k).first->second;
  }

  void import_kernels() {
    auto col = [&](const char* c) { return db_.column_or_null(kKernels, c); };
    sql::Stmt s(db_.get(), "SELECT start, end, " + col("deviceId") + ", " + col("streamId") + ", correlationId, globalPid, " +
                               kernel_name_col_ + ", " + col("gridX") + ", " + col("gridY") + ", " + col("gridZ") + ", " +
                               col("blockX") + ", " + col("blockY") + ", " + col("blockZ") + ", " +
                               col("staticSharedMemory") + ", " + col("dynamicSharedMemory") + ", " +
                               col("registersPerThread") + " FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start");
    std::map<std::pair<int, std::uint64_t>, std::int64_t> sequence;  // (rank, comm) -> next
    std::int64_t rows = 0;
    while (s.step()) {
      if (++rows % 65536 == 0) advance(65536);
      auto rk = rank_of_pid_.find(process_key(s.col_int(5)));
      if (rk == rank_of_pid_.end()) continue;  // cannot happen: ranks come from this table
      const int rank = rk->second;
      KernelRow k;
      k.rank = rank;
      const auto times = interval(s, rank, "kernel");
      if (!times) continue;
      k.start = times->first;
      k.end = times->second;
      k.stream = stream_id(rank, s.col_int_or(2, 0), s.col_int_or(3, 0));
      k.correlation = s.col_int(4);
      const KernelName& kn = kernel_info(s.col_int_or(6, 0));
      k.name = kn.id;
      LaunchConfig lc;
      lc.grid_x = static_cast<std::int32_t>(s.col_int_or(7, 0));
      lc.grid_y = static_cast<std::int32_t>(s.col_int_or(8, 0));
      lc.grid_z = static_cast<std::int32_t>(s.col_int_or(9, 0));
      lc.block_x = static_cast<std::int32_t>(s.col_int_or(10, 0));
      lc.block_y = static_cast<std::int32_t>(s.col_int_or(11, 0));
      lc.block_z = static_cast<std::int32_t>(s.col_int_or(12, 0));
      std::int64_t shared = 0;
      if (__builtin_add_overflow(s.col_int_or(13, 0), s.col_int_or(14, 0), &shared)) shared = -1;
      lc.shared_mem_bytes = static_cast<std::int32_t>(shared);
      lc.registers_per_thread = static_cast<std::int32_t>(s.col_int_or(15, 0));
      k.launch_config = w_.launch_config(lc);
      k.category = kn.nccl.is_comm ? KernelCategory::Collective : KernelCategory::Compute;
      const Launch* launch = launch_of(rank, k.correlation);
      if (launch) k.module = lanes_.module_at(launch->global_tid, launch->start);
      const RowId kernel = w_.add_kernel(k);
      if (launch) write_launch(kernel, rank, *launch);
      if (!kn.nccl.is_comm) continue;

      CollectiveRow c;
      c.rank = rank;
      c.kernel = kernel;
      c.type = kn.nccl.type;
      c.dtype = kn.dtype;
      c.start = k.start;
      c.end = k.end;
      std::uint64_t comm = 0;
      if (launch) {
        const NcclPayload p = lanes_.nccl_payload_at(launch->global_tid, launch->start);
        if (p.bytes) c.bytes = *p.bytes;
        if (p.comm) {
          comm = *p.comm;
          c.process_group = process_group(*p.comm);
          c.group_size = lanes_.comm_size(*p.comm);
        }
      }
      c.sequence = sequence[{rank, comm}]++;
      w_.add_collective(c);
    }
    advance(rows % 65536);
  }

  // One process group per NCCL communicator, shared across the inputs of one import.
  RowId process_group(std::uint64_t comm) {
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%016llx", static_cast<unsigned long long>(comm));
    const std::string key = std::string(hex) + "|";
    auto it = ctx_.process_group_ids.find(key);
    if (it != ctx_.process_group_ids.end()) return it->second;
    ProcessGroupRow g;
    g.name = hex;
    g.description = "NCCL communicator";
    g.size = lanes_.comm_size(comm);
    g.backend = "nccl";
    return ctx_.process_group_ids[key] = w_.add_process_group(g);
  }

  void import_copies(const char* table, KernelCategory category) {
    if (!db_.has_table(table)) return;
    for (const char* c : {"start", "end", "globalPid"})
      if (!db_.has_column(table, c)) {
        ctx_.skip(-1, std::string("nsys: ") + table + " has no '" + c + "' column", db_.count_rows(table));
        return;
      }
    auto col = [&](const char* c) { return db_.column_or_null(table, c); };
    const bool memcpy = category == KernelCategory::Memcpy;
    sql::Stmt s(db_.get(), "SELECT start, end, " + col("deviceId") + ", " + col("streamId") + ", " + col("correlationId") +
                               ", globalPid, " + col("bytes") + ", " + (memcpy ? col("copyKind") : std::string("NULL")) +
                               " FROM " + table + " ORDER BY start");
    std::map<std::int64_t, std::uint32_t> names;  // copyKind -> interned "Memcpy Device-to-Device"
    const std::uint32_t memset_name = w_.intern("Memset");
    std::int64_t rows = 0;
    while (s.step()) {
      if (++rows % 65536 == 0) advance(65536);
      auto rk = rank_of_pid_.find(process_key(s.col_int(5)));
      if (rk == rank_of_pid_.end()) {
        ctx_.skip(-1, std::string("nsys: ") + (memcpy ? "memcpy" : "memset") + " of a process without CUDA kernels");
        continue;
      }
      KernelRow k;
      k.rank = rk->second;
      const auto times = interval(s, k.rank, memcpy ? "memcpy" : "memset");
      if (!times) continue;
      k.start = times->first;
      k.end = times->second;
      k.stream = stream_id(k.rank, s.col_int_or(2, 0), s.col_int_or(3, 0));
      k.correlation = s.col_int_or(4, 0);
      k.bytes = s.col_int_or(6, 0);
      k.category = category;
      if (memcpy) {
        const std::int64_t kind = s.col_int_or(7, -1);
        auto it = names.find(kind);
        if (it == names.end()) {
          const std::string label = kind >= 0 ? db_.enum_label("ENUM_CUDA_MEMCPY_OPER", kind) : std::string();
          it = names.emplace(kind, w_.intern(label.empty() ? "Memcpy" : "Memcpy " + label)).first;
        }
        k.name = it->second;
      } else {
        k.name = memset_name;
      }
      const Launch* launch = launch_of(k.rank, k.correlation);
      if (launch) k.module = lanes_.module_at(launch->global_tid, launch->start);
      const RowId id = w_.add_kernel(k);
      if (launch) write_launch(id, k.rank, *launch);
    }
    advance(rows % 65536);
  }

  // --- memory -------------------------------------------------------------------------------------
  void import_memory_events() {
    if (!db_.has_table(kMemUsage)) return;
    const std::string op = db_.pick_column(kMemUsage, {"memoryOperationType", "memoryOperation"});
    for (const char* c : {"start", "globalPid", "bytes"})
      if (!db_.has_column(kMemUsage, c) || op.empty()) {
        ctx_.skip(-1, "nsys: CUDA_GPU_MEMORY_USAGE_EVENTS lacks start / globalPid / bytes / memoryOperationType",
                  db_.count_rows(kMemUsage));
        return;
      }
    const auto alloc = db_.enum_value("ENUM_CUDA_DEV_MEM_EVENT_OPER", "Allocation");
    const auto dealloc = db_.enum_value("ENUM_CUDA_DEV_MEM_EVENT_OPER", "Deallocation");
    auto col = [&](const char* c) { return db_.column_or_null(kMemUsage, c); };
    sql::Stmt s(db_.get(), "SELECT start, globalPid, " + col("deviceId") + ", " + col("address") + ", bytes, " + op + ", " +
                               col("streamId") + " FROM CUDA_GPU_MEMORY_USAGE_EVENTS ORDER BY start");
    std::int64_t rows = 0;
    while (s.step()) {
      if (++rows % 65536 == 0) advance(65536);
      auto rk = rank_of_pid_.find(process_key(s.col_int(1)));
      if (rk == rank_of_pid_.end()) {
        ctx_.skip(-1, "nsys: GPU memory event of a process without CUDA kernels");
        continue;
      }
      const std::int64_t o = s.col_int_or(5, -1);
      const int sign = (alloc && o == *alloc) ? 1 : (dealloc && o == *dealloc) ? -1 : 0;
      if (sign == 0) {
        ctx_.skip(rk->second, "nsys: GPU memory event that is neither Allocation nor Deallocation");
        continue;
      }
      MemoryEventRow m;
      m.rank = rk->second;
      const auto time = rel(s.col_int(0));
      if (!time) {
        ctx_.skip(m.rank, "nsys: GPU memory event with a timestamp out of range");
        continue;
      }
      m.time = *time;
      m.address = s.col_int_or(3, 0);
      const std::int64_t b = s.col_int_or(4, 0);
      if (b == std::numeric_limits<std::int64_t>::min()) {
        ctx_.skip(rk->second, "nsys: GPU memory event with an invalid size");
        continue;
      }
      m.bytes = sign * (b < 0 ? -b : b);
      m.module = lanes_.module_on_rank_at(m.rank, s.col_int(0));
      if (!s.col_null(6)) m.stream = stream_id(m.rank, s.col_int_or(2, 0), s.col_int(6));
      w_.add_memory_event(m);
    }
    advance(rows % 65536);
  }

  // Progress over all tables, by rows read.
  void advance(std::int64_t rows) {
    done_rows_ += rows;
    if (total_rows_ > 0)
      ctx_.progress(db_.path(),
                    std::min<std::uint64_t>(file_bytes_, static_cast<std::uint64_t>(double(file_bytes_) * double(done_rows_) /
                                                                                   double(total_rows_))),
                    file_bytes_);
  }

  static constexpr std::int64_t kMaxRank = 1 << 20;  // larger "ranks" in a payload are damage

  struct Proc {
    std::int64_t pid = 0;  // process key: globalPid >> 24 (machine and pid)
    std::int64_t vm = 0;  // globalPid >> 48: the target machine
    std::int64_t device = -1;
    std::string name;
    std::optional<std::int64_t> discovered_rank;
    int rank = 0;
  };

  NsysDb db_;
  ImportContext& ctx_;
  ProfileWriter& w_;
  std::uint64_t file_bytes_ = 0;
  std::int64_t total_rows_ = 0, done_rows_ = 0;
  std::string kernel_name_col_;
  TimeNs offset_ = 0;
  int world_size_ = 0;
  std::map<std::int64_t, Proc> proc_;
  std::map<std::int64_t, int> rank_of_pid_;  // by process key
  std::map<std::pair<std::int64_t, std::string>, std::int64_t> nvtx_skips_;  // (pid, reason) -> count
  std::unordered_map<int, std::unordered_map<std::int64_t, Launch>> launches_;
  std::unordered_map<std::int64_t, std::uint32_t> api_names_;  // StringIds.id -> interned
  std::map<StreamKey, StreamUse> streams_;
  std::unordered_map<std::int64_t, KernelName> kernel_names_;
  NcclPayloadSchemas payload_schemas_;
  Lanes lanes_;
};

}  // namespace
}  // namespace nsys

void import_nsys(const std::string& path, ImportContext& ctx) {
  try {
    nsys::Importer(path, ctx).run();
  } catch (const ImportError&) {
    throw;
  } catch (const ProfileError& e) {
    // SQLite errors while reading: a damaged or truncated export.
    throw ImportError("'" + path + "': cannot read this Nsight Systems export (damaged or truncated?): " + e.what());
  }
}

}  // namespace ss::import
