// The host side of one plugin run: the ss_host_api function table over a loaded Profile, and
// the result sink the plugin fills. Every callback catches its own exceptions, so nothing
// thrown by the host unwinds through plugin code.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>

#include "plugins/api/shardscope_plugin.h"
#include "plugins/host/analysis_result.h"
#include "storage/profile_model.h"
#include "storage/sqlite_handle.h"

namespace ss::plugins {

class HostContext {
 public:
  explicit HostContext(const Profile& profile);
  const ss_host_api* api() const { return &api_; }
  AnalysisResult& result() { return result_; }

 private:
  static HostContext& self(void* ctx) { return *static_cast<HostContext*>(ctx); }
  static const char* c_string(void* ctx, std::uint32_t id);
  static int c_query(void* ctx, const char* sql, ss_row_fn fn, void* user);
  static int c_rank(void* ctx, std::size_t i, ss_rank_info* out);
  static int c_stream(void* ctx, std::size_t i, ss_stream_info* out);
  static int c_range_lane(void* ctx, std::size_t i, ss_range_lane* out);
  static int c_module(void* ctx, std::size_t i, ss_module_info* out);
  static int c_begin_table(void* ctx, const char* name, std::size_t n, const char* const* columns);
  static int c_table_row(void* ctx, const ss_value* values, std::size_t n);
  static void c_add_finding(void* ctx, const ss_finding* f);
  static void c_add_marker(void* ctx, const ss_marker* m);
  static int c_begin_counter_track(void* ctx, const char* name, std::int32_t rank, const char* unit);
  static int c_counter_point(void* ctx, std::int64_t t, double v);

  const Profile& profile_;
  ss_host_api api_{};
  AnalysisResult result_;
  std::unique_ptr<sql::Db> db_;  // opened on the first query
  std::string last_error_;
  std::unordered_map<std::uint32_t, std::string> strings_;  // NUL-terminated copies handed out
};

}  // namespace ss::plugins
