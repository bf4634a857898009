// The Unshard panel's Qt-free layer: toggles, undo/redo, the cost planner and the exported plan,
// checked against the simulator run the way `shardscope simulate IN --plan P.json` runs it.
#include <catch2/catch.hpp>

#include <algorithm>

#include "profiler/sim/fsdp_plan.h"
#include "profiler/sim/sim_inputs.h"
#include "profiler/sim/step_simulator.h"
#include "tests/support/test_paths.h"
#include "views/unshard/unshard_session.h"

using namespace ss;
using namespace ss::unshard;

namespace {
std::string sample() { return test::source_dir() + "/resources/samples/synthetic-fsdp-4rank.ssdb"; }

// What `shardscope simulate IN --plan P.json` computes (app/cli/cmd_simulate.cpp, same calls).
sim::SimResult simulate_cli_way(const std::string& profile, const std::string& plan_path) {
  sim::SimInputRequest req;
  req.profile_path = profile;
  req.plan_path = plan_path;
  sim::SimInputs in = sim::load_sim_inputs(req);
  return sim::simulate(sim::compile_step(in.model, in.plan, in.cluster), true);
}
}  // namespace

TEST_CASE("exposed all-gather per unit on a hand-made timeline", "[unshard]") {
  sim::SimResult r;
  // unit 0 computes 0..10; unit 1's gather runs 5..20, so unit 1's compute waits 10..20.
  r.ops.push_back({0, 10, 0, 0, 0, sim::Lane::Compute, sim::OpKind::Compute, sim::Phase::Forward});
  r.ops.push_back({5, 20, 100, 1, 0, sim::Lane::Nccl, sim::OpKind::AllGather, sim::Phase::Forward});
  r.ops.push_back({20, 30, 0, 1, 0, sim::Lane::Compute, sim::OpKind::Compute, sim::Phase::Forward});
  // unit 0 again at 30 without a wait, then at 40 after a gap that no all-gather explains.
  r.ops.push_back({30, 35, 0, 0, 0, sim::Lane::Compute, sim::OpKind::Compute, sim::Phase::Backward});
  r.ops.push_back({40, 45, 0, 0, 0, sim::Lane::Compute, sim::OpKind::Compute, sim::Phase::Backward});
  const auto e = exposed_all_gather_per_exec(r, 2);
  CHECK(e[0] == 0);
  CHECK(e[1] == 10);
}

TEST_CASE("toggling a unit predicts what simulate computes for the exported plan; undo/redo are exact", "[unshard]") {
  UnshardSession s = UnshardSession::from_profile(sample());
  const int layer = s.inputs().model.find_unit("layers.7");
  REQUIRE(layer >= 0);
  REQUIRE(s.state().keep[static_cast<std::size_t>(layer)] == 0);
  const Prediction before = s.prediction();
  // The untouched state is the profile's own plan: the baseline.
  CHECK(before.step_ns == before.baseline_step_ns);
  CHECK(before.peak_bytes == before.baseline_peak_bytes);

  s.set_keep(layer, true);
  const Prediction after = s.prediction();
  // Keeping a layer unsharded skips its backward all-gather (one fewer) and never lowers the peak
  // (here the peak is in layers.0's backward, after layers.7 has let go of its parameters).
  CHECK(after.result.all_gathers == before.result.all_gathers - 1);
  CHECK(after.peak_bytes >= before.peak_bytes);
  CHECK(after.step_ns < before.step_ns);

  test::TempDir dir;
  s.export_plan(dir.file("plan.json"));
  const sim::FsdpPlan written = sim::load_plan_file(dir.file("plan.json"));
  CHECK(std::find(written.unsharded.begin(), written.unsharded.end(), "layers.7") != written.unsharded.end());
  const sim::SimResult cli = simulate_cli_way(sample(), dir.file("plan.json"));
  CHECK(cli.step_ns == after.step_ns);
  CHECK(cli.peak_bytes == after.peak_bytes);
  CHECK(cli.exposed_comm_ns == after.exposed_comm_ns);

  REQUIRE(s.can_undo());
  CHECK(s.undo_label() == "keep layers.7");
  s.undo();
  CHECK(s.state().keep[static_cast<std::size_t>(layer)] == 0);
  CHECK(s.prediction().step_ns == before.step_ns);
  CHECK(s.prediction().peak_bytes == before.peak_bytes);
  CHECK(s.prediction().exposed_ag_ns == before.exposed_ag_ns);
  s.redo();
  CHECK(s.prediction().step_ns == after.step_ns);
  CHECK(s.prediction().peak_bytes == after.peak_bytes);
  CHECK_FALSE(s.can_redo());

  // A new change after an undo drops the redo branch.
  s.undo();
  s.set_world_size(8);
  CHECK_FALSE(s.can_redo());
  CHECK(s.prediction().step_ns != before.step_ns);
  s.undo();
  CHECK(s.prediction().step_ns == before.step_ns);
}

TEST_CASE("the root's box is fixed and no-op changes make no undo entries", "[unshard]") {
  UnshardSession s = UnshardSession::from_profile(sample());
  const int root = s.inputs().model.find_unit("");
  REQUIRE(root >= 0);
  CHECK(s.unit_fixed(root));
  s.set_keep(root, false);
  CHECK(s.state().keep[static_cast<std::size_t>(root)] == 1);
  s.set_world_size(s.state().world_size);
  CHECK_FALSE(s.can_undo());
}

TEST_CASE("plan automatically fits the budget, is one undoable change and exports its strategy", "[unshard]") {
  UnshardSession s = UnshardSession::from_profile(sample());
  const Prediction base = s.prediction();
  // Room for a few layers' parameters beyond the baseline peak.
  s.set_budget_bytes(base.peak_bytes + 3LL * 1024 * 1024 * 1024);
  const auto o = s.plan_automatically();
  CHECK(o.fits);
  CHECK(s.prediction().fits_budget);
  CHECK(s.prediction().peak_bytes <= s.state().budget_bytes);
  int kept = 0;
  for (int u = 0; u < s.unit_count(); ++u) kept += s.state().keep[static_cast<std::size_t>(u)] && !s.unit_fixed(u);
  CHECK(kept == static_cast<int>(o.unsharded.size()));
  CHECK(s.prediction().step_ns == o.result.step_ns);
  CHECK(s.plan_file_json().find("\"strategy\":\"cost\"") != std::string::npos);
  s.undo();
  CHECK(s.prediction().step_ns == base.step_ns);
}
