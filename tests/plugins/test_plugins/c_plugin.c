/* A plugin written in C99 against the C ABI alone: it counts the ranks through the model API and
 * the collectives through SQL, and reports them in a table. Proves the header is plain C. */
#include <stdio.h>

#include "plugins/api/shardscope_plugin.h"

static int count_row(void* user, size_t n, const char* const* columns, const ss_value* values) {
  (void)columns;
  if (n == 1 && values[0].type == SS_VALUE_INT) *(int64_t*)user = values[0].i;
  return 0;
}

static int run(const ss_host_api* host, const ss_selection* sel, char* error, size_t size) {
  (void)sel;
  int64_t collectives = -1;
  if (host->query(host->ctx, "SELECT COUNT(*) FROM collectives", count_row, &collectives) != 0) {
    snprintf(error, size, "query failed: %s", host->last_error(host->ctx));
    return 1;
  }
  const char* columns[] = {"ranks", "collectives"};
  if (host->begin_table(host->ctx, "c_counts", 2, columns) != 0) return 2;
  ss_value row[2] = {{SS_VALUE_INT, (int64_t)host->rank_count(host->ctx), 0.0, NULL},
                     {SS_VALUE_INT, collectives, 0.0, NULL}};
  return host->table_row(host->ctx, row, 2) == 0 ? 0 : 3;
}

SS_PLUGIN_EXPORT uint32_t shardscope_plugin_api_version(void) { return SS_PLUGIN_API_VERSION; }
SS_PLUGIN_EXPORT const ss_plugin_info* shardscope_plugin_info(void) {
  static const ss_plugin_info info = {SS_PLUGIN_API_VERSION, "test-c", "Test: a C plugin", "Written in C99.", run};
  return &info;
}
