#include "storage/profile_summary.h"

#include <set>

#include "storage/profile_reader.h"

namespace ss {
namespace {
std::int64_t scalar(sql::Db& db, const char* q) {
  sql::Stmt s(db.get(), q);
  return s.step() ? s.col_int(0) : 0;
}
}  // namespace

ProfileSummary summarize_profile(const std::string& path, int top_n) {
  sql::Db db = open_profile_readonly(path);
  ProfileSummary r;
  r.path = path;
  try {
    {
      sql::Stmt s(db.get(), "SELECT value FROM meta WHERE key = 'schema_version'");
      if (s.step()) r.schema_version = static_cast<int>(std::stol(s.col_text(0)));
    }
    {
      sql::Stmt s(db.get(), "SELECT value FROM meta WHERE key = 'time_origin_unix_ns'");
      if (s.step()) r.time_origin_unix_ns = std::stoll(s.col_text(0));
    }
    {
      sql::Stmt s(db.get(),
                  "SELECT kind, tool, tool_version, source_format, source_files, parameters_json, created_utc, notes"
                  " FROM origin WHERE id = 1");
      if (s.step()) {
        auto k = s.col_int(0);
        r.origin = {(k >= 0 && k < kOriginKindCount) ? static_cast<OriginKind>(k) : OriginKind::Measured,
                    s.col_text(1),
                    s.col_text(2),
                    s.col_text(3),
                    s.col_text(4),
                    s.col_text(5),
                    s.col_text(6),
                    s.col_text(7)};
      }
    }
    std::set<int> seen;
    {
      sql::Stmt s(db.get(),
                  "SELECT rank, host, pid, device_index, gpu_name, gpu_memory_bytes, sm_count, compute_major,"
                  " compute_minor, clock_offset_ns, world_size FROM ranks ORDER BY rank");
      while (s.step()) {
        RankInfo i{static_cast<int>(s.col_int(0)), s.col_text(1), s.col_int(2), static_cast<int>(s.col_int_or(3, -1)),
                   s.col_text(4), s.col_int(5), static_cast<int>(s.col_int(6)), static_cast<int>(s.col_int(7)),
                   static_cast<int>(s.col_int(8)), s.col_int(9), static_cast<int>(s.col_int(10))};
        seen.insert(i.rank);
        r.ranks.push_back(std::move(i));
      }
      sql::Stmt extra(db.get(), "SELECT DISTINCT rank FROM streams ORDER BY rank");
      while (extra.step()) {
        int rank = static_cast<int>(extra.col_int(0));
        if (seen.insert(rank).second) {
          RankInfo i;
          i.rank = rank;
          r.ranks.push_back(i);
        }
      }
    }
    r.kernels = scalar(db, "SELECT count(*) FROM kernels");
    r.collectives = scalar(db, "SELECT count(*) FROM collectives");
    r.ranges = scalar(db, "SELECT count(*) FROM ranges");
    r.modules = scalar(db, "SELECT count(*) FROM modules");
    r.memory_events = scalar(db, "SELECT count(*) FROM memory_events");
    r.steps = scalar(db, "SELECT count(DISTINCT number) FROM steps");
    r.streams = scalar(db, "SELECT count(*) FROM streams");
    {
      sql::Stmt s(db.get(),
                  "SELECT min(t0), max(t1) FROM ("
                  " SELECT min(start_ns) AS t0, max(start_ns + duration_ns) AS t1 FROM kernels"
                  " UNION ALL SELECT min(start_ns), max(start_ns + duration_ns) FROM ranges"
                  " UNION ALL SELECT min(time_ns), max(time_ns) FROM memory_events)");
      if (s.step()) {
        r.time_begin = s.col_int_or(0, 0);
        r.time_end = s.col_int_or(1, 0);
      }
    }
    {
      sql::Stmt s(db.get(),
                  "SELECT coalesce(st.value, ''), k.n, k.total FROM (SELECT name_id, count(*) AS n,"
                  " sum(duration_ns) AS total FROM kernels GROUP BY name_id ORDER BY total DESC LIMIT ?) k"
                  " LEFT JOIN strings st ON st.id = k.name_id ORDER BY k.total DESC");
      s.bind(1, top_n);
      while (s.step()) r.top_kernels.push_back({s.col_text(0), s.col_int(1), s.col_int(2)});
    }
    {
      sql::Stmt s(db.get(),
                  "SELECT category, count(*), sum(duration_ns) FROM kernels GROUP BY category ORDER BY category");
      while (s.step()) {
        auto c = s.col_int(0);
        if (c < 0 || c >= kKernelCategoryCount) continue;
        r.time_by_category.push_back({static_cast<KernelCategory>(c), s.col_int(1), s.col_int(2)});
      }
    }
    {
      sql::Stmt s(db.get(), "SELECT reason, sum(count) FROM skipped_events GROUP BY reason ORDER BY 2 DESC");
      while (s.step()) r.skipped.push_back({s.col_text(0), s.col_int(1)});
    }
  } catch (const ProfileError& e) {
    rethrow_with_path(e, path);
  } catch (const std::logic_error& e) {  // stol / stoll on a malformed meta value
    throw ProfileError(ProfileErrorKind::MalformedTable, "'" + path + "': malformed value in table 'meta'");
  }
  return r;
}

}  // namespace ss
