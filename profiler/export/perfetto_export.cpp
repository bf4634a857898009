#include <cinttypes>
#include <cstdio>
#include <map>
#include <unordered_map>

#include "profiler/export/atomic_output.h"
#include "profiler/export/export.h"
#include "storage/json_writer.h"
#include "storage/profile_reader.h"

namespace ss::exporting {
namespace {

// Chrome-trace times are microseconds; ns keep their precision as 3 decimals.
std::string us(TimeNs ns) {
  char b[48];
  const bool neg = ns < 0;
  const std::uint64_t a = neg ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
  std::snprintf(b, sizeof b, "%s%" PRIu64 ".%03" PRIu64, neg ? "-" : "", a / 1000, a % 1000);
  return b;
}

// Thread ids inside a rank's process: one id space per kind of lane.
constexpr std::int64_t kStreamTid = 1'000'000;
constexpr std::int64_t kCpuLaneTid = 2'000'000;
constexpr std::int64_t kGpuLaneTid = 3'000'000;
constexpr std::int64_t kStepsTid = 4'000'000;

struct GroupInfo {
  std::string name, description;
};

class PerfettoWriter {
 public:
  PerfettoWriter(const Profile& p, std::ostream& o, sql::Db& db) : p_(p), j_(o, false), db_(db) {}

  PerfettoStats run() {
    load_side_tables();
    j_.begin_object();
    j_.kv("displayTimeUnit", "ns");
    j_.key("otherData").begin_object().kv("source", "shardscope export").kv("profile", p_.path).end_object();
    j_.key("traceEvents").begin_array();
    for (const auto& r : p_.ranks) write_rank_metadata(r);
    write_kernels();
    write_ranges();
    write_memory_and_steps();
    j_.end_array();
    j_.end_object();
    return stats_;
  }

 private:
  void load_side_tables() {
    sql::Stmt g(db_.get(), "SELECT id, coalesce(name, ''), coalesce(description, '') FROM process_groups");
    while (g.step()) groups_[g.col_int(0)] = {g.col_text(1), g.col_text(2)};
    sql::Stmt t(db_.get(), "SELECT id, rank, coalesce(tid, 0), coalesce(name, '') FROM threads");
    while (t.step()) threads_[t.col_int(0)] = {t.col_int(2), t.col_text(3)};
    for (std::size_t i = 0; i < p_.collectives.size(); ++i)
      if (p_.collectives[i].kernel_id >= 0) coll_by_kernel_[p_.collectives[i].kernel_id] = i;
  }

  void meta(const char* what, int pid, std::int64_t tid, const std::string& name) {
    j_.begin_object().kv("ph", "M").kv("name", what).kv("pid", pid).kv("tid", tid);
    j_.key("args").begin_object().kv("name", name).end_object().end_object();
  }
  void sort_index(const char* what, int pid, std::int64_t tid, std::int64_t index) {
    j_.begin_object().kv("ph", "M").kv("name", what).kv("pid", pid).kv("tid", tid);
    j_.key("args").begin_object().kv("sort_index", index).end_object().end_object();
  }

  void write_rank_metadata(const RankModel& r) {
    std::string name = "rank " + std::to_string(r.info.rank);
    if (!r.info.gpu_name.empty()) name += " (" + r.info.gpu_name + ")";
    meta("process_name", r.info.rank, 0, name);
    sort_index("process_sort_index", r.info.rank, 0, r.info.rank);
    for (std::int32_t si : r.stream_tracks) {
      const StreamTrack& s = p_.stream_tracks[static_cast<std::size_t>(si)];
      std::string n = s.name.empty() ? "stream " + std::to_string(s.native_id) : s.name;
      n += " [" + std::string(to_string(s.kind)) + "]";
      meta("thread_name", r.info.rank, kStreamTid + s.stream_id, n);
      sort_index("thread_sort_index", r.info.rank, kStreamTid + s.stream_id, s.stream_id);
    }
    std::map<std::int64_t, bool> lanes_done;
    for (std::int32_t ti : r.range_tracks) {
      const RangeTrack& t = p_.range_tracks[static_cast<std::size_t>(ti)];
      const std::int64_t tid = lane_tid(t);
      if (lanes_done[tid]) continue;
      lanes_done[tid] = true;
      std::string n;
      if (t.thread_id >= 0) {
        auto it = threads_.find(t.thread_id);
        n = "thread " + std::to_string(it == threads_.end() ? t.thread_id : it->second.first);
        if (it != threads_.end() && !it->second.second.empty()) n += " (" + it->second.second + ")";
      } else {
        n = "GPU annotations, stream row " + std::to_string(t.stream_id);
      }
      meta("thread_name", r.info.rank, tid, n);
    }
    if (!r.steps.empty()) meta("thread_name", r.info.rank, kStepsTid, "steps");
  }

  static std::int64_t lane_tid(const RangeTrack& t) {
    return t.thread_id >= 0 ? kCpuLaneTid + t.thread_id : kGpuLaneTid + t.stream_id;
  }

  std::string module_name(std::int32_t m) const {
    if (m < 0 || static_cast<std::size_t>(m) >= p_.modules.size()) return {};
    return p_.modules[static_cast<std::size_t>(m)].fqn;
  }

  void write_kernels() {
    for (const auto& s : p_.stream_tracks) {
      for (const auto& k : s.events) {
        j_.begin_object().kv("ph", "X").kv("cat", std::string(to_string(k.category)));
        j_.kv("name", p_.strings[k.name]).kv("pid", s.rank).kv("tid", kStreamTid + s.stream_id);
        j_.key("ts").raw(us(k.start)).key("dur").raw(us(k.end - k.start));
        j_.key("args").begin_object().kv("kernel_id", static_cast<std::int64_t>(k.id));
        j_.kv("stream", s.native_id);
        if (k.module >= 0) j_.kv("module", module_name(k.module));
        if (auto it = coll_by_kernel_.find(k.id); it != coll_by_kernel_.end()) {
          const CollectiveEvent& c = p_.collectives[it->second];
          j_.kv("collective", std::string(to_string(c.type))).kv("bytes", c.bytes).kv("sequence", c.sequence);
          if (auto g = groups_.find(c.process_group); g != groups_.end()) {
            j_.kv("process_group", g->second.name);
            if (!g->second.description.empty()) j_.kv("process_group_description", g->second.description);
          }
        }
        j_.end_object().end_object();
        ++stats_.kernel_events;
      }
    }
  }

  void write_ranges() {
    for (const auto& t : p_.range_tracks) {
      for (const auto& r : t.events) {
        j_.begin_object().kv("ph", "X").kv("cat", std::string(to_string(r.kind)));
        j_.kv("name", p_.strings[r.name]).kv("pid", t.rank).kv("tid", lane_tid(t));
        j_.key("ts").raw(us(r.start)).key("dur").raw(us(r.end - r.start));
        j_.key("args").begin_object().kv("range_id", static_cast<std::int64_t>(r.id));
        if (r.phase != RangePhase::None) j_.kv("phase", std::string(to_string(r.phase)));
        if (r.module >= 0) j_.kv("module", module_name(r.module));
        j_.end_object().end_object();
        ++stats_.range_events;
      }
    }
  }

  void write_memory_and_steps() {
    for (const auto& r : p_.ranks) {
      for (const auto& c : r.memory) {
        j_.begin_object().kv("ph", "C").kv("name", "GPU memory allocated").kv("pid", r.info.rank).kv("tid", 0);
        j_.key("ts").raw(us(c.time));
        j_.key("args").begin_object().kv("bytes", c.value).end_object().end_object();
        ++stats_.counter_events;
      }
      for (const auto& s : r.steps) {
        j_.begin_object().kv("ph", "X").kv("cat", "step").kv("name", "step " + std::to_string(s.number));
        j_.kv("pid", r.info.rank).kv("tid", kStepsTid).key("ts").raw(us(s.start)).key("dur").raw(us(s.end - s.start));
        j_.end_object();
        ++stats_.step_events;
      }
    }
  }

  const Profile& p_;
  JsonWriter j_;
  sql::Db& db_;
  PerfettoStats stats_;
  std::map<std::int64_t, GroupInfo> groups_;
  std::map<std::int64_t, std::pair<std::int64_t, std::string>> threads_;
  std::unordered_map<std::int64_t, std::size_t> coll_by_kernel_;
};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

PerfettoStats export_perfetto(const std::string& profile, const std::string& out) {
  const Profile p = load_profile(profile);
  sql::Db db = open_profile_readonly(profile);
  AtomicOutput file(out);
  PerfettoStats stats = PerfettoWriter(p, file.stream(), db).run();
  file.commit(ends_with(out, ".gz"));
  return stats;
}

}  // namespace ss::exporting
