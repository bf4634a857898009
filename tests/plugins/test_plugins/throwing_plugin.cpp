// A badly-behaved test plugin: its run() lets a C++ exception escape across the C ABI (no SDK
// guard), after emitting a partial result. The host must report it and carry on.
#include <stdexcept>

#include "plugins/api/shardscope_plugin.h"

namespace {

int run(const ss_host_api* host, const ss_selection*, char*, size_t) {
  const char* cols[] = {"x"};
  host->begin_table(host->ctx, "partial", 1, cols);
  throw std::runtime_error("boom from the throwing plugin");
}

}  // namespace

extern "C" SS_PLUGIN_EXPORT uint32_t shardscope_plugin_api_version(void) { return SS_PLUGIN_API_VERSION; }
extern "C" SS_PLUGIN_EXPORT const ss_plugin_info* shardscope_plugin_info(void) {
  static const ss_plugin_info info = {SS_PLUGIN_API_VERSION, "test-throws", "Test: throws", "Throws from run.", &run};
  return &info;
}
