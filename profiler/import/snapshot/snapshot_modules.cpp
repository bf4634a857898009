#include "profiler/import/snapshot/snapshot_modules.h"

#include <string_view>

namespace ss::import::snapshot {

namespace {

constexpr std::string_view kModuleFramePrefix = "nn.Module: ";

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string basename(std::string_view path) {
  const auto slash = path.find_last_of("/\\");
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

// torch.nn.Module's call machinery: between a forward and the line that called the module.
bool module_call_machinery(const Frame& f) {
  return ends_with(f.filename, "torch/nn/modules/module.py") || ends_with(f.filename, "torch\\nn\\modules\\module.py");
}

// A caller frame without a line (kUnknownLine) is named "file.py:?".
std::string line_text(std::int64_t line) { return line < 0 ? "?" : std::to_string(line); }

}  // namespace

std::string class_of_module_label(const std::string& label) {
  std::size_t end = label.size();
  while (end > 0 && label[end - 1] >= '0' && label[end - 1] <= '9') --end;
  if (end > 0 && end < label.size() && label[end - 1] == '_') return label.substr(0, end - 1);
  return label;
}

ModulePath module_path_from_frames(const std::vector<Frame>& frames) {
  ModulePath p;
  // Innermost first in the snapshot; the path is built outermost first.
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
    if (std::string_view(it->name).substr(0, kModuleFramePrefix.size()) != kModuleFramePrefix) continue;
    const std::string label = it->name.substr(kModuleFramePrefix.size());
    p.levels.push_back({label, class_of_module_label(label)});
  }
  if (!p.levels.empty()) {
    if (p.levels.size() > kMaxModuleLevels) p.levels.resize(kMaxModuleLevels);
    return p;
  }
  p.separator = '/';
  for (std::size_t i = frames.size(); i-- > 0;) {
    const Frame& f = frames[i];
    if (f.name != "forward") continue;
    // The caller: the next frame outwards that is not nn.Module's call machinery.
    std::size_t c = i + 1;
    while (c < frames.size() && module_call_machinery(frames[c])) ++c;
    ModuleLevel level;
    level.name = c < frames.size() ? basename(frames[c].filename) + ":" + line_text(frames[c].line)
                                   : basename(f.filename) + ":forward";
    level.class_name = "forward in " + basename(f.filename);
    p.levels.push_back(std::move(level));
    if (p.levels.size() == kMaxModuleLevels) break;
  }
  return p;
}

}  // namespace ss::import::snapshot
