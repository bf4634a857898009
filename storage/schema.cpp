#include "storage/schema.h"

namespace ss::schema {

const std::vector<Table>& tables() {
  static const std::vector<Table> kTables = {
      {"meta", {{"key", "TEXT PRIMARY KEY"}, {"value", "TEXT NOT NULL"}}, " WITHOUT ROWID"},
      {"origin",
       {{"id", "INTEGER PRIMARY KEY CHECK (id = 1)"},
        {"kind", "INTEGER NOT NULL"},
        {"tool", "TEXT"},
        {"tool_version", "TEXT"},
        {"source_format", "TEXT"},
        {"source_files", "TEXT"},
        {"parameters_json", "TEXT"},
        {"created_utc", "TEXT"},
        {"notes", "TEXT"}}},
      {"enums",
       {{"type", "TEXT NOT NULL"}, {"value", "INTEGER NOT NULL"}, {"label", "TEXT NOT NULL"}},
       ", PRIMARY KEY (type, value)) WITHOUT ROWID"},
      {"strings", {{"id", "INTEGER PRIMARY KEY"}, {"value", "TEXT NOT NULL"}}},
      {"ranks",
       {{"rank", "INTEGER PRIMARY KEY"},
        {"host", "TEXT"},
        {"pid", "INTEGER"},
        {"device_index", "INTEGER"},
        {"gpu_name", "TEXT"},
        {"gpu_memory_bytes", "INTEGER"},
        {"sm_count", "INTEGER"},
        {"compute_major", "INTEGER"},
        {"compute_minor", "INTEGER"},
        {"clock_offset_ns", "INTEGER NOT NULL DEFAULT 0"},
        {"world_size", "INTEGER"}}},
      {"streams",
       {{"id", "INTEGER PRIMARY KEY"},
        {"rank", "INTEGER NOT NULL"},
        {"device", "INTEGER"},
        {"native_id", "INTEGER"},
        {"kind", "INTEGER NOT NULL"},
        {"name", "TEXT"}}},
      {"threads",
       {{"id", "INTEGER PRIMARY KEY"}, {"rank", "INTEGER NOT NULL"}, {"tid", "INTEGER"}, {"name", "TEXT"}}},
      {"launch_configs",
       {{"id", "INTEGER PRIMARY KEY"},
        {"grid_x", "INTEGER"},
        {"grid_y", "INTEGER"},
        {"grid_z", "INTEGER"},
        {"block_x", "INTEGER"},
        {"block_y", "INTEGER"},
        {"block_z", "INTEGER"},
        {"shared_mem_bytes", "INTEGER"},
        {"registers_per_thread", "INTEGER"}}},
      {"kernels",
       {{"id", "INTEGER PRIMARY KEY"},
        {"rank", "INTEGER NOT NULL"},
        {"stream_id", "INTEGER NOT NULL REFERENCES streams(id)"},
        {"start_ns", "INTEGER NOT NULL"},
        {"duration_ns", "INTEGER NOT NULL"},
        {"name_id", "INTEGER NOT NULL REFERENCES strings(id)"},
        {"correlation", "INTEGER"},
        {"launch_config_id", "INTEGER REFERENCES launch_configs(id)"},
        {"category", "INTEGER NOT NULL"},
        {"module_id", "INTEGER REFERENCES modules(id)"},
        {"bytes", "INTEGER"}}},
      {"process_groups",
       {{"id", "INTEGER PRIMARY KEY"},
        {"name", "TEXT"},
        {"description", "TEXT"},
        {"ranks", "TEXT"},
        {"size", "INTEGER"},
        {"backend", "TEXT"}}},
      {"collectives",
       {{"id", "INTEGER PRIMARY KEY"},
        {"rank", "INTEGER NOT NULL"},
        {"kernel_id", "INTEGER REFERENCES kernels(id)"},
        {"type", "INTEGER NOT NULL"},
        {"bytes", "INTEGER"},
        {"dtype_id", "INTEGER REFERENCES strings(id)"},
        {"process_group_id", "INTEGER REFERENCES process_groups(id)"},
        {"group_size", "INTEGER"},
        {"sequence", "INTEGER"},
        {"start_ns", "INTEGER NOT NULL"},
        {"duration_ns", "INTEGER NOT NULL"}}},
      {"modules",
       {{"id", "INTEGER PRIMARY KEY"},
        {"parent_id", "INTEGER REFERENCES modules(id)"},
        {"fqn", "TEXT NOT NULL"},
        {"class_name", "TEXT"},
        {"param_count", "INTEGER"},
        {"param_bytes", "INTEGER"},
        {"is_fsdp_unit", "INTEGER NOT NULL DEFAULT 0"},
        {"fsdp_unit_id", "INTEGER REFERENCES modules(id)"},
        {"reshard_policy", "TEXT"}}},
      {"ranges",
       {{"id", "INTEGER PRIMARY KEY"},
        {"rank", "INTEGER NOT NULL"},
        {"thread_id", "INTEGER REFERENCES threads(id)"},
        {"stream_id", "INTEGER REFERENCES streams(id)"},
        {"start_ns", "INTEGER NOT NULL"},
        {"duration_ns", "INTEGER NOT NULL"},
        {"name_id", "INTEGER NOT NULL REFERENCES strings(id)"},
        {"kind", "INTEGER NOT NULL"},
        {"phase", "INTEGER NOT NULL"},
        {"module_id", "INTEGER REFERENCES modules(id)"},
        {"parent_id", "INTEGER REFERENCES ranges(id)"},
        {"depth", "INTEGER NOT NULL"}}},
      {"memory_events",
       {{"id", "INTEGER PRIMARY KEY"},
        {"rank", "INTEGER NOT NULL"},
        {"time_ns", "INTEGER NOT NULL"},
        {"address", "INTEGER"},
        {"bytes", "INTEGER NOT NULL"},
        {"category", "INTEGER NOT NULL"},
        {"module_id", "INTEGER REFERENCES modules(id)"},
        {"stream_id", "INTEGER REFERENCES streams(id)"}}},
      {"steps",
       {{"id", "INTEGER PRIMARY KEY"},
        {"rank", "INTEGER NOT NULL"},
        {"number", "INTEGER NOT NULL"},
        {"start_ns", "INTEGER NOT NULL"},
        {"duration_ns", "INTEGER NOT NULL"}}},
      {"skipped_events",
       {{"rank", "INTEGER"}, {"reason", "TEXT NOT NULL"}, {"count", "INTEGER NOT NULL"}}},
      // The host call that launched each kernel / copy / memset (cudaLaunchKernel, cudaMemcpyAsync
      // ...), from the correlation id: where the CPU issued the work, for launch delay, queue
      // depth and idle-gap causes.
      {"launches",
       {{"id", "INTEGER PRIMARY KEY"},
        {"kernel_id", "INTEGER NOT NULL REFERENCES kernels(id)"},
        {"rank", "INTEGER NOT NULL"},
        {"thread_id", "INTEGER REFERENCES threads(id)"},
        {"start_ns", "INTEGER NOT NULL"},
        {"duration_ns", "INTEGER NOT NULL"},
        {"name_id", "INTEGER REFERENCES strings(id)"}},
       {},
       true},
      // Steps the recording did not profile (`record --steps A:B`: the steps outside the capture
      // window), timed by the wall clock only: the job as it runs without the profiler.
      {"unobserved_steps",
       {{"id", "INTEGER PRIMARY KEY"},
        {"rank", "INTEGER NOT NULL"},
        {"number", "INTEGER NOT NULL"},
        {"start_ns", "INTEGER NOT NULL"},
        {"duration_ns", "INTEGER NOT NULL"},
        // How many times the job called its model (the root module) in the step; an evaluation
        // between steps adds calls, and such steps are not the training step a replay stands for.
        // NULL where not counted.
        {"model_calls", "INTEGER", true}},
       {},
       true},
  };
  return kTables;
}

const std::vector<std::pair<std::string_view, std::string_view>>& views() {
  static const std::vector<std::pair<std::string_view, std::string_view>> kViews = {
      {"kernel_view",
       "SELECT k.id, k.rank, k.stream_id, s.native_id AS stream, k.start_ns, k.start_ns + k.duration_ns AS end_ns,"
       " k.duration_ns, n.value AS name, e.label AS category, m.fqn AS module, k.correlation, k.bytes,"
       " c.grid_x, c.grid_y, c.grid_z, c.block_x, c.block_y, c.block_z"
       " FROM kernels k JOIN strings n ON n.id = k.name_id JOIN streams s ON s.id = k.stream_id"
       " LEFT JOIN enums e ON e.type = 'kernel_category' AND e.value = k.category"
       " LEFT JOIN modules m ON m.id = k.module_id LEFT JOIN launch_configs c ON c.id = k.launch_config_id"},
      {"launch_view",
       "SELECT l.id, l.kernel_id, l.rank, k.stream_id, s.native_id AS stream, l.thread_id, t.tid,"
       " l.start_ns AS launch_start_ns, l.start_ns + l.duration_ns AS launch_end_ns, l.duration_ns AS launch_ns,"
       " k.start_ns AS kernel_start_ns, k.start_ns - l.start_ns AS delay_ns, n.value AS api, kn.value AS kernel"
       " FROM launches l JOIN kernels k ON k.id = l.kernel_id JOIN streams s ON s.id = k.stream_id"
       " LEFT JOIN threads t ON t.id = l.thread_id LEFT JOIN strings n ON n.id = l.name_id"
       " JOIN strings kn ON kn.id = k.name_id"},
      {"range_view",
       "SELECT r.id, r.rank, r.thread_id, r.stream_id, r.start_ns, r.start_ns + r.duration_ns AS end_ns,"
       " r.duration_ns, n.value AS name, ek.label AS kind, ep.label AS phase, m.fqn AS module, r.parent_id, r.depth"
       " FROM ranges r JOIN strings n ON n.id = r.name_id"
       " LEFT JOIN enums ek ON ek.type = 'range_kind' AND ek.value = r.kind"
       " LEFT JOIN enums ep ON ep.type = 'range_phase' AND ep.value = r.phase"
       " LEFT JOIN modules m ON m.id = r.module_id"},
      {"collective_view",
       "SELECT c.id, c.rank, c.kernel_id, e.label AS type, c.bytes, d.value AS dtype, g.name AS process_group,"
       " g.description AS process_group_description, c.group_size, c.sequence, c.start_ns,"
       " c.start_ns + c.duration_ns AS end_ns, c.duration_ns"
       " FROM collectives c LEFT JOIN enums e ON e.type = 'collective_type' AND e.value = c.type"
       " LEFT JOIN strings d ON d.id = c.dtype_id LEFT JOIN process_groups g ON g.id = c.process_group_id"},
      {"memory_view",
       "SELECT me.id, me.rank, me.time_ns, me.address, me.bytes, e.label AS category, m.fqn AS module, me.stream_id"
       " FROM memory_events me LEFT JOIN enums e ON e.type = 'memory_category' AND e.value = me.category"
       " LEFT JOIN modules m ON m.id = me.module_id"},
  };
  return kViews;
}

std::string create_table_sql(const Table& t) {
  std::string sql = "CREATE TABLE ";
  sql += t.name;
  sql += " (";
  bool first = true;
  for (const auto& c : t.columns) {
    if (!first) sql += ", ";
    first = false;
    sql += c.name;
    sql += ' ';
    sql += c.decl;
  }
  if (t.suffix.empty() || t.suffix.front() != ',') sql += ')';
  sql += t.suffix;
  return sql;
}

}  // namespace ss::schema
