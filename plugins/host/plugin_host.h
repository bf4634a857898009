// Finds, loads and runs analysis plugins (shared libraries with the C ABI of
// plugins/api/shardscope_plugin.h). This is the API both front ends use: `shardscope analyze`
// and the GUI's Analyses dock (which lists plugins(), calls run() on the current selection and
// jumps to the findings' ranges). No Qt here, so the CLI works in builds without the GUI.
//
// Containment: a plugin built for another API version is refused at load with a message naming
// both versions; a plugin whose run() returns an error or lets a C++ exception escape gives an
// AnalysisResult with ok = false and the message, and the host carries on. A plugin that crashes
// (segfault) takes the process down: in-process plugins cannot be isolated from that.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "plugins/host/analysis_result.h"
#include "storage/profile_model.h"

namespace ss::plugins {

struct PluginDescriptor {
  std::string name;
  std::string title;
  std::string description;
  std::string path;  // the shared library
};

struct LoadProblem {
  std::string path;
  std::string message;
};

// The directories searched, in order of precedence: each entry of SHARDSCOPE_PLUGIN_PATH
// (colon-separated), ~/.local/share/shardscope/plugins, <exe_dir>/../lib/shardscope/plugins,
// and the build tree's plugin folder. Absent directories are kept (listing says they are absent).
std::vector<std::string> default_plugin_dirs();

class PluginHost {
 public:
  PluginHost();
  ~PluginHost();  // unloads the libraries
  PluginHost(const PluginHost&) = delete;
  PluginHost& operator=(const PluginHost&) = delete;

  // Loads every shared library (*.so) in each directory, in order; a plugin whose name is
  // already loaded is skipped (earlier directories win) and recorded as a problem.
  void discover(const std::vector<std::string>& dirs = default_plugin_dirs());
  // Loads one library. Returns false (and records the problem) when it is refused.
  bool load(const std::string& path);

  const std::vector<PluginDescriptor>& plugins() const { return descriptors_; }
  const std::vector<LoadProblem>& problems() const { return problems_; }
  const std::vector<std::string>& searched_dirs() const { return searched_; }
  const PluginDescriptor* find(std::string_view name) const;

  // Runs the named plugin on a loaded profile (profile.path is used for SQL). Never throws for
  // plugin faults: they are reported in the result. Unknown name: ok = false.
  AnalysisResult run(std::string_view name, const Profile& profile, const Selection& selection = {}) const;

 private:
  struct Loaded;
  std::vector<std::unique_ptr<Loaded>> loaded_;
  std::vector<PluginDescriptor> descriptors_;
  std::vector<LoadProblem> problems_;
  std::vector<std::string> searched_;
};

}  // namespace ss::plugins
