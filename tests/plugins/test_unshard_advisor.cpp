// The unshard advisor plugin is the planner's answer: on a synthetic profile its summary and
// chosen units equal a direct call of ss::sim::plan_unshard with the same inputs and budget.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "plugins/host/plugin_host.h"
#include "profiler/sim/planner.h"
#include "profiler/sim/sim_inputs.h"
#include "profiler/synthetic/synthetic_profile.h"
#include "storage/profile_reader.h"
#include "tests/plugins/result_access.h"
#include "tests/support/test_paths.h"

using namespace ss;
using namespace ss::test;

TEST_CASE("unshard advisor wires the planner", "[plugins][advisor]") {
  TempDir dir;
  SyntheticSpec spec;
  spec.ranks = 2;
  spec.layers = 6;
  spec.steps = 2;
  write_synthetic_profile(dir.file("s.ssdb"), spec);
  const Profile p = load_profile(dir.file("s.ssdb"));
  plugins::PluginHost host;
  host.discover({SS_BUILTIN_PLUGIN_DIR});
  plugins::AnalysisResult r = host.run("unshard-advisor", p);
  INFO(r.error);
  REQUIRE(r.ok);
  const auto& s = table_of(r, "summary");
  REQUIRE(s.rows.size() == 1);

  // The same question asked directly, as `plan --strategy cost` asks it (the cluster fitted to the
  // profile's collectives when it has them): budget = 90% of the synthetic GPU's memory.
  sim::SimInputRequest req;
  req.profile_path = dir.file("s.ssdb");
  req.fit_if_available = true;
  sim::SimInputs in = sim::load_sim_inputs(req);
  REQUIRE(in.fitted);
  CHECK(text_at(s, s.rows[0], "cluster").find("fitted to the profile's collectives") != std::string::npos);
  sim::CompiledStep base = sim::compile_step(in.model, in.plan, in.cluster);
  sim::PlanRequest pr;
  pr.strategy = sim::Strategy::Cost;
  pr.budget_bytes = static_cast<std::int64_t>(0.9 * double(p.ranks[0].info.gpu_memory_bytes));
  sim::PlanOutcome o = sim::plan_unshard(in.model, base, in.cluster, pr);

  CHECK(int_at(s, s.rows[0], "budget_bytes") == pr.budget_bytes);
  CHECK(int_at(s, s.rows[0], "baseline_step_ns") == o.baseline.step_ns);
  CHECK(int_at(s, s.rows[0], "predicted_step_ns") == o.result.step_ns);
  CHECK(int_at(s, s.rows[0], "predicted_peak_bytes") == o.result.peak_bytes);
  CHECK(int_at(s, s.rows[0], "predicted_step_ns") <= int_at(s, s.rows[0], "baseline_step_ns"));
  CHECK(int_at(s, s.rows[0], "fits_budget") == 1);
  const auto& k = table_of(r, "keep_unsharded");
  REQUIRE(k.rows.size() == o.unsharded.size());
  for (std::size_t i = 0; i < k.rows.size(); ++i) CHECK(std::get<std::string>(k.rows[i][0]) == o.unsharded[i]);
  REQUIRE(!r.findings.empty());
  CHECK(table_of(r, "apply").rows.size() == 1);

  // The measured evidence is the critical-path analysis's all-gather ranking, unit by unit, with
  // the planner's choice beside it.
  plugins::AnalysisResult cp = host.run("critical-path", p);
  REQUIRE(cp.ok);
  const auto& ranking = table_of(cp, "all_gathers_on_path");
  const auto& ev = table_of(r, "measured_evidence");
  REQUIRE(ev.rows.size() == ranking.rows.size());
  REQUIRE(!ev.rows.empty());  // the synthetic step has exposed all-gathers
  for (std::size_t i = 0; i < ev.rows.size(); ++i) {
    CHECK(text_at(ev, ev.rows[i], "unit") == text_at(ranking, ranking.rows[i], "unit"));
    CHECK(int_at(ev, ev.rows[i], "all_gather_on_critical_path_ns") == int_at(ranking, ranking.rows[i], "on_path_ns"));
    const bool kept = std::find(o.unsharded.begin(), o.unsharded.end(), text_at(ev, ev.rows[i], "unit")) != o.unsharded.end();
    CHECK(text_at(ev, ev.rows[i], "kept_unsharded") == (kept ? "yes" : "no"));
  }
}

TEST_CASE("unshard advisor on a profile it cannot simulate says why in a finding", "[plugins][advisor]") {
  TempDir dir;
  SyntheticSpec spec;
  spec.ranks = 1;
  spec.layers = 2;
  spec.steps = 1;
  write_synthetic_profile(dir.file("s.ssdb"), spec);
  plugins::PluginHost host;
  host.discover({SS_BUILTIN_PLUGIN_DIR});
  // The reason is the simulator's, which reads the file: one copy without module ranges (no
  // per-unit compute), one without FSDP units (a DDP trace).
  const std::pair<const char*, const char*> cases[] = {
      {"DELETE FROM ranges", "no forward/backward module ranges"},
      {"UPDATE modules SET is_fsdp_unit = 0", "no module is marked as an FSDP unit"}};
  int n = 0;
  for (const auto& [edit, reason] : cases) {
    INFO(edit);
    const std::string path = dir.file("edited" + std::to_string(++n) + ".ssdb");
    std::filesystem::copy_file(dir.file("s.ssdb"), path);
    {
      sql::Db db(path, SQLITE_OPEN_READWRITE);
      db.exec(edit);
    }
    const Profile p = load_profile(path);
    plugins::AnalysisResult r = host.run("unshard-advisor", p);
    REQUIRE(r.ok);  // an answer about the profile, not a failed analysis (`analyze` exits 0)
    CHECK(r.tables.empty());
    REQUIRE(r.findings.size() == 1);
    CHECK(r.findings[0].severity == plugins::Severity::Info);
    CHECK(r.findings[0].message.find("no unshard advice for this profile") != std::string::npos);
    CHECK(r.findings[0].message.find(reason) != std::string::npos);
  }
}
