// C++ convenience layer over the C plugin ABI, compiled into each plugin (header only, so the
// ABI between host and plugin stays the C one). It offers spans over the host's arrays, a
// selection helper, result builders, and SS_DEFINE_PLUGIN, which exports the two entry points
// and turns an exception escaping the analysis into an error message for the host.
#pragma once

#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "plugins/api/shardscope_plugin.h"

namespace ss::plugin {

// One cell of a result table.
struct Cell {
  ss_value v{SS_VALUE_NULL, 0, 0.0, nullptr};
  std::string text;  // owns the string of a text cell
  Cell() = default;
  Cell(std::int64_t i) { v.type = SS_VALUE_INT; v.i = i; }           // NOLINT: implicit on purpose
  Cell(int i) { v.type = SS_VALUE_INT; v.i = i; }                    // NOLINT
  Cell(double d) { v.type = SS_VALUE_REAL; v.d = d; }                // NOLINT
  Cell(std::string s) : text(std::move(s)) { v.type = SS_VALUE_TEXT; }  // NOLINT
  Cell(const char* s) : text(s) { v.type = SS_VALUE_TEXT; }          // NOLINT
};

class Host {
 public:
  Host(const ss_host_api* api, const ss_selection* sel) : api_(api), sel_(sel) {}

  const ss_host_api* api() const { return api_; }
  void* ctx() const { return api_->ctx; }

  // Selection.
  bool has_time() const { return sel_ && sel_->has_time; }
  std::int64_t from() const { return has_time() ? sel_->from : api_->time_begin(ctx()); }
  std::int64_t to() const { return has_time() ? sel_->to : api_->time_end(ctx()); }
  bool rank_selected(int r) const {
    if (!sel_ || sel_->rank_count == 0) return true;
    for (std::size_t i = 0; i < sel_->rank_count; ++i)
      if (sel_->ranks[i] == r) return true;
    return false;
  }

  // Model.
  std::string_view str(std::uint32_t id) const {
    const char* s = api_->string(ctx(), id);
    return s ? std::string_view(s) : std::string_view();
  }
  std::vector<ss_rank_info> ranks() const {
    std::vector<ss_rank_info> out;
    for (std::size_t i = 0, n = api_->rank_count(ctx()); i < n; ++i) {
      ss_rank_info r{};
      if (api_->rank(ctx(), i, &r) == 0 && rank_selected(r.rank)) out.push_back(r);
    }
    return out;
  }
  std::vector<ss_stream_info> streams() const {
    std::vector<ss_stream_info> out;
    for (std::size_t i = 0, n = api_->stream_count(ctx()); i < n; ++i) {
      ss_stream_info s{};
      if (api_->stream(ctx(), i, &s) == 0 && rank_selected(s.rank)) out.push_back(s);
    }
    return out;
  }
  std::vector<ss_range_lane> range_lanes() const {
    std::vector<ss_range_lane> out;
    for (std::size_t i = 0, n = api_->range_lane_count(ctx()); i < n; ++i) {
      ss_range_lane l{};
      if (api_->range_lane(ctx(), i, &l) == 0 && rank_selected(l.rank)) out.push_back(l);
    }
    return out;
  }
  std::vector<ss_module_info> modules() const {
    std::vector<ss_module_info> out(api_->module_count(ctx()));
    for (std::size_t i = 0; i < out.size(); ++i) api_->module(ctx(), i, &out[i]);
    return out;
  }
  std::span<const ss_collective_event> collectives() const {
    std::size_t n = 0;
    const ss_collective_event* c = api_->collectives(ctx(), &n);
    return {c, n};
  }

  // Read-only SQL; throws std::runtime_error with SQLite's message.
  using RowFn = std::function<void(std::span<const ss_value>)>;
  void query(const std::string& sql, const RowFn& fn) const {
    struct Thunk {
      static int call(void* user, std::size_t n, const char* const*, const ss_value* values) {
        (*static_cast<const RowFn*>(user))(std::span<const ss_value>(values, n));
        return 0;
      }
    };
    if (api_->query(ctx(), sql.c_str(), &Thunk::call, const_cast<RowFn*>(&fn)) != 0)
      throw std::runtime_error(std::string("SQL failed: ") + api_->last_error(ctx()));
  }

  // Results.
  void table(const std::string& name, const std::vector<std::string>& columns) const {
    std::vector<const char*> c;
    for (const auto& s : columns) c.push_back(s.c_str());
    if (api_->begin_table(ctx(), name.c_str(), c.size(), c.data()) != 0) throw std::runtime_error("begin_table refused");
  }
  void row(const std::vector<Cell>& cells) const {
    std::vector<ss_value> v;
    v.reserve(cells.size());
    for (const auto& c : cells) {
      ss_value x = c.v;
      if (x.type == SS_VALUE_TEXT) x.s = c.text.c_str();
      v.push_back(x);
    }
    if (api_->table_row(ctx(), v.data(), v.size()) != 0) throw std::runtime_error("table_row refused (column count)");
  }
  void finding(int severity, const std::string& message, std::int64_t start = 1, std::int64_t end = 0,
               int rank = -1) const {
    ss_finding f{severity, message.c_str(), start, end, rank};
    api_->add_finding(ctx(), &f);
  }
  void marker(std::int64_t start, std::int64_t end, int rank, const std::string& label) const {
    ss_marker m{start, end, rank, label.c_str()};
    api_->add_marker(ctx(), &m);
  }
  void counter_track(const std::string& name, int rank, const std::string& unit) const {
    if (api_->begin_counter_track(ctx(), name.c_str(), rank, unit.c_str()) != 0)
      throw std::runtime_error("begin_counter_track refused");
  }
  void counter_point(std::int64_t t, double v) const {
    if (api_->counter_point(ctx(), t, v) != 0) throw std::runtime_error("counter_point refused");
  }
  void log(const std::string& s) const { api_->log(ctx(), s.c_str()); }

 private:
  const ss_host_api* api_;
  const ss_selection* sel_;
};

// Runs an analysis body, converting any exception into an error message (return 1).
inline int guarded_run(void (*body)(const Host&), const ss_host_api* api, const ss_selection* sel, char* error,
                       std::size_t error_size) {
  auto fail = [&](const char* what) {
    if (error && error_size) std::snprintf(error, error_size, "%s", what);
    return 1;
  };
  try {
    body(Host(api, sel));
    return 0;
  } catch (const std::exception& e) {
    return fail(e.what());
  } catch (...) {
    return fail("unknown exception");
  }
}

}  // namespace ss::plugin

// Defines a plugin: NAME (a string literal), TITLE, DESCRIPTION and BODY, a function
// `void body(const ss::plugin::Host&)`. Use once per shared library.
#define SS_DEFINE_PLUGIN(NAME, TITLE, DESCRIPTION, BODY)                                                   \
  static int ss_plugin_run_(const ss_host_api* api, const ss_selection* sel, char* err, size_t n) {        \
    return ss::plugin::guarded_run(BODY, api, sel, err, n);                                                \
  }                                                                                                        \
  extern "C" SS_PLUGIN_EXPORT uint32_t shardscope_plugin_api_version(void) { return SS_PLUGIN_API_VERSION; } \
  extern "C" SS_PLUGIN_EXPORT const ss_plugin_info* shardscope_plugin_info(void) {                         \
    static const ss_plugin_info info = {SS_PLUGIN_API_VERSION, NAME, TITLE, DESCRIPTION, &ss_plugin_run_};  \
    return &info;                                                                                          \
  }
