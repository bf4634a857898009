#include "storage/profile_summary.h"

#include <algorithm>
#include <map>
#include <set>

#include "storage/profile_reader.h"
#include "storage/value_bounds.h"

namespace ss {
namespace {
std::int64_t scalar(sql::Db& db, const char* q) {
  sql::Stmt s(db.get(), q);
  return s.step() ? s.col_int(0) : 0;
}

// Sweeps each rank's memory events in time order (frees first at equal times) for its peak and
// the live bytes per category at that instant.
std::vector<MemoryPeak> memory_peaks(sql::Db& db, const std::string& path) {
  std::vector<MemoryPeak> out;
  sql::Stmt s(db.get(), "SELECT rank, time_ns, bytes, category FROM memory_events ORDER BY rank, time_ns, bytes");
  int rank = INT32_MIN;
  std::int64_t level = 0;
  std::int64_t live[kMemoryCategoryCount] = {};
  while (s.step()) {
    const int r = static_cast<int>(s.col_int(0));
    if (r != rank) {
      rank = r;
      level = 0;
      std::fill(std::begin(live), std::end(live), 0);
      out.push_back({});
      out.back().rank = r;
    }
    const std::int64_t bytes = s.col_int(2);
    const std::int64_t c = s.col_int(3);
    add_memory_bytes(level, bytes, path);
    if (c >= 0 && c < kMemoryCategoryCount) add_memory_bytes(live[c], bytes, path);
    MemoryPeak& p = out.back();
    if (level > p.peak_bytes) {
      p.peak_bytes = level;
      p.time = s.col_int(1);
      std::copy(std::begin(live), std::end(live), std::begin(p.by_category));
    }
  }
  return out;
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
    r.gpu_activities = scalar(db, "SELECT count(*) FROM kernels");
    r.copies = scalar(db, ("SELECT count(*) FROM kernels WHERE category = " + std::to_string(int(KernelCategory::Memcpy))).c_str());
    r.memsets = scalar(db, ("SELECT count(*) FROM kernels WHERE category = " + std::to_string(int(KernelCategory::Memset))).c_str());
    r.kernels = r.gpu_activities - r.copies - r.memsets;
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
        // (SQLite turns an end that overflows into a real number, read back clamped.)
        if (!time_in_bounds(r.time_begin) || !time_in_bounds(r.time_end))
          throw ProfileError(ProfileErrorKind::MalformedTable,
                             "its events span " + std::to_string(r.time_begin) + " .. " + std::to_string(r.time_end) +
                                 " ns: beyond 2^61 ns (73 years)");
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
      sql::Stmt s(db.get(),
                  // The steps of a rank tile [first start, last end): a collective inside that span is
                  // in a step; before it is initialisation (weights gathered to be initialised).
                  "WITH span AS (SELECT rank, min(start_ns) AS a, max(start_ns + duration_ns) AS b FROM steps GROUP BY rank)"
                  " SELECT c.type, coalesce(nullif(g.description, ''), g.name, ''), c.bytes, count(*), count(DISTINCT c.rank),"
                  " coalesce(max(CASE WHEN st.value LIKE 'gloo:%' THEN st.value END), ''),"
                  " sum(CASE WHEN c.start_ns >= sp.a AND c.start_ns < sp.b THEN 1 ELSE 0 END)"
                  " FROM collectives c LEFT JOIN span sp ON sp.rank = c.rank"
                  " LEFT JOIN process_groups g ON g.id = c.process_group_id"
                  " LEFT JOIN kernels k ON k.id = c.kernel_id LEFT JOIN strings st ON st.id = k.name_id"
                  " GROUP BY 1, 2, 3 ORDER BY 1, 3 DESC");
      while (s.step()) {
        const auto t = s.col_int(0);
        CollectiveTotal c;
        c.type = (t >= 0 && t < kCollectiveTypeCount) ? static_cast<CollectiveType>(t) : CollectiveType::Unknown;
        c.group = s.col_text(1);
        c.bytes = s.col_int_or(2, 0);
        c.count = s.col_int(3);
        c.ranks = s.col_int(4);
        c.ran_as = s.col_text(5);
        c.in_steps = s.col_int_or(6, 0);
        // Only worth saying when the lane's name is another collective (gloo's reduce-scatter).
        if (!c.ran_as.empty() && collective_type_from_string(c.ran_as.substr(5)) == c.type) c.ran_as.clear();
        r.collective_totals.push_back(std::move(c));
      }
    }
    r.memory_peaks = memory_peaks(db, path);
    {
      sql::Stmt s(db.get(), "SELECT value FROM meta WHERE key LIKE 'rank%.backward_ranges' ORDER BY key LIMIT 1");
      if (s.step()) r.backward_ranges = s.col_text(0);
    }
    r.fsdp_units = scalar(db, "SELECT count(*) FROM modules WHERE is_fsdp_unit = 1");
    {
      // Parameters the units hold: the outermost units' counts (a unit's count includes nested units).
      std::vector<std::pair<std::string, std::int64_t>> units;
      sql::Stmt s(db.get(), "SELECT fqn, param_count FROM modules WHERE is_fsdp_unit = 1");
      while (s.step()) units.emplace_back(s.col_text(0), s.col_int_or(1, 0));
      auto inside = [](const std::string& inner, const std::string& outer) {
        return inner != outer && (outer.empty() || inner.rfind(outer + ".", 0) == 0);
      };
      // A plain loop variable, not a structured binding: clang 14 (the fuzz build) cannot capture those.
      for (const auto& unit : units)
        if (std::none_of(units.begin(), units.end(), [&](const auto& u) { return inside(unit.first, u.first); }) &&
            (!bytes_in_bounds(unit.second) || !add_to_total(r.fsdp_unit_params, unit.second)))
          throw ProfileError(ProfileErrorKind::MalformedTable,
                             "table 'modules': unit '" + unit.first + "' has " + std::to_string(unit.second) +
                                 " parameters (beyond 2^50, or a total beyond 2^62)");
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
