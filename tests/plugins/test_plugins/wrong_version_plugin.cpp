// A test plugin built as if against another plugin API version (42). The host must refuse it
// before calling anything else, naming both versions.
#include "plugins/api/shardscope_plugin.h"

extern "C" SS_PLUGIN_EXPORT uint32_t shardscope_plugin_api_version(void) { return 42; }
extern "C" SS_PLUGIN_EXPORT const ss_plugin_info* shardscope_plugin_info(void) {
  // Never reached by a correct host: a version-42 struct may have any layout.
  __builtin_trap();
}
