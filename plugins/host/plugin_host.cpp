#include "plugins/host/plugin_host.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <filesystem>

#include "plugins/api/shardscope_plugin.h"
#include "plugins/host/host_context.h"
#include "storage/install_paths.h"

namespace ss::plugins {
namespace fs = std::filesystem;

const char* to_string(Severity s) {
  switch (s) {
    case Severity::Info: return "info";
    case Severity::Warning: return "warning";
    case Severity::Problem: return "problem";
  }
  return "info";
}

struct PluginHost::Loaded {
  void* handle = nullptr;
  const ss_plugin_info* info = nullptr;
  std::string path;
  ~Loaded() {
    if (handle) dlclose(handle);
  }
};

namespace {

bool valid_name(const char* s) {
  if (!s || !*s) return false;
  for (const char* p = s; *p; ++p)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_')) return false;
  return true;
}

}  // namespace

std::vector<std::string> default_plugin_dirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("SHARDSCOPE_PLUGIN_PATH")) {
    std::string s = env;
    std::size_t at = 0;
    while (at <= s.size()) {
      std::size_t colon = s.find(':', at);
      std::string part = s.substr(at, colon == std::string::npos ? std::string::npos : colon - at);
      if (!part.empty()) dirs.push_back(part);
      if (colon == std::string::npos) break;
      at = colon + 1;
    }
  }
  if (const char* home = std::getenv("HOME"); home && *home)
    dirs.push_back(std::string(home) + "/.local/share/shardscope/plugins");
  if (std::string installed = shardscope_lib_path("plugins"); !installed.empty()) dirs.push_back(installed);
#ifdef SHARDSCOPE_BUILD_PLUGIN_DIR
  // The build tree's plugin folder, so tests and uninstalled builds find the built-ins.
  std::string build_dir = fs::path(SHARDSCOPE_BUILD_PLUGIN_DIR).lexically_normal().string();
  if (std::find(dirs.begin(), dirs.end(), build_dir) == dirs.end()) dirs.push_back(build_dir);
#endif
  return dirs;
}

PluginHost::PluginHost() = default;
PluginHost::~PluginHost() = default;

void PluginHost::discover(const std::vector<std::string>& dirs) {
  for (const auto& dir : dirs) {
    searched_.push_back(dir);
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().extension() == ".so") files.push_back(e.path().string());
    std::sort(files.begin(), files.end());  // deterministic order across file systems
    for (const auto& f : files) load(f);
  }
}

bool PluginHost::load(const std::string& path) {
  auto refuse = [&](const std::string& why) {
    problems_.push_back({path, why});
    return false;
  };
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = dlerror();
    return refuse(std::string("cannot load: ") + (e ? e : "unknown dlopen error"));
  }
  auto loaded = std::make_unique<Loaded>();
  loaded->handle = handle;
  loaded->path = path;
  auto version_fn = reinterpret_cast<ss_plugin_api_version_fn>(dlsym(handle, SS_PLUGIN_API_VERSION_SYMBOL));
  auto info_fn = reinterpret_cast<ss_plugin_info_fn>(dlsym(handle, SS_PLUGIN_INFO_SYMBOL));
  if (!version_fn || !info_fn)
    return refuse("not a ShardScope plugin: it does not export " SS_PLUGIN_API_VERSION_SYMBOL " and " SS_PLUGIN_INFO_SYMBOL);
  const std::uint32_t version = version_fn();
  if (version != SS_PLUGIN_API_VERSION)
    return refuse("built for plugin API version " + std::to_string(version) + ", but this ShardScope uses version " +
                  std::to_string(SS_PLUGIN_API_VERSION) + "; rebuild the plugin against this ShardScope");
  const ss_plugin_info* info = info_fn();
  if (!info || info->api_version != SS_PLUGIN_API_VERSION || !info->run)
    return refuse("invalid plugin description (null, version mismatch in its info, or no run function)");
  if (!valid_name(info->name))
    return refuse("invalid plugin name '" + std::string(info->name ? info->name : "") +
                  "' (use lowercase letters, digits, '-' and '_')");
  if (const PluginDescriptor* other = find(info->name))
    return refuse("a plugin named '" + std::string(info->name) + "' is already loaded from " + other->path +
                  "; this one is skipped");
  loaded->info = info;
  descriptors_.push_back({info->name, info->title ? info->title : "", info->description ? info->description : "", path});
  loaded_.push_back(std::move(loaded));
  return true;
}

const PluginDescriptor* PluginHost::find(std::string_view name) const {
  for (const auto& d : descriptors_)
    if (d.name == name) return &d;
  return nullptr;
}

AnalysisResult PluginHost::run(std::string_view name, const Profile& profile, const Selection& selection) const {
  AnalysisResult failed;
  failed.analysis = std::string(name);
  const Loaded* plugin = nullptr;
  for (const auto& l : loaded_)
    if (l->info && name == l->info->name) plugin = l.get();
  if (!plugin) {
    failed.error = "no analysis named '" + std::string(name) + "'";
    return failed;
  }

  HostContext host(profile);
  std::vector<std::int32_t> ranks(selection.ranks.begin(), selection.ranks.end());
  ss_selection sel{};
  sel.has_time = selection.from || selection.to ? 1 : 0;
  sel.from = selection.from.value_or(profile.time_begin);
  sel.to = selection.to.value_or(profile.time_end);
  sel.ranks = ranks.empty() ? nullptr : ranks.data();
  sel.rank_count = ranks.size();

  char error[2048] = {0};
  int rc = 0;
  std::string escaped;
  try {
    // C++ exceptions unwind through the C-ABI call (same compiler runtime); catch them here.
    rc = plugin->info->run(host.api(), &sel, error, sizeof error);
  } catch (const std::exception& e) {
    escaped = std::string("an exception escaped the plugin: ") + e.what();
  } catch (...) {
    escaped = "an exception of unknown type escaped the plugin";
  }
  AnalysisResult result = std::move(host.result());
  result.analysis = std::string(name);
  if (!escaped.empty()) {
    failed.error = "analysis '" + std::string(name) + "' (" + plugin->path + ") failed: " + escaped;
    failed.log = std::move(result.log);
    return failed;
  }
  if (rc != 0) {
    error[sizeof error - 1] = '\0';
    failed.error = "analysis '" + std::string(name) + "' failed: " + (error[0] ? error : "error code " + std::to_string(rc));
    failed.log = std::move(result.log);
    return failed;
  }
  result.ok = true;
  return result;
}

}  // namespace ss::plugins
