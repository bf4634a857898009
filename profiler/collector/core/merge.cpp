#include "profiler/collector/core/merge.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <unordered_map>

#include "profiler/collector/core/attributor.h"
#include "profiler/common/memory_categories.h"
#include "profiler/common/module_range_name.h"
#include "profiler/collector/core/clock_alignment.h"
#include "profiler/collector/core/py_sidecar.h"
#include "profiler/collector/core/rank_phases.h"
#include "profiler/collector/core/rank_file_writer.h"
#include "storage/errors.h"
#include "storage/profile_reader.h"
#include "storage/profile_writer.h"
#include "storage/add_nested_ranges.h"

namespace ss::collector {
namespace fs = std::filesystem;

std::vector<RankInputs> find_rank_inputs(const std::string& dir) {
  std::map<std::string, RankInputs> by_stem;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file()) continue;
    const std::string name = e.path().filename().string();
    auto id = parse_rank_file_stem(name);
    if (!id) continue;
    const bool is_rank = name.ends_with(kRankFileSuffix);
    const bool is_side = name.ends_with(kSidecarSuffix);
    if (!is_rank && !is_side) continue;
    auto stem = rank_file_stem(*id);
    auto& in = by_stem[stem];
    in.id = *id;
    (is_rank ? in.rank_file : in.sidecar) = e.path().string();
  }
  if (ec) throw ProfileError(ProfileErrorKind::Io, dir + ": cannot list the recording directory: " + ec.message());
  std::vector<RankInputs> out;
  for (auto& [stem, in] : by_stem) out.push_back(std::move(in));
  std::sort(out.begin(), out.end(), [](const RankInputs& a, const RankInputs& b) {
    return std::tie(a.id.rank, a.id.pid, a.id.restart) < std::tie(b.id.rank, b.id.pid, b.id.restart);
  });
  return out;
}

bool rank_file_from_sidecar(const std::string& sidecar_path, const RankIdentity& id, const std::string& out_path,
                            std::optional<TimeNs> earliest_unix_ns) {
  Sidecar sc = read_sidecar(sidecar_path);
  if (sc.ranges.empty()) return false;
  std::sort(sc.ranges.begin(), sc.ranges.end(), [](auto& a, auto& b) { return a.start < b.start; });
  RankInfo info;
  info.rank = std::max(id.rank, 0);
  info.pid = id.pid;
  info.world_size = id.world_size;
  if (auto h = sc.meta.find("host"); h != sc.meta.end()) info.host = h->second;
  const TimeNs origin = earliest_unix_ns ? std::min(*earliest_unix_ns, sc.ranges.front().start) : sc.ranges.front().start;
  RankFileWriter writer(out_path, info, origin, "");
  writer.set_meta("collector.source", "python-sidecar");
  Attributor attributor(0);
  std::uint64_t marker = 1;
  for (const auto& r : sc.ranges) {
    MarkerRecord m;
    m.id = marker++;
    m.tid = r.tid;
    m.flags = MarkerRecord::kStart;
    m.timestamp = r.start;
    m.name = r.message;
    attributor.add(m);
    m.flags = MarkerRecord::kEnd;
    m.timestamp = r.end;
    m.name.clear();
    attributor.add(m);
  }
  attributor.drain_all(writer);
  writer.finish();
  return true;
}

namespace {

struct RankSource {
  RankInputs in;
  std::string file;  // the rank file actually read (maybe built from the sidecar)
  Sidecar sidecar;
  RankInfo info;
  TimeNs origin = 0;
  TimeNs shift = 0;  // added to every stored time
  TimeNs offset = 0;
};

std::int64_t count_rows(sql::Db& db, const char* table) {
  sql::Stmt st(db.get(), std::string("SELECT count(*) FROM ") + table);
  st.step();
  return st.col_int(0);
}

std::string module_parent(const std::string& fqn) {
  if (fqn.empty()) return "";
  auto dot = fqn.rfind('.');
  return dot == std::string::npos ? std::string() : fqn.substr(0, dot);
}

// The collector's per-tensor events (cudaMallocAsync) come without a category: give them the
// importers' categories (profiler/common/memory_categories.h) from the rank's steps and hook
// ranges (rank_phases.h); recompute and optimizer ranges as contexts. Events that already have
// one keep it.
void categorize_collector_memory(sql::Db& db, TimeNs shift, std::vector<MemoryEventRow>& rows) {
  if (rows.empty() || std::any_of(rows.begin(), rows.end(), [](const auto& m) { return m.category != MemoryCategory::Unknown; }))
    return;
  const RankPhases phases = read_rank_phases(db, shift);
  std::vector<MemoryEventIn> ins;
  ins.reserve(rows.size());
  for (const auto& m : rows) ins.push_back({m.time, m.address, m.bytes, phases.context_at(m.time)});
  const auto cats = classify_memory(ins, phases.steps, {});
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i].category = cats[i];
}

int module_depth(const std::string& fqn) {
  return fqn.empty() ? 0 : 1 + static_cast<int>(std::count(fqn.begin(), fqn.end(), '.'));
}

// `ordered` (parents before children) with every grouped unit's member after the member that
// stands for the unit (it refers to that row), keeping parents first: a module waits until its
// parent and its unit owner are placed. Owners are never members, so this ends in a few passes.
std::vector<std::string> owners_first(std::vector<std::string> ordered, const std::map<std::string, SidecarModule>& info) {
  std::set<std::string> placed;
  std::vector<std::string> out;
  out.reserve(ordered.size());
  while (!ordered.empty()) {
    std::vector<std::string> waiting;
    for (auto& fqn : ordered) {
      auto it = info.find(fqn);
      const std::string& owner = it != info.end() ? it->second.unit_owner : std::string();
      const bool ready = (fqn.empty() || placed.count(module_parent(fqn))) &&
                         (owner.empty() || owner == fqn || placed.count(owner) || !info.count(owner));
      if (ready) {
        placed.insert(fqn);
        out.push_back(std::move(fqn));
      } else {
        waiting.push_back(std::move(fqn));
      }
    }
    if (waiting.size() == ordered.size()) {  // a cycle in hostile input: keep the rest as they were
      for (auto& f : waiting) out.push_back(std::move(f));
      break;
    }
    ordered.swap(waiting);
  }
  return out;
}

// A CPU rank whose torch.profiler trace stopped early (the job started its own profiler, which
// wins: _cpu_trace.py) has its later iterations in the sidecar only, as "ss:opt:<n>" ranges on
// the wall clock: iteration n ends with optimizer step n and starts where step n-1 ended.
void add_steps_after_trace(ProfileWriter& out, MergeResult& result, const RankSource& s, int rank, std::int64_t last_step,
                           const std::string& stopped_at) {
  out.set_meta("rank" + std::to_string(rank) + ".cpu_trace_stopped_at_step", stopped_at);
  result.warnings.push_back("rank " + std::to_string(rank) + ": the job started its own torch.profiler at step " + stopped_at +
                            "; operators, collectives and memory are recorded up to there, the later steps from the "
                            "module hooks only");
  std::map<std::int64_t, std::pair<TimeNs, TimeNs>> opt;  // step -> its optimizer ranges' span (wall clock)
  for (const auto& r : s.sidecar.ranges)
    if (auto n = parse_module_range_name(r.message); n && n->optimizer) {
      auto [it, fresh] = opt.try_emplace(n->step, r.start, r.end);
      if (!fresh) it->second = {std::min(it->second.first, r.start), std::max(it->second.second, r.end)};
    }
  const TimeNs to_profile = s.shift - s.origin;
  for (const auto& [n, range] : opt) {
    if (n <= last_step) continue;
    auto prev = opt.find(n - 1);
    const TimeNs start = prev != opt.end() ? prev->second.second : range.first;
    out.add_step({rank, n, start + to_profile, range.second + to_profile});
  }
}

// `record --steps A:B`: the steps outside the capture window, timed by the sidecar's wall clock
// ("step" lines), become unobserved_steps; a step the rank file has as a profiled step (a CUDA
// rank's collector records every step) is not one.
void add_unobserved_steps(ProfileWriter& out, const RankSource& s, int rank, const std::set<std::int64_t>& profiled) {
  if (auto w = s.sidecar.meta.find("capture_window"); w != s.sidecar.meta.end())
    out.set_meta("rank" + std::to_string(rank) + ".capture_window", w->second);
  const TimeNs to_profile = s.shift - s.origin;
  for (const auto& st : s.sidecar.steps)
    if (!profiled.count(st.number))
      out.add_unobserved_step({rank, st.number, st.start + to_profile, st.end + to_profile}, st.model_calls);
}

}  // namespace

MergeResult merge_rank_files(const std::vector<RankInputs>& inputs, const MergeOptions& options) {
  MergeResult result;
  std::vector<RankSource> sources;
  std::vector<std::string> temporaries;
  struct Cleanup {
    std::vector<std::string>& files;
    ~Cleanup() {
      for (auto& f : files) std::filesystem::remove(f);
    }
  } cleanup{temporaries};

  // 1. Read every input; build rank files from sidecars where the collector did not run.
  for (const auto& in : inputs) {
    RankSource s;
    s.in = in;
    if (!in.sidecar.empty()) s.sidecar = read_sidecar(in.sidecar);
    s.file = in.rank_file;
    if (s.file.empty() && !in.sidecar.empty()) {
      std::string tmp = in.sidecar + ".ranks.ssdb";
      if (rank_file_from_sidecar(in.sidecar, in.id, tmp)) {
        temporaries.push_back(tmp);
        s.file = tmp;
      }
    }
    if (s.file.empty()) {
      if (!s.sidecar.modules.empty()) result.warnings.push_back(in.sidecar + ": module list without any events; skipped");
      continue;
    }
    sql::Db db = open_profile_readonly(s.file);
    const std::int64_t events = count_rows(db, "kernels") + count_rows(db, "ranges") + count_rows(db, "memory_events");
    if (events == 0 && s.sidecar.modules.empty()) {
      // Without a rank in its environment it is torchrun's agent or the parent that spawned the
      // ranks (their NVTX start the collector too): said on every run, that warning was noise.
      if (in.id.rank >= 0) result.warnings.push_back(s.file + ": no events (a subprocess that initialised CUDA?); skipped");
      continue;
    }
    {
      sql::Stmt st(db.get(), "SELECT value FROM meta WHERE key = 'time_origin_unix_ns'");
      if (st.step()) s.origin = std::stoll(st.col_text(0));
    }
    {
      sql::Stmt st(db.get(),
                   "SELECT host, pid, device_index, gpu_name, gpu_memory_bytes, sm_count, compute_major, compute_minor, "
                   "world_size FROM ranks LIMIT 1");
      if (st.step()) {
        s.info.host = st.col_text(0);
        s.info.pid = st.col_int_or(1, in.id.pid);
        s.info.device_index = static_cast<int>(st.col_int_or(2, -1));
        s.info.gpu_name = st.col_text(3);
        s.info.gpu_memory_bytes = st.col_int_or(4, 0);
        s.info.sm_count = static_cast<int>(st.col_int_or(5, 0));
        s.info.compute_major = static_cast<int>(st.col_int_or(6, 0));
        s.info.compute_minor = static_cast<int>(st.col_int_or(7, 0));
        s.info.world_size = static_cast<int>(st.col_int_or(8, 0));
      }
    }
    if (s.info.host.empty())
      if (auto h = s.sidecar.meta.find("host"); h != s.sidecar.meta.end()) s.info.host = h->second;
    if (s.info.world_size == 0) s.info.world_size = in.id.world_size;
    s.info.rank = in.id.rank;
    sources.push_back(std::move(s));
  }
  if (sources.empty())
    throw ProfileError(ProfileErrorKind::MissingTable,
                       "no rank recorded any data (no collector file and no Python sidecar with events in the output directory)");

  // 2. Rank numbers: keep the launcher's where unique, give the rest the next free numbers.
  {
    std::set<int> used;
    for (auto& s : sources)
      if (s.info.rank >= 0 && !used.insert(s.info.rank).second) {
        result.warnings.push_back(s.file + ": rank " + std::to_string(s.info.rank) + " appears twice; renumbered");
        s.info.rank = -1;
      }
    int next = used.empty() ? 0 : *used.rbegin() + 1;
    for (auto& s : sources)
      if (s.info.rank < 0) s.info.rank = next++;
  }

  // 3. Clocks.
  if (options.align_clocks) {
    std::vector<RankClockInput> clocks;
    for (auto& s : sources) {
      sql::Db db = open_profile_readonly(s.file);
      RankClockInput c;
      c.rank = s.info.rank;
      c.host = s.info.host;
      sql::Stmt st(db.get(),
                   "SELECT g.name, c.sequence, c.start_ns + c.duration_ns FROM collectives c JOIN process_groups g ON "
                   "g.id = c.process_group_id WHERE c.sequence >= 0");
      while (st.step()) c.collective_ends[{st.col_text(0), st.col_int(1)}] = s.origin + st.col_int(2);
      clocks.push_back(std::move(c));
    }
    auto offsets = estimate_clock_offsets(clocks);
    for (std::size_t i = 0; i < sources.size(); ++i) sources[i].offset = offsets[i].offset_ns;
  }
  TimeNs global_origin = sources.front().origin + sources.front().offset;
  for (auto& s : sources) global_origin = std::min(global_origin, s.origin + s.offset);
  for (auto& s : sources) {
    s.shift = s.origin + s.offset - global_origin;
    s.info.clock_offset_ns = s.offset;
    result.clock_offsets.emplace_back(s.info.rank, s.offset);
  }

  Origin origin;
  origin.kind = OriginKind::Measured;
  origin.tool = "shardscope record";
  origin.tool_version = "0.1.0";
  // "cupti" when a rank had the CUPTI collector; "torch-profiler-cpu" when CPU ranks' torch.profiler
  // traces were imported (`record` on a machine without a GPU); "python-hooks" for sidecars alone.
  std::set<std::string> formats;
  for (const auto& s : sources) {
    if (s.in.rank_file.empty()) continue;
    sql::Db db = open_profile_readonly(s.file);
    sql::Stmt st(db.get(), "SELECT source_format FROM origin LIMIT 1");
    formats.insert(st.step() ? st.col_text(0) : std::string("cupti"));
  }
  origin.source_format = formats.empty() ? "python-hooks" : formats.count("kineto-json") && formats.size() == 1 ? "torch-profiler-cpu" : "cupti";
  origin.source_files = options.command;
  origin.notes = options.notes;
  ProfileWriter out(options.output, origin);
  out.set_time_origin(global_origin);

  // 4. Modules: the union of every rank's fqns, parents first, details from the sidecars.
  std::map<std::string, SidecarModule> module_info;
  std::set<std::string> fqns;
  for (auto& s : sources) {
    for (const auto& m : s.sidecar.modules) {
      module_info.emplace(m.fqn, m);
      fqns.insert(m.fqn);
    }
    sql::Db db = open_profile_readonly(s.file);
    sql::Stmt st(db.get(), "SELECT fqn FROM modules");
    while (st.step()) fqns.insert(st.col_text(0));
  }
  for (auto f : std::vector<std::string>(fqns.begin(), fqns.end()))
    while (!f.empty()) {
      f = module_parent(f);
      fqns.insert(f);
    }
  std::vector<std::string> ordered(fqns.begin(), fqns.end());
  std::stable_sort(ordered.begin(), ordered.end(), [](auto& a, auto& b) { return module_depth(a) < module_depth(b); });
  ordered = owners_first(std::move(ordered), module_info);
  std::unordered_map<std::string, RowId> module_ids;
  if (!fqns.empty())
    for (const auto& fqn : ordered) {
      ModuleRow m;
      m.fqn = fqn;
      if (!fqn.empty()) m.parent = module_ids.at(module_parent(fqn));
      std::string owner;
      if (auto it = module_info.find(fqn); it != module_info.end()) {
        m.class_name = it->second.class_name;
        m.param_count = it->second.param_count;
        m.param_bytes = it->second.param_bytes;
        m.is_fsdp_unit = it->second.is_fsdp_unit;
        m.reshard_policy = it->second.reshard_policy;
        owner = it->second.unit_owner;
      }
      if (auto o = module_ids.find(owner); !m.is_fsdp_unit && !owner.empty() && o != module_ids.end()) {
        m.fsdp_unit = o->second;  // a grouped unit's member: the group's parameters are gathered together
        m.reshard_policy = module_info.at(owner).reshard_policy;
      } else if (!m.is_fsdp_unit)  // the nearest enclosing unit (or grouped member's unit) owns this module's parameters
        for (std::string up = fqn; !up.empty();) {
          up = module_parent(up);
          auto it = module_info.find(up);
          if (it != module_info.end() &&
              (it->second.is_fsdp_unit || (!it->second.unit_owner.empty() && module_ids.count(it->second.unit_owner)))) {
            m.fsdp_unit = module_ids.at(it->second.is_fsdp_unit ? up : it->second.unit_owner);
            break;
          }
          if (up.empty()) break;
        }
      module_ids[fqn] = out.add_module(m);
    }

  // 5. Rows, rank by rank.
  std::unordered_map<std::string, RowId> groups;
  for (auto& s : sources) {
    sql::Db db = open_profile_readonly(s.file);
    const int rank = s.info.rank;
    const TimeNs shift = s.shift;
    out.add_rank(s.info);

    std::vector<std::string> strings;
    {
      sql::Stmt st(db.get(), "SELECT id, value FROM strings ORDER BY id");
      while (st.step()) {
        auto id = static_cast<std::size_t>(st.col_int(0));
        if (strings.size() <= id) strings.resize(id + 1);
        strings[id] = st.col_text(1);
      }
    }
    auto str = [&](std::int64_t id) -> std::uint32_t {
      if (id <= 0 || static_cast<std::size_t>(id) >= strings.size()) return 0;
      return out.intern(strings[static_cast<std::size_t>(id)]);
    };
    std::unordered_map<std::int64_t, RowId> streams, threads, modules, configs, kernels, pgs;
    {
      sql::Stmt st(db.get(), "SELECT id, device, native_id, kind, name FROM streams");
      while (st.step())
        streams[st.col_int(0)] = out.add_stream({rank, static_cast<int>(st.col_int_or(1, 0)), st.col_int_or(2, 0),
                                                 static_cast<StreamKind>(st.col_int(3)), st.col_text(4)});
    }
    {
      sql::Stmt st(db.get(), "SELECT id, tid, name FROM threads");
      while (st.step()) threads[st.col_int(0)] = out.add_thread({rank, st.col_int_or(1, 0), st.col_text(2)});
    }
    {
      sql::Stmt st(db.get(), "SELECT id, fqn FROM modules");
      while (st.step()) modules[st.col_int(0)] = module_ids.at(st.col_text(1));
    }
    {
      sql::Stmt st(db.get(),
                   "SELECT id, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_mem_bytes, registers_per_thread "
                   "FROM launch_configs");
      while (st.step()) {
        LaunchConfig c;
        c.grid_x = static_cast<std::int32_t>(st.col_int(1));
        c.grid_y = static_cast<std::int32_t>(st.col_int(2));
        c.grid_z = static_cast<std::int32_t>(st.col_int(3));
        c.block_x = static_cast<std::int32_t>(st.col_int(4));
        c.block_y = static_cast<std::int32_t>(st.col_int(5));
        c.block_z = static_cast<std::int32_t>(st.col_int(6));
        c.shared_mem_bytes = static_cast<std::int32_t>(st.col_int(7));
        c.registers_per_thread = static_cast<std::int32_t>(st.col_int(8));
        configs[st.col_int(0)] = out.launch_config(c);
      }
    }
    auto map_id = [](const std::unordered_map<std::int64_t, RowId>& m, const sql::Stmt& st, int col) -> RowId {
      if (st.col_null(col)) return kNoRow;
      auto it = m.find(st.col_int(col));
      return it == m.end() ? kNoRow : it->second;
    };
    {
      sql::Stmt st(db.get(),
                   "SELECT id, stream_id, start_ns, duration_ns, name_id, correlation, launch_config_id, category, "
                   "module_id, bytes FROM kernels ORDER BY id");
      while (st.step()) {
        KernelRow k;
        k.rank = rank;
        k.stream = map_id(streams, st, 1);
        k.start = st.col_int(2) + shift;
        k.end = k.start + st.col_int(3);
        k.name = str(st.col_int(4));
        k.correlation = st.col_int_or(5, 0);
        k.launch_config = map_id(configs, st, 6);
        k.category = static_cast<KernelCategory>(st.col_int(7));
        k.module = map_id(modules, st, 8);
        k.bytes = st.col_int_or(9, 0);
        kernels[st.col_int(0)] = out.add_kernel(k);
        ++result.kernels;
      }
    }
    {
      sql::Stmt st(db.get(), "SELECT kernel_id, thread_id, start_ns, duration_ns, name_id FROM launches ORDER BY id");
      while (st.step()) {
        LaunchRow l;
        l.rank = rank;
        l.kernel = map_id(kernels, st, 0);
        if (l.kernel == kNoRow) continue;
        l.thread = map_id(threads, st, 1);
        l.start = st.col_int(2) + shift;
        l.end = l.start + st.col_int(3);
        l.name = str(st.col_int_or(4, 0));
        out.add_launch(l);
      }
    }
    {
      sql::Stmt st(db.get(), "SELECT id, name, description, ranks, size, backend FROM process_groups");
      while (st.step()) {
        const std::string name = st.col_text(1);
        auto it = groups.find(name);
        if (it == groups.end())
          it = groups.emplace(name, out.add_process_group({name, st.col_text(2), st.col_text(3),
                                                           static_cast<int>(st.col_int_or(4, 0)), st.col_text(5)}))
                   .first;
        pgs[st.col_int(0)] = it->second;
      }
    }
    {
      sql::Stmt st(db.get(),
                   "SELECT kernel_id, type, bytes, dtype_id, process_group_id, group_size, sequence, start_ns, duration_ns "
                   "FROM collectives ORDER BY id");
      while (st.step()) {
        CollectiveRow c;
        c.rank = rank;
        c.kernel = map_id(kernels, st, 0);
        c.type = static_cast<CollectiveType>(st.col_int(1));
        c.bytes = st.col_int_or(2, 0);
        c.dtype = str(st.col_int_or(3, 0));
        c.process_group = map_id(pgs, st, 4);
        c.group_size = static_cast<int>(st.col_int_or(5, 0));
        c.sequence = st.col_int_or(6, -1);
        c.start = st.col_int(7) + shift;
        c.end = c.start + st.col_int(8);
        out.add_collective(c);
      }
    }
    {
      // Ranges: nesting per lane (thread or stream), then rows in nesting order so parents exist.
      std::map<std::pair<RowId, RowId>, std::vector<RangeRow>> lanes;
      sql::Stmt st(db.get(),
                   "SELECT thread_id, stream_id, start_ns, duration_ns, name_id, kind, phase, module_id FROM ranges");
      while (st.step()) {
        RangeRow r;
        r.rank = rank;
        r.thread = map_id(threads, st, 0);
        r.stream = map_id(streams, st, 1);
        r.start = st.col_int(2) + shift;
        r.end = r.start + st.col_int(3);
        r.name = str(st.col_int(4));
        r.kind = static_cast<RangeKind>(st.col_int(5));
        r.phase = static_cast<RangePhase>(st.col_int(6));
        r.module = map_id(modules, st, 7);
        lanes[{r.thread, r.stream}].push_back(r);
      }
      for (auto& [lane, rows] : lanes) {
        std::vector<std::pair<TimeNs, TimeNs>> iv;
        iv.reserve(rows.size());
        for (auto& r : rows) iv.emplace_back(r.start, r.end);
        add_nested_ranges(out, iv, [&](std::size_t idx) { return rows[idx]; });
        result.ranges += static_cast<std::int64_t>(rows.size());
      }
    }
    {
      sql::Stmt st(db.get(), "SELECT time_ns, address, bytes, category, module_id, stream_id FROM memory_events ORDER BY id");
      std::vector<MemoryEventRow> rows;
      while (st.step()) {
        MemoryEventRow m;
        m.rank = rank;
        m.time = st.col_int(0) + shift;
        m.address = st.col_int_or(1, 0);
        m.bytes = st.col_int(2);
        m.category = static_cast<MemoryCategory>(st.col_int(3));
        m.module = map_id(modules, st, 4);
        m.stream = map_id(streams, st, 5);
        rows.push_back(m);
      }
      categorize_collector_memory(db, shift, rows);
      for (const auto& m : rows) out.add_memory_event(m);
    }
    std::int64_t last_step = -1;
    std::set<std::int64_t> profiled_steps;
    {
      // The collector writes a step for each optimizer range "ss:opt:<n>"; a loop with several
      // optimizers has several of step n, the first from the end of step n-1: one step to the last.
      sql::Stmt st(db.get(), "SELECT number, min(start_ns), max(start_ns + duration_ns) FROM steps GROUP BY number "
                             "ORDER BY number");
      while (st.step()) {
        out.add_step({rank, st.col_int(0), st.col_int(1) + shift, st.col_int(2) + shift});
        last_step = std::max(last_step, st.col_int(0));
        profiled_steps.insert(st.col_int(0));
      }
    }
    if (auto stop = s.sidecar.meta.find("cpu_trace_stopped_at_step"); stop != s.sidecar.meta.end())
      add_steps_after_trace(out, result, s, rank, last_step, stop->second);
    if (auto scope = s.sidecar.meta.find("backward_ranges"); scope != s.sidecar.meta.end())
      out.set_meta("rank" + std::to_string(rank) + ".backward_ranges", scope->second);
    // Per unit, for the replay: FSDP2 units whose parameters sit on several meshes (hooks.py,
    // fsdp2_group_sizes) and the job's explicit prefetch lists (fsdp2_prefetch_lists); per rank, the
    // mesh dimensions beside FSDP's (model_parallel_dims, and model_parallel_ranks), FSDP's own
    // process group and the dtypes it gathers and reduces in; a pipelined model's schedule and stages;
    // each unit's forward input (_write_unit_input: what checkpointing keeps, what a stage sends).
    for (const std::string prefix : {"param_groups.", "forward_prefetch.", "backward_prefetch.", "model_parallel", "fsdp_group",
                                     "fsdp_dtype_bytes", "pipeline", "unit_input."})
      for (auto it = s.sidecar.meta.lower_bound(prefix); it != s.sidecar.meta.end() && it->first.rfind(prefix, 0) == 0; ++it)
        out.set_meta("rank" + std::to_string(rank) + "." + it->first, it->second);
    add_unobserved_steps(out, s, rank, profiled_steps);
    {
      sql::Stmt st(db.get(), "SELECT reason, count FROM skipped_events");
      while (st.step()) out.add_skipped(rank, st.col_text(0), st.col_int(1));
    }
    {
      sql::Stmt st(db.get(), "SELECT key, value FROM meta WHERE key LIKE 'collector.%'");
      while (st.step()) out.set_meta("rank" + std::to_string(rank) + "." + st.col_text(0), st.col_text(1));
    }
    ++result.ranks;
  }
  out.set_meta("record.ranks", std::to_string(result.ranks));
  out.finish();
  return result;
}

}  // namespace ss::collector
