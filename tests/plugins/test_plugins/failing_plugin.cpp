// A test plugin that returns an error code with a message (the polite way to fail).
#include <cstdio>

#include "plugins/api/shardscope_plugin.h"

namespace {

int run(const ss_host_api*, const ss_selection*, char* error, size_t size) {
  std::snprintf(error, size, "%s", "this profile has nothing for the failing plugin");
  return 7;
}

}  // namespace

extern "C" SS_PLUGIN_EXPORT uint32_t shardscope_plugin_api_version(void) { return SS_PLUGIN_API_VERSION; }
extern "C" SS_PLUGIN_EXPORT const ss_plugin_info* shardscope_plugin_info(void) {
  static const ss_plugin_info info = {SS_PLUGIN_API_VERSION, "test-fails", "Test: fails", "Returns an error.", &run};
  return &info;
}
