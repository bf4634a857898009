#include "profiler/collector/core/py_sidecar.h"

#include <charconv>
#include <fstream>
#include <sstream>
#include <string_view>

#include "storage/errors.h"

namespace ss::collector {
namespace {

std::vector<std::string_view> split_tabs(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t pos = 0;
  while (true) {
    auto tab = line.find('\t', pos);
    out.push_back(line.substr(pos, tab == std::string_view::npos ? std::string_view::npos : tab - pos));
    if (tab == std::string_view::npos) break;
    pos = tab + 1;
  }
  return out;
}

std::int64_t to_int(std::string_view s, const std::string& where, const char* what) {
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty())
    throw ProfileError(ProfileErrorKind::MalformedTable, where + ": expected an integer " + what + ", got '" + std::string(s) + "'");
  return v;
}

}  // namespace

Sidecar parse_sidecar(const std::string& text, const std::string& path) {
  Sidecar out;
  std::map<std::string, std::size_t> module_index;
  std::size_t line_no = 0, pos = 0;
  while (pos < text.size()) {
    auto nl = text.find('\n', pos);
    if (nl == std::string::npos) break;  // a partial last line: the writer was killed mid-line
    std::string_view line(text.data() + pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    const std::string where = path + ":" + std::to_string(line_no);
    auto f = split_tabs(line);
    if (f[0] == "meta") {
      if (f.size() != 3) throw ProfileError(ProfileErrorKind::MalformedTable, where + ": expected 'meta<TAB>key<TAB>value'");
      out.meta[std::string(f[1])] = std::string(f[2]);
    } else if (f[0] == "module") {
      if (f.size() != 7 && f.size() != 8)
        throw ProfileError(ProfileErrorKind::MalformedTable,
                           where +
                               ": expected 7 or 8 fields 'module fqn class param_count param_bytes is_fsdp_unit reshard "
                               "[unit_owner]', got " +
                               std::to_string(f.size()));
      SidecarModule m;
      m.fqn = f[1];
      m.class_name = f[2];
      m.param_count = to_int(f[3], where, "param_count");
      m.param_bytes = to_int(f[4], where, "param_bytes");
      m.is_fsdp_unit = to_int(f[5], where, "is_fsdp_unit") != 0;
      m.reshard_policy = f[6];
      if (f.size() == 8) m.unit_owner = f[7];
      if (auto it = module_index.find(m.fqn); it != module_index.end()) {
        out.modules[it->second] = std::move(m);
      } else {
        module_index[m.fqn] = out.modules.size();
        out.modules.push_back(std::move(m));
      }
    } else if (f[0] == "range") {
      if (f.size() != 5)
        throw ProfileError(ProfileErrorKind::MalformedTable, where + ": expected 5 fields 'range tid start_ns end_ns message'");
      SidecarRange r;
      r.tid = static_cast<std::uint32_t>(to_int(f[1], where, "thread id"));
      r.start = to_int(f[2], where, "start time");
      r.end = to_int(f[3], where, "end time");
      if (r.end < r.start) throw ProfileError(ProfileErrorKind::MalformedTable, where + ": range ends before it starts");
      r.message = f[4];
      out.ranges.push_back(std::move(r));
    } else if (f[0] == "step") {
      if (f.size() != 4 && f.size() != 5)
        throw ProfileError(ProfileErrorKind::MalformedTable,
                           where + ": expected 4 or 5 fields 'step number start_ns end_ns [model_calls]'");
      SidecarStep st;
      st.number = to_int(f[1], where, "step number");
      st.start = to_int(f[2], where, "start time");
      st.end = to_int(f[3], where, "end time");
      if (st.number < 0) throw ProfileError(ProfileErrorKind::MalformedTable, where + ": negative step number");
      if (st.end < st.start) throw ProfileError(ProfileErrorKind::MalformedTable, where + ": step ends before it starts");
      if (f.size() == 5) {
        st.model_calls = to_int(f[4], where, "model call count");
        if (st.model_calls < 0) throw ProfileError(ProfileErrorKind::MalformedTable, where + ": negative model call count");
      }
      out.steps.push_back(st);
    } else {
      throw ProfileError(ProfileErrorKind::MalformedTable,
                         where + ": unknown record type '" + std::string(f[0]) + "' (expected meta, module, range or step)");
    }
  }
  return out;
}

Sidecar read_sidecar(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ProfileError(ProfileErrorKind::Io, path + ": cannot open the Python sidecar file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_sidecar(ss.str(), path);
}

}  // namespace ss::collector
