// The built-in analyses, loaded once per test executable, and a run that must succeed (tests that
// compile this need SS_BUILTIN_PLUGIN_DIR, set by tests/plugins/CMakeLists.txt).
#pragma once

#include <catch2/catch.hpp>

#include <string>

#include "plugins/host/plugin_host.h"
#include "storage/profile_model.h"

namespace ss::test {

inline plugins::PluginHost& builtins() {
  static plugins::PluginHost* h = [] {
    auto* host = new plugins::PluginHost;  // never destroyed: plugins stay loaded to the end
    host->discover({SS_BUILTIN_PLUGIN_DIR});
    return host;
  }();
  return *h;
}

inline plugins::AnalysisResult run_ok(const std::string& name, const Profile& p, const plugins::Selection& sel = {}) {
  plugins::AnalysisResult r = builtins().run(name, p, sel);
  INFO(r.error);
  REQUIRE(r.ok);
  return r;
}

}  // namespace ss::test
