// A well-behaved test plugin: it reports what it sees through every part of the host API (SQL,
// model accessors, selection) and emits one of each result kind, so the host test can compare
// them with what it computes itself.
#include "plugins/api/plugin_sdk.h"

namespace {

void run(const ss::plugin::Host& host) {
  std::int64_t kernels_sql = -1;
  host.query("SELECT COUNT(*) FROM kernels", [&](std::span<const ss_value> row) { kernels_sql = row[0].i; });
  std::int64_t kernels_model = 0;
  for (const auto& s : host.streams()) kernels_model += static_cast<std::int64_t>(s.count);
  // The SQL API must refuse writes; report whether it did and what it said.
  std::int64_t write_refused = 0;
  std::string refusal;
  try {
    host.query("DELETE FROM kernels", [](std::span<const ss_value>) {});
  } catch (const std::exception& e) {
    write_refused = 1;
    refusal = e.what();
  }
  std::int64_t selected = 0;
  for (const auto& r : host.ranks()) selected += 1 + 0 * r.rank;
  host.table("echo", {"kernels_sql", "kernels_model", "modules", "collectives", "selected_ranks", "has_time",
                      "from", "to", "write_refused", "refusal", "first_kernel_name"});
  std::string first_name;
  for (const auto& s : host.streams())
    if (s.count && first_name.empty()) first_name = std::string(host.str(s.events[0].name));
  host.row({kernels_sql, kernels_model, static_cast<std::int64_t>(host.modules().size()),
            static_cast<std::int64_t>(host.collectives().size()), selected, host.has_time() ? 1 : 0, host.from(),
            host.to(), write_refused, refusal, first_name});
  host.finding(SS_SEVERITY_PROBLEM, "echo finding", 10, 20, 1);
  host.marker(5, 6, 0, "echo marker");
  host.counter_track("echo counter", 0, "things");
  host.counter_point(1, 2.5);
  host.counter_point(3, 4.5);
  host.log("echo ran");
}

}  // namespace

SS_DEFINE_PLUGIN("test-echo", "Test: echo the host API", "Reports what the host API shows it.", &run)
