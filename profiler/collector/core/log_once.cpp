#include "profiler/collector/core/log_once.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <set>

namespace ss::collector {
namespace {
std::mutex g_mutex;
std::set<std::string>& printed() {
  static auto* s = new std::set<std::string>();  // leaked on purpose: used from atexit handlers
  return *s;
}
std::atomic<bool> g_verbose{false};
}  // namespace

void log_line(const std::string& message) {
  std::fprintf(stderr, "[shardscope] %s\n", message.c_str());
  std::fflush(stderr);
}

bool log_once(const std::string& key, const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!printed().insert(key).second) return false;
  }
  log_line(message);
  return true;
}

void set_log_verbose(bool on) { g_verbose = on; }
void log_verbose(const std::string& message) {
  if (g_verbose) log_line(message);
}

}  // namespace ss::collector
