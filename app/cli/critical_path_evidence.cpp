#include "app/cli/critical_path_evidence.h"

#include <stdexcept>
#include <variant>

#include "plugins/host/plugin_host.h"
#include "storage/profile_reader.h"

namespace ss::cli {

std::vector<UnitEvidence> critical_path_evidence(const std::string& profile_path) {
  plugins::PluginHost host;
  host.discover();
  if (!host.find("critical-path"))
    throw std::runtime_error("the critical-path analysis plugin is not installed (see 'shardscope analyze --list')");
  const Profile profile = load_profile(profile_path);
  const plugins::AnalysisResult r = host.run("critical-path", profile);
  if (!r.ok) throw std::runtime_error("critical-path analysis failed: " + r.error);
  const plugins::ResultTable* t = r.table("all_gathers_on_path");
  if (!t || t->columns.size() < 4) throw std::runtime_error("critical-path analysis gave no all-gather ranking");
  std::vector<UnitEvidence> out;
  for (const auto& row : t->rows) {
    const auto* unit = std::get_if<std::string>(&row[0]);
    const auto* on_path = std::get_if<std::int64_t>(&row[1]);
    const auto* total = std::get_if<std::int64_t>(&row[3]);
    if (!unit || !on_path || *on_path <= 0 || *unit == "(root)" || *unit == "(unattributed)") continue;
    out.push_back({*unit, *on_path, total ? *total : 0});
  }
  return out;
}

}  // namespace ss::cli
