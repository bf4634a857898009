/* The ShardScope analysis plugin interface: a plain C ABI (see docs/plugins.md for why).
 *
 * A plugin is a shared library that exports two functions:
 *
 *   uint32_t shardscope_plugin_api_version(void);        -- must return SS_PLUGIN_API_VERSION
 *   const ss_plugin_info* shardscope_plugin_info(void);  -- called only when the versions match
 *
 * The host checks the version first, so a plugin built against another version of this header
 * is refused with a message naming both versions before any struct of this file is touched.
 * Any change to a struct or a function signature below increments SS_PLUGIN_API_VERSION.
 *
 * The host calls `run` with a read-only view of one loaded profile (ss_host_api) and a
 * selection. Everything a plugin reads through the host is valid only during that call. The
 * plugin reports results through the host's result functions (tables, findings, markers,
 * counter tracks). It returns 0 on success, or non-zero with a message in `error`.
 * C++ plugins should use plugins/api/plugin_sdk.h, which wraps all of this.
 */
#ifndef SHARDSCOPE_PLUGIN_H
#define SHARDSCOPE_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SS_PLUGIN_API_VERSION 1u

#if defined(_WIN32)
#define SS_PLUGIN_EXPORT __declspec(dllexport)
#else
#define SS_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* ---- Profile data, laid out exactly like the host's in-memory model (no copies) ------------ */

/* Kernel categories and stream kinds: the numeric values of storage/types.h. */
enum { SS_KERNEL_COMPUTE = 0, SS_KERNEL_COLLECTIVE = 1, SS_KERNEL_MEMCPY = 2, SS_KERNEL_MEMSET = 3 };
enum { SS_STREAM_UNKNOWN = 0, SS_STREAM_COMPUTE = 1, SS_STREAM_NCCL = 2, SS_STREAM_COPY = 3 };
enum { SS_RANGE_ANNOTATION = 0, SS_RANGE_MODULE = 1, SS_RANGE_FSDP = 2, SS_RANGE_CPU_OP = 3, SS_RANGE_NCCL = 4,
       SS_RANGE_GPU_ANNOTATION = 5 };

typedef struct ss_kernel_event {
  int64_t start, end; /* ns on the profile clock */
  uint32_t name;      /* string id: host->string(ctx, name) */
  int32_t module;     /* module index (host->module), -1 when unattributed */
  uint32_t id;        /* kernels.id in the profile (for SQL) */
  uint8_t category;   /* SS_KERNEL_* */
  uint8_t reserved[3];
} ss_kernel_event;

typedef struct ss_range_event {
  int64_t start, end;
  uint32_t name;
  int32_t module;
  uint32_t id; /* ranges.id */
  uint8_t kind;  /* SS_RANGE_* */
  uint8_t phase; /* 0 none, 1 forward, 2 backward, 3 recompute, 4 optimizer */
  uint8_t reserved[2];
} ss_range_event;

typedef struct ss_counter_point {
  int64_t time;
  int64_t value; /* bytes allocated after this event */
} ss_counter_point;

typedef struct ss_collective_event {
  int64_t start, end;
  int64_t bytes;
  int64_t sequence;  /* per process group; -1 when unknown */
  int64_t kernel_id; /* kernels.id, -1 when unknown */
  int32_t rank;
  int32_t process_group; /* process_groups.id, -1 when unknown */
  uint8_t type;          /* storage/types.h CollectiveType: 1 all-reduce, 2 all-gather, 3 reduce-scatter, ... */
} ss_collective_event;

typedef struct ss_stream_info {
  int32_t rank;
  uint8_t kind; /* SS_STREAM_* */
  int64_t native_id;
  const char* name;
  const ss_kernel_event* events; /* sorted by start */
  size_t count;
} ss_stream_info;

typedef struct ss_range_lane {
  int32_t rank;
  int64_t thread_id; /* threads.id for CPU lanes, -1 otherwise */
  int64_t stream_id; /* streams.id for GPU lanes, -1 otherwise */
  int32_t depth;     /* nesting depth: 0 outermost */
  const ss_range_event* events; /* sorted by start */
  size_t count;
} ss_range_lane;

typedef struct ss_module_info {
  const char* fqn; /* "" for the root model */
  const char* class_name;
  int32_t parent;    /* module index, -1 for roots */
  int32_t fsdp_unit; /* module index of the unit owning its parameters, -1 when unknown */
  int32_t is_fsdp_unit;
  int64_t param_count;
  int64_t param_bytes;
} ss_module_info;

typedef struct ss_rank_info {
  int32_t rank;
  const char* gpu_name;
  int64_t gpu_memory_bytes;
  const ss_counter_point* memory; /* allocated bytes over time, sorted by time */
  size_t memory_count;
} ss_rank_info;

/* ---- Values, for SQL rows and result tables ----------------------------------------------- */

enum { SS_VALUE_NULL = 0, SS_VALUE_INT = 1, SS_VALUE_REAL = 2, SS_VALUE_TEXT = 3 };

typedef struct ss_value {
  int32_t type; /* SS_VALUE_* */
  int64_t i;
  double d;
  const char* s; /* UTF-8, NUL-terminated; valid during the callback / call only */
} ss_value;

/* Called once per result row; return non-zero to stop the query early. */
typedef int (*ss_row_fn)(void* user, size_t column_count, const char* const* columns, const ss_value* values);

/* ---- Results ------------------------------------------------------------------------------- */

enum { SS_SEVERITY_INFO = 0, SS_SEVERITY_WARNING = 1, SS_SEVERITY_PROBLEM = 2 };

typedef struct ss_finding {
  int32_t severity; /* SS_SEVERITY_* */
  const char* message;
  int64_t start, end; /* time range to jump to; start > end when none */
  int32_t rank;       /* rank to jump to, -1 for none / all */
} ss_finding;

typedef struct ss_marker {
  int64_t start, end; /* equal for an instant */
  int32_t rank;       /* -1: every rank */
  const char* label;
} ss_marker;

/* Selection: a time window and a set of ranks, either of which may be absent. */
typedef struct ss_selection {
  int32_t has_time;
  int64_t from, to; /* closed window, when has_time */
  const int32_t* ranks; /* NULL / rank_count 0: every rank */
  size_t rank_count;
} ss_selection;

typedef struct ss_host_api {
  uint32_t api_version; /* SS_PLUGIN_API_VERSION of the host */
  void* ctx;            /* pass to every function below */

  /* Profile: file and span. */
  const char* (*profile_path)(void* ctx);
  int64_t (*time_begin)(void* ctx);
  int64_t (*time_end)(void* ctx);
  const char* (*meta)(void* ctx, const char* key); /* NULL when absent */

  /* Read-only SQL (storage/readonly_query.h): writes are refused. Returns 0, or -1 with the
   * message in last_error. */
  int (*query)(void* ctx, const char* sql, ss_row_fn fn, void* user);
  const char* (*last_error)(void* ctx);

  /* The loaded in-memory model. Index-based accessors return 0 on success, -1 out of range. */
  const char* (*string)(void* ctx, uint32_t id);
  size_t (*rank_count)(void* ctx);
  int (*rank)(void* ctx, size_t index, ss_rank_info* out);
  size_t (*stream_count)(void* ctx);
  int (*stream)(void* ctx, size_t index, ss_stream_info* out);
  size_t (*range_lane_count)(void* ctx);
  int (*range_lane)(void* ctx, size_t index, ss_range_lane* out);
  size_t (*module_count)(void* ctx);
  int (*module)(void* ctx, size_t index, ss_module_info* out);
  /* Sorted by (rank, start). */
  const ss_collective_event* (*collectives)(void* ctx, size_t* count);

  /* Results. A table is begun with its column names, then filled row by row (values count =
   * column count). Returns 0, or -1 on misuse (no table begun, wrong count). */
  int (*begin_table)(void* ctx, const char* name, size_t column_count, const char* const* columns);
  int (*table_row)(void* ctx, const ss_value* values, size_t count);
  void (*add_finding)(void* ctx, const ss_finding* finding);
  void (*add_marker)(void* ctx, const ss_marker* marker);
  /* A counter track (e.g. utilisation over time) for one rank; points appended in time order. */
  int (*begin_counter_track)(void* ctx, const char* name, int32_t rank, const char* unit);
  int (*counter_point)(void* ctx, int64_t time, double value);
  /* A line for the log / stderr. */
  void (*log)(void* ctx, const char* message);
} ss_host_api;

typedef struct ss_plugin_info {
  uint32_t api_version; /* SS_PLUGIN_API_VERSION it was built with */
  const char* name;     /* command-line name: lowercase, digits, '-' or '_' */
  const char* title;    /* one line for lists */
  const char* description;
  /* Returns 0 on success; non-zero with a NUL-terminated message in error[0..error_size). */
  int (*run)(const ss_host_api* host, const ss_selection* selection, char* error, size_t error_size);
} ss_plugin_info;

typedef uint32_t (*ss_plugin_api_version_fn)(void);
typedef const ss_plugin_info* (*ss_plugin_info_fn)(void);

#define SS_PLUGIN_API_VERSION_SYMBOL "shardscope_plugin_api_version"
#define SS_PLUGIN_INFO_SYMBOL "shardscope_plugin_info"

#ifdef __cplusplus
}
#endif

#endif /* SHARDSCOPE_PLUGIN_H */
