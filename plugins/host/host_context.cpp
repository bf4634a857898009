#include "plugins/host/host_context.h"

#include <cstddef>
#include <exception>

#include "storage/profile_reader.h"
#include "storage/readonly_query.h"

namespace ss::plugins {

// The C structs alias the model's arrays: keep their layouts identical.
static_assert(sizeof(ss_kernel_event) == sizeof(KernelEvent));
static_assert(offsetof(ss_kernel_event, name) == offsetof(KernelEvent, name));
static_assert(offsetof(ss_kernel_event, module) == offsetof(KernelEvent, module));
static_assert(offsetof(ss_kernel_event, id) == offsetof(KernelEvent, id));
static_assert(offsetof(ss_kernel_event, category) == offsetof(KernelEvent, category));
static_assert(sizeof(ss_range_event) == sizeof(RangeEvent));
static_assert(offsetof(ss_range_event, kind) == offsetof(RangeEvent, kind));
static_assert(offsetof(ss_range_event, phase) == offsetof(RangeEvent, phase));
static_assert(sizeof(ss_counter_point) == sizeof(CounterPoint));
static_assert(sizeof(ss_collective_event) == sizeof(CollectiveEvent));
static_assert(offsetof(ss_collective_event, kernel_id) == offsetof(CollectiveEvent, kernel_id));
static_assert(offsetof(ss_collective_event, rank) == offsetof(CollectiveEvent, rank));
static_assert(offsetof(ss_collective_event, process_group) == offsetof(CollectiveEvent, process_group));
static_assert(offsetof(ss_collective_event, type) == offsetof(CollectiveEvent, type));

namespace {

struct StopQuery {};  // thrown out of on_row when the plugin asks to stop

ss_value to_c(const SqlValue& v) {
  ss_value c{SS_VALUE_NULL, 0, 0.0, nullptr};
  if (const auto* i = std::get_if<std::int64_t>(&v)) {
    c.type = SS_VALUE_INT;
    c.i = *i;
  } else if (const auto* d = std::get_if<double>(&v)) {
    c.type = SS_VALUE_REAL;
    c.d = *d;
  } else if (const auto* s = std::get_if<std::string>(&v)) {
    c.type = SS_VALUE_TEXT;
    c.s = s->c_str();
  }
  return c;
}

SqlValue from_c(const ss_value& v) {
  switch (v.type) {
    case SS_VALUE_INT: return v.i;
    case SS_VALUE_REAL: return v.d;
    case SS_VALUE_TEXT: return std::string(v.s ? v.s : "");
    default: return std::monostate{};
  }
}

}  // namespace

HostContext::HostContext(const Profile& profile) : profile_(profile) {
  api_.api_version = SS_PLUGIN_API_VERSION;
  api_.ctx = this;
  api_.profile_path = [](void* c) { return self(c).profile_.path.c_str(); };
  api_.time_begin = [](void* c) -> std::int64_t { return self(c).profile_.time_begin; };
  api_.time_end = [](void* c) -> std::int64_t { return self(c).profile_.time_end; };
  api_.meta = [](void* c, const char* key) -> const char* {
    const auto& m = self(c).profile_.meta;
    auto it = key ? m.find(key) : m.end();
    return it == m.end() ? nullptr : it->second.c_str();
  };
  api_.query = &c_query;
  api_.last_error = [](void* c) { return self(c).last_error_.c_str(); };
  api_.string = &c_string;
  api_.rank_count = [](void* c) { return self(c).profile_.ranks.size(); };
  api_.rank = &c_rank;
  api_.stream_count = [](void* c) { return self(c).profile_.stream_tracks.size(); };
  api_.stream = &c_stream;
  api_.range_lane_count = [](void* c) { return self(c).profile_.range_tracks.size(); };
  api_.range_lane = &c_range_lane;
  api_.module_count = [](void* c) { return self(c).profile_.modules.size(); };
  api_.module = &c_module;
  api_.collectives = [](void* c, std::size_t* n) {
    const auto& v = self(c).profile_.collectives;
    if (n) *n = v.size();
    return reinterpret_cast<const ss_collective_event*>(v.data());
  };
  api_.begin_table = &c_begin_table;
  api_.table_row = &c_table_row;
  api_.add_finding = &c_add_finding;
  api_.add_marker = &c_add_marker;
  api_.begin_counter_track = &c_begin_counter_track;
  api_.counter_point = &c_counter_point;
  api_.log = [](void* c, const char* m) {
    try {
      self(c).result_.log.emplace_back(m ? m : "");
    } catch (...) {
    }
  };
}

const char* HostContext::c_string(void* ctx, std::uint32_t id) {
  HostContext& h = self(ctx);
  if (id >= h.profile_.strings.size()) return nullptr;
  try {
    auto it = h.strings_.find(id);
    if (it == h.strings_.end()) it = h.strings_.emplace(id, std::string(h.profile_.strings[id])).first;
    return it->second.c_str();
  } catch (...) {
    return nullptr;
  }
}

int HostContext::c_query(void* ctx, const char* sql_text, ss_row_fn fn, void* user) {
  HostContext& h = self(ctx);
  h.last_error_.clear();
  try {
    if (!h.db_) h.db_ = std::make_unique<sql::Db>(open_profile_readonly(h.profile_.path));
    std::vector<std::string> columns;
    std::vector<const char*> column_ptrs;
    QueryCallbacks cb;
    cb.on_columns = [&](const std::vector<std::string>& c) {
      columns = c;
      column_ptrs.clear();
      for (const auto& s : columns) column_ptrs.push_back(s.c_str());
    };
    std::vector<ss_value> values;
    cb.on_row = [&](const std::vector<SqlValue>& row) {
      values.clear();
      for (const auto& v : row) values.push_back(to_c(v));
      if (fn && fn(user, values.size(), column_ptrs.data(), values.data()) != 0) throw StopQuery{};
    };
    run_readonly_query(*h.db_, sql_text ? sql_text : "", cb);
    return 0;
  } catch (const StopQuery&) {
    return 0;
  } catch (const std::exception& e) {
    h.last_error_ = e.what();
  } catch (...) {
    h.last_error_ = "exception thrown from a row callback";
  }
  return -1;
}

int HostContext::c_rank(void* ctx, std::size_t i, ss_rank_info* out) {
  const auto& ranks = self(ctx).profile_.ranks;
  if (i >= ranks.size() || !out) return -1;
  const RankModel& r = ranks[i];
  out->rank = r.info.rank;
  out->gpu_name = r.info.gpu_name.c_str();
  out->gpu_memory_bytes = r.info.gpu_memory_bytes;
  out->memory = reinterpret_cast<const ss_counter_point*>(r.memory.data());
  out->memory_count = r.memory.size();
  return 0;
}

int HostContext::c_stream(void* ctx, std::size_t i, ss_stream_info* out) {
  const auto& tracks = self(ctx).profile_.stream_tracks;
  if (i >= tracks.size() || !out) return -1;
  const StreamTrack& t = tracks[i];
  out->rank = t.rank;
  out->kind = static_cast<std::uint8_t>(t.kind);
  out->native_id = t.native_id;
  out->name = t.name.c_str();
  out->events = reinterpret_cast<const ss_kernel_event*>(t.events.data());
  out->count = t.events.size();
  return 0;
}

int HostContext::c_range_lane(void* ctx, std::size_t i, ss_range_lane* out) {
  const auto& tracks = self(ctx).profile_.range_tracks;
  if (i >= tracks.size() || !out) return -1;
  const RangeTrack& t = tracks[i];
  out->rank = t.rank;
  out->thread_id = t.thread_id;
  out->stream_id = t.stream_id;
  out->depth = t.depth;
  out->events = reinterpret_cast<const ss_range_event*>(t.events.data());
  out->count = t.events.size();
  return 0;
}

int HostContext::c_module(void* ctx, std::size_t i, ss_module_info* out) {
  const auto& modules = self(ctx).profile_.modules;
  if (i >= modules.size() || !out) return -1;
  const ModuleNode& m = modules[i];
  out->fqn = m.fqn.c_str();
  out->class_name = m.class_name.c_str();
  out->parent = m.parent;
  out->fsdp_unit = m.fsdp_unit;
  out->is_fsdp_unit = m.is_fsdp_unit ? 1 : 0;
  out->param_count = m.param_count;
  out->param_bytes = m.param_bytes;
  return 0;
}

int HostContext::c_begin_table(void* ctx, const char* name, std::size_t n, const char* const* columns) {
  try {
    ResultTable t;
    t.name = name ? name : "";
    for (std::size_t i = 0; i < n; ++i) t.columns.emplace_back(columns && columns[i] ? columns[i] : "");
    self(ctx).result_.tables.push_back(std::move(t));
    return 0;
  } catch (...) {
    return -1;
  }
}

int HostContext::c_table_row(void* ctx, const ss_value* values, std::size_t n) {
  auto& tables = self(ctx).result_.tables;
  if (tables.empty() || n != tables.back().columns.size() || (n && !values)) return -1;
  try {
    std::vector<SqlValue> row;
    row.reserve(n);
    for (std::size_t i = 0; i < n; ++i) row.push_back(from_c(values[i]));
    tables.back().rows.push_back(std::move(row));
    return 0;
  } catch (...) {
    return -1;
  }
}

void HostContext::c_add_finding(void* ctx, const ss_finding* f) {
  if (!f) return;
  try {
    Finding x;
    x.severity = f->severity >= SS_SEVERITY_PROBLEM ? Severity::Problem
                 : f->severity == SS_SEVERITY_WARNING ? Severity::Warning
                                                      : Severity::Info;
    x.message = f->message ? f->message : "";
    if (f->start <= f->end) x.range = std::pair<TimeNs, TimeNs>{f->start, f->end};
    x.rank = f->rank;
    self(ctx).result_.findings.push_back(std::move(x));
  } catch (...) {
  }
}

void HostContext::c_add_marker(void* ctx, const ss_marker* m) {
  if (!m) return;
  try {
    self(ctx).result_.markers.push_back({m->start, m->end, m->rank, m->label ? m->label : ""});
  } catch (...) {
  }
}

int HostContext::c_begin_counter_track(void* ctx, const char* name, std::int32_t rank, const char* unit) {
  try {
    self(ctx).result_.counters.push_back({name ? name : "", rank, unit ? unit : "", {}});
    return 0;
  } catch (...) {
    return -1;
  }
}

int HostContext::c_counter_point(void* ctx, std::int64_t t, double v) {
  auto& counters = self(ctx).result_.counters;
  if (counters.empty()) return -1;
  try {
    counters.back().points.emplace_back(t, v);
    return 0;
  } catch (...) {
    return -1;
  }
}

}  // namespace ss::plugins
