// The Unshard panel's Qt-free layer: toggles, bucket caps (default and per-bucket overrides),
// undo/redo, the cost planner, the exported plan and the timeline's simulated profile, checked
// against the simulator run directly and the way `shardscope simulate IN --plan P.json` runs it;
// the default (fitted) preset, the baseline under a changed preset / world size / GPUs per node,
// the replay warning and its reasons, and a profile without FSDP units refused with its own error.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "profiler/sim/fsdp_plan.h"
#include "tests/views/unshard_test_inputs.h"
#include "profiler/sim/profile_extract.h"
#include "profiler/sim/sim_inputs.h"
#include "profiler/sim/step_simulator.h"
#include "profiler/synthetic/synthetic_profile.h"
#include "storage/errors.h"
#include "storage/profile_reader.h"
#include "storage/sqlite_handle.h"
#include "tests/support/test_paths.h"
#include "views/unshard/simulated_timeline.h"
#include "views/unshard/unshard_session.h"

using namespace ss;
using namespace ss::unshard;
using ss::test::simulate_cli_way;

namespace {
std::string sample() { return test::source_dir() + "/resources/samples/synthetic-fsdp-4rank.ssdb"; }
std::string clusters() { return test::source_dir() + "/resources/clusters"; }

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
  // On the profile's preset as is (`simulate --no-fit`): on the fitted one the sample's all-gathers
  // are short enough to hide behind compute, and a kept layer saves no time.
  s.set_preset(0);
  REQUIRE_FALSE(s.prediction().preset_fitted);
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
  const sim::SimResult cli = simulate_cli_way(sample(), dir.file("plan.json"), /*no_fit=*/true);
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

namespace {
// The simulator run directly on the session's model and cluster with a plan whose bucket caps are
// `caps` (what FsdpPlan::bucket_cap_mb means to compile_step), everything else the session's.
sim::SimResult simulate_with_caps(const UnshardSession& s, const std::map<std::string, double>& caps, sim::CompiledStep* step_out) {
  sim::FsdpPlan plan = s.inputs().plan;
  plan.bucket_cap_mb = caps;
  plan.world_size = 0;
  sim::CompiledStep step = sim::compile_step(s.inputs().model, plan, s.cluster());
  if (step_out) *step_out = step;
  return sim::simulate(step);
}

double layer_mb(const UnshardSession& s) {
  const auto& m = s.inputs().model;
  return static_cast<double>(m.param_bytes(m.find_unit("layers.0"))) / (1024.0 * 1024.0);
}
}  // namespace

TEST_CASE("a per-bucket cap override simulates what FsdpPlan's bucket_cap_mb map does; undo/redo restore it", "[unshard]") {
  UnshardSession s = UnshardSession::from_profile(sample());
  REQUIRE_FALSE(s.bucketing_on());
  const double layer = layer_mb(s);
  REQUIRE(layer > 0);
  // Default: two layers per bucket. Bucket #1 alone gets a cap that holds one layer.
  const double two = 2.5 * layer, one = 1.2 * layer;
  s.set_bucket_cap_mb(two);
  REQUIRE(s.bucketing_on());
  const Prediction by_default = s.prediction();
  sim::CompiledStep expect_default;
  const sim::SimResult d = simulate_with_caps(s, {{"default", two}}, &expect_default);
  CHECK(by_default.step_ns == d.step_ns);
  CHECK(by_default.peak_bytes == d.peak_bytes);
  CHECK(by_default.step.units.size() == expect_default.units.size());

  s.set_bucket_cap_override(1, one);
  CHECK(s.undo_label() == "bucket #1 cap");
  CHECK(s.bucket_cap_of(1) == one);
  CHECK(s.bucket_cap_of(0) == two);
  const Prediction overridden = s.prediction();
  sim::CompiledStep expect;
  const sim::SimResult r = simulate_with_caps(s, {{"default", two}, {"1", one}}, &expect);
  CHECK(overridden.step_ns == r.step_ns);
  CHECK(overridden.peak_bytes == r.peak_bytes);
  CHECK(overridden.exposed_comm_ns == r.exposed_comm_ns);
  CHECK(overridden.result.all_gathers == r.all_gathers);
  REQUIRE(overridden.step.units.size() == expect.units.size());
  // The override made a difference: bucket #1 now holds one layer, so there is one bucket more.
  CHECK(overridden.bucket_count == by_default.bucket_count + 1);
  CHECK(overridden.result.all_gathers > by_default.result.all_gathers);
  // The panel's bucket index of a unit is the simulator's auto-bucket (exec unit) holding it.
  for (int u = 0; u < s.unit_count(); ++u) {
    const int b = overridden.bucket_of_unit[static_cast<std::size_t>(u)];
    if (s.unit(u).is_root) CHECK(b == -1);
    else if (b >= 0) CHECK(expect.exec_of_unit[static_cast<std::size_t>(u)] == b);  // no explicit buckets in this plan
  }
  int in_bucket1 = 0;
  for (int b : overridden.bucket_of_unit) in_bucket1 += b == 1;
  CHECK(in_bucket1 == 1);

  // The exported plan carries the map, and simulate --plan gives the same step.
  test::TempDir dir;
  s.export_plan(dir.file("plan.json"));
  const sim::FsdpPlan written = sim::load_plan_file(dir.file("plan.json"));
  CHECK(written.bucket_cap_mb == std::map<std::string, double>{{"default", two}, {"1", one}});
  // ... and the buckets the caps formed, as modules, for apply_plan (FSDP2 has no caps).
  std::size_t pairs = 0;
  for (const auto& e : expect.units) pairs += e.members.size() == 2;
  CHECK(pairs > 0);
  CHECK(written.fsdp2_buckets.size() == pairs);  // bucket #1 holds one layer: not a list
  for (const auto& b : written.fsdp2_buckets) CHECK(b.size() == 2);
  const sim::SimResult cli = simulate_cli_way(sample(), dir.file("plan.json"));
  CHECK(cli.step_ns == overridden.step_ns);
  CHECK(cli.peak_bytes == overridden.peak_bytes);

  s.undo();
  CHECK(s.state().bucket_cap_overrides_mb.empty());
  CHECK(s.prediction().step_ns == by_default.step_ns);
  CHECK(s.prediction().bucket_of_unit == by_default.bucket_of_unit);
  s.redo();
  CHECK(s.state().bucket_cap_overrides_mb.at(1) == one);
  CHECK(s.prediction().step_ns == overridden.step_ns);
  CHECK(s.prediction().bucket_of_unit == overridden.bucket_of_unit);

  // Removing the override (cap 0) is its own undoable change back to the default's buckets.
  s.set_bucket_cap_override(1, 0);
  CHECK(s.state().bucket_cap_overrides_mb.empty());
  CHECK(s.prediction().step_ns == by_default.step_ns);
  s.undo();
  CHECK(s.prediction().step_ns == overridden.step_ns);
}

TEST_CASE("overrides without a default cap use the simulator's default for the other buckets", "[unshard]") {
  UnshardSession s = UnshardSession::from_profile(sample());
  const double one = 1.2 * layer_mb(s);
  s.set_bucket_cap_override(0, one);
  CHECK(s.bucketing_on());
  CHECK(s.bucket_cap_of(0) == one);
  CHECK(s.bucket_cap_of(3) == kInductorBucketCapMb);
  const sim::SimResult r = simulate_with_caps(s, {{"0", one}}, nullptr);
  CHECK(s.prediction().step_ns == r.step_ns);
  CHECK(s.prediction().result.all_gathers == r.all_gathers);
  CHECK(s.plan().bucket_cap_mb == std::map<std::string, double>{{"0", one}});
}

TEST_CASE("the timeline profile of a prediction holds the simulated step's events", "[unshard]") {
  UnshardSession s = UnshardSession::from_profile(sample());
  test::TempDir dir;
  auto count_all_gathers = [](const Profile& p) {
    int n = 0;
    for (const auto& c : p.collectives) n += c.type == CollectiveType::AllGather;
    return n;
  };
  const auto before = simulated_timeline_profile(s.inputs(), s.prediction().step, s.prediction().result, dir.file("t.ssdb"));
  CHECK_FALSE(std::filesystem::exists(dir.file("t.ssdb")));  // the scratch file is gone again
  CHECK(before->time_end - before->time_begin == s.prediction().step_ns);
  CHECK(count_all_gathers(*before) == s.prediction().result.all_gathers);
  s.set_keep(s.inputs().model.find_unit("layers.7"), true);
  const auto after = simulated_timeline_profile(s.inputs(), s.prediction().step, s.prediction().result, dir.file("t.ssdb"));
  CHECK(count_all_gathers(*after) == count_all_gathers(*before) - 1);
  CHECK(after->time_end - after->time_begin == s.prediction().step_ns);
  // An unwritable scratch path is an error, not a crash.
  CHECK_THROWS_AS(simulated_timeline_profile(s.inputs(), s.prediction().step, s.prediction().result, "/nonexistent/dir/t.ssdb"),
                  ProfileError);
}

TEST_CASE("a plan file written by the session restores the same state in a fresh session", "[unshard]") {
  UnshardSession a = UnshardSession::from_profile(sample());
  a.set_keep(a.inputs().model.find_unit("layers.3"), true);
  a.set_bucket_cap_mb(3 * layer_mb(a));
  a.set_bucket_cap_override(2, 1.5 * layer_mb(a));
  a.set_budget_bytes(a.prediction().peak_bytes + 123456789);
  UnshardSession b = UnshardSession::from_profile(sample());
  b.apply_plan_file_json(a.plan_file_json(), "saved plan");
  CHECK(b.state() == a.state());
  CHECK(b.prediction().step_ns == a.prediction().step_ns);
  CHECK(b.prediction().peak_bytes == a.prediction().peak_bytes);
  CHECK(b.can_undo());
  b.undo();
  CHECK(b.state().bucket_cap_overrides_mb.empty());
  // A plan for another model is refused and changes nothing.
  const UnshardState before = b.state();
  CHECK_THROWS_AS(b.apply_plan_file_json(R"({"unsharded": ["no.such.module"]})", "saved plan"), ProfileError);
  CHECK_THROWS_AS(b.apply_plan_file_json(R"({"bucket_cap_mb": {"first": 10}})", "saved plan"), ProfileError);
  CHECK_THROWS_AS(b.apply_plan_file_json("{not json", "saved plan"), ProfileError);
  CHECK(b.state() == before);
}

TEST_CASE("a plan file's explicit buckets (plan --buckets) are applied, exported and undone", "[unshard]") {
  UnshardSession s = UnshardSession::from_profile(sample());
  const Prediction before = s.prediction();
  test::TempDir dir;
  {
    std::ofstream f(dir.file("buckets.json"));
    f << R"({"buckets": [["layers.0", "layers.1"], ["layers.6", "layers.7"]], "unsharded": ["layers.7"]})";
  }
  std::ifstream in(dir.file("buckets.json"));
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  s.apply_plan_file_json(json, "buckets.json");
  const sim::SimResult cli = simulate_cli_way(sample(), dir.file("buckets.json"));
  CHECK(s.prediction().step_ns == cli.step_ns);
  CHECK(s.prediction().peak_bytes == cli.peak_bytes);
  CHECK(s.prediction().result.all_gathers == cli.all_gathers);
  CHECK(s.prediction().result.all_gathers < before.result.all_gathers);
  s.export_plan(dir.file("out.json"));
  const sim::FsdpPlan written = sim::load_plan_file(dir.file("out.json"));
  CHECK(written.buckets == std::vector<std::vector<std::string>>{{"layers.0", "layers.1"}, {"layers.6", "layers.7"}});
  CHECK(written.fsdp2_buckets == written.buckets);
  CHECK(simulate_cli_way(sample(), dir.file("out.json")).step_ns == cli.step_ns);
  s.undo();
  CHECK(s.state().buckets.empty());
  CHECK(s.prediction().step_ns == before.step_ns);
  const UnshardState state = s.state();
  CHECK_THROWS_AS(s.apply_plan_file_json(R"({"buckets": [["layers.0", "no.such.module"]]})", "saved plan"), ProfileError);
  CHECK(s.state() == state);
}

TEST_CASE("plan buckets: the planner's lists are one undoable change, shown per unit and exported", "[unshard]") {
  // The tiny description at 64 GPUs: its two layers' all-gathers are latency-bound, so one bucket
  // for both shortens the step (plan --model ... --buckets says the same).
  UnshardSession s = UnshardSession::from_model(test::source_dir() + "/resources/models/fsdp-sample-tiny.json", 64, clusters());
  const Prediction before = s.prediction();
  const sim::BucketOutcome o = s.plan_buckets_automatically();
  REQUIRE(o.buckets == std::vector<std::vector<std::string>>{{"layers.0", "layers.1"}});
  CHECK(s.undo_label().find("plan buckets") == 0);
  CHECK(s.state().buckets == o.buckets);
  CHECK(s.prediction().step_ns == o.after.step_ns);
  CHECK(s.prediction().step_ns < before.step_ns);
  const int l0 = s.inputs().model.find_unit("layers.0"), l1 = s.inputs().model.find_unit("layers.1");
  CHECK(s.prediction().listed_bucket_of_unit[static_cast<std::size_t>(l0)] == 0);
  CHECK(s.prediction().listed_bucket_of_unit[static_cast<std::size_t>(l1)] == 0);
  test::TempDir dir;
  s.export_plan(dir.file("plan.json"));
  CHECK(sim::load_plan_file(dir.file("plan.json")).buckets == o.buckets);
  s.undo();
  CHECK(s.state().buckets.empty());
  CHECK(s.prediction().step_ns == before.step_ns);
  CHECK(s.prediction().listed_bucket_of_unit[static_cast<std::size_t>(l0)] == -1);
}

TEST_CASE("the profile's cluster fitted to its collectives is the default preset, as in simulate", "[unshard]") {
  UnshardSession s = UnshardSession::from_profile(sample());
  REQUIRE(s.presets().size() >= 2);
  CHECK_FALSE(s.presets()[0].fitted);
  CHECK(s.presets()[1].fitted);
  CHECK(s.presets()[1].name.find("fitted") != std::string::npos);
  CHECK(s.state().preset == 1);  // chosen from the start, not an undoable change
  CHECK_FALSE(s.can_undo());
  CHECK(s.prediction().preset_fitted);
  // The same as `shardscope simulate IN` (which fits by default) and `simulate IN --fit`.
  const TimeNs fitted_step = s.prediction().step_ns;
  CHECK(fitted_step == simulate_cli_way(sample(), "").step_ns);
  sim::SimInputRequest req;
  req.profile_path = sample();
  req.fit = true;
  const sim::SimInputs in = sim::load_sim_inputs(req);
  REQUIRE(in.fit.samples[0] > 0);
  CHECK(in.fit_samples_available == in.fit.samples[0] + in.fit.samples[1] + in.fit.samples[2]);
  CHECK(fitted_step == sim::simulate(sim::compile_step(in.model, in.plan, in.cluster)).step_ns);
  // The profile's preset as is: `simulate IN --no-fit`.
  s.set_preset(0);
  const TimeNs preset_step = s.prediction().step_ns;
  CHECK(preset_step == simulate_cli_way(sample(), "", /*no_fit=*/true).step_ns);
  CHECK(preset_step != fitted_step);
  CHECK_FALSE(s.prediction().preset_fitted);
  s.undo();
  CHECK(s.prediction().step_ns == fitted_step);
  CHECK(s.state().preset == 1);
}

TEST_CASE("a measured cluster file (gui --cluster): its figures on the fitted preset, chosen, as simulate --cluster takes them", "[unshard]") {
  // The CPU sample, and what `torchrun -m shardscope.measure_fsdp_units` writes: per-unit figures only.
  const std::string cpu = test::source_dir() + "/resources/samples/cpu-fsdp2-llama-2rank.ssdb";
  test::TempDir dir;
  const std::string units = dir.file("units.json");
  std::ofstream(units) << R"({"name": "fsdp-units-measured", "fsdp_unit_forward_us": 500, "fsdp_unit_backward_us": 1000})";
  const UnshardSession plain = UnshardSession::from_profile(cpu);
  UnshardSession s = UnshardSession::from_profile(cpu, "", nullptr, units);
  REQUIRE(s.presets().size() == plain.presets().size() + 1);
  REQUIRE(plain.state().preset == 1);  // the fitted one
  CHECK(s.state().preset == 2);        // right after it, chosen from the start
  CHECK_FALSE(s.can_undo());
  const ClusterPreset& chosen = s.presets()[2];
  CHECK(chosen.name == plain.presets()[1].name + " + units.json");
  CHECK(chosen.fitted);
  CHECK(chosen.cluster.fsdp_unit_forward_us == 500);
  CHECK(chosen.cluster.fsdp_unit_backward_us == 1000);
  CHECK(chosen.cluster.coll[0].intra.busbw_GBps == plain.presets()[1].cluster.coll[0].intra.busbw_GBps);
  // No bucket: the replay as it was. A bucket of two layers: one unit's cost less per pass, the
  // step `simulate IN --cluster units.json --plan P` predicts.
  CHECK(s.prediction().step_ns == plain.prediction().step_ns);
  const std::string pair = R"({"buckets": [["layers.0", "layers.1"]]})";
  s.apply_plan_file_json(pair, "pair");
  UnshardSession without = UnshardSession::from_profile(cpu);
  without.apply_plan_file_json(pair, "pair");
  CHECK(without.prediction().step_ns - s.prediction().step_ns == Approx(1'500'000).margin(20'000));
  sim::SimInputRequest req;
  req.profile_path = cpu;
  req.cluster_path = units;
  req.plan_path = dir.file("pair.json");
  std::ofstream(req.plan_path) << pair;
  req.fit_if_available = true;  // the CLI's default: a file without collective costs is fitted
  const sim::SimInputs in = sim::load_sim_inputs(req);
  CHECK(in.fitted);
  CHECK(s.prediction().step_ns == sim::simulate(sim::compile_step(in.model, in.plan, in.cluster)).step_ns);
  // A whole cluster file is one more preset of its own, chosen; a broken one is refused.
  const UnshardSession whole = UnshardSession::from_profile(cpu, "", nullptr, clusters() + "/h100-nvlink-ib.json");
  CHECK(whole.presets().back().name == "h100-nvlink-ib.json");
  CHECK(whole.state().preset == static_cast<int>(whole.presets().size()) - 1);
  std::ofstream(dir.file("bad.json")) << R"({"fsdp_unit_forward_us": -1})";
  CHECK_THROWS_AS(UnshardSession::from_profile(cpu, "", nullptr, dir.file("bad.json")), ProfileError);
}

TEST_CASE("a session offered no fitted preset starts on the profile's own", "[unshard]") {
  // A session built from inputs with no fitted preset offered: index 0, nothing fitted.
  sim::SimInputRequest req;
  req.profile_path = sample();
  sim::SimInputs in = sim::load_sim_inputs(req);
  UnshardSession s(in, load_cluster_presets(in.cluster, clusters()));
  CHECK(s.state().preset == 0);
  CHECK_FALSE(s.prediction().preset_fitted);
  CHECK(s.presets().size() > 1);  // the files in resources/clusters follow
}

TEST_CASE("the baseline is re-simulated under the chosen preset, world size and GPUs per node", "[unshard]") {
  UnshardSession s = UnshardSession::from_profile(sample(), clusters());
  const int layer = s.inputs().model.find_unit("layers.7");
  // The profile's own plan on the session's current cluster, run directly.
  auto as_profiled = [&] { return sim::simulate(sim::compile_step(s.inputs().model, s.inputs().plan, s.cluster())); };
  auto check_consistent = [&](const char* what) {
    INFO(what);
    const Prediction& p = s.prediction();
    const sim::SimResult direct = as_profiled();
    CHECK(p.baseline_step_ns == direct.step_ns);
    CHECK(p.baseline_peak_bytes == direct.peak_bytes);
    // Nothing kept beyond the profile's plan: the prediction is the baseline, under any cluster.
    bool kept = false;
    for (int u = 0; u < s.unit_count(); ++u) kept |= s.state().keep[static_cast<std::size_t>(u)] && !s.unit_fixed(u);
    if (!kept) CHECK(p.step_ns == p.baseline_step_ns);
  };
  check_consistent("default (fitted) preset");
  const Prediction fitted = s.prediction();

  int file_preset = -1;
  for (std::size_t i = 0; i < s.presets().size(); ++i)
    if (s.presets()[i].name == "h100-nvlink-ib") file_preset = static_cast<int>(i);
  REQUIRE(file_preset >= 2);
  for (int preset : {0, file_preset}) {
    s.set_preset(preset);
    check_consistent(s.presets()[static_cast<std::size_t>(preset)].name.c_str());
    CHECK(s.prediction().baseline_step_ns != fitted.baseline_step_ns);
    // The replay is judged on the chosen preset too, at the recorded world size.
    CHECK(s.prediction().replay.replay_ns == s.prediction().baseline_step_ns);
  }
  s.set_preset(0);
  const Prediction profile_preset = s.prediction();

  s.set_world_size(16);
  check_consistent("world 16");
  CHECK(s.prediction().baseline_step_ns != profile_preset.baseline_step_ns);
  // The replay stays at the profile's recorded configuration: it does not move with the world size.
  CHECK(s.prediction().replay.replay_ns == profile_preset.replay.replay_ns);
  s.set_gpus_per_node(2);
  check_consistent("2 GPUs per node");

  // A kept unit changes the prediction, never the baseline of the same configuration.
  const TimeNs base = s.prediction().baseline_step_ns;
  s.set_keep(layer, true);
  check_consistent("layers.7 kept");
  CHECK(s.prediction().baseline_step_ns == base);
  CHECK(s.prediction().step_ns != s.prediction().baseline_step_ns);

  // Undo gives back every earlier baseline exactly.
  s.undo();
  s.undo();
  s.undo();
  CHECK(s.prediction().baseline_step_ns == profile_preset.baseline_step_ns);
  while (s.can_undo()) s.undo();
  CHECK(s.prediction().baseline_step_ns == fitted.baseline_step_ns);
  CHECK(s.prediction().step_ns == fitted.step_ns);
  // The exported plan file records the baseline of the current configuration.
  s.redo();
  CHECK(s.plan_file_json().find("\"baseline_step_time_ms\"") != std::string::npos);
}

TEST_CASE("the synthetic sample's replay is far from its measured step, and the warning says why", "[unshard]") {
  UnshardSession s = UnshardSession::from_profile(sample());
  const Prediction& p = s.prediction();
  REQUIRE(p.replay.comparable);
  CHECK(p.replay.measured_ns == s.inputs().measured_step_ns);
  CHECK(p.replay.replay_ns == p.baseline_step_ns);
  CHECK(p.replay.error_pct == Approx(100.0 * (double(p.replay.replay_ns) - double(p.replay.measured_ns)) / double(p.replay.measured_ns)));
  auto mentions = [](const sim::ReplayCheck& r, const char* text) {
    for (const auto& why : r.reasons)
      if (why.find(text) != std::string::npos) return true;
    return false;
  };
  // Far on the unfitted preset, which this profile's collectives would correct: both said.
  s.set_preset(0);
  const sim::ReplayCheck unfitted = s.prediction().replay;
  REQUIRE(unfitted.far);
  CHECK(std::abs(unfitted.error_pct) > sim::kReplayWarnPct);
  CHECK(mentions(unfitted, "synthetic"));
  CHECK(mentions(unfitted, "not fitted to this profile's"));
  CHECK(unfitted.reasons.front().find("synthetic") != std::string::npos);  // the most telling first
  CHECK(unfitted.warning.find("more than 10%") != std::string::npos);
  CHECK(unfitted.warning.find("synthetic") != std::string::npos);
  // On the fitted preset, when still far, the cluster is not blamed.
  s.undo();
  const sim::ReplayCheck fitted = s.prediction().replay;
  CHECK_FALSE(mentions(fitted, "not fitted"));
  if (fitted.far) CHECK(mentions(fitted, "synthetic"));
  else CHECK(fitted.warning.empty());
}


TEST_CASE("a profile without FSDP units is refused with its own error", "[unshard]") {
  test::TempDir dir;
  const std::string path = profile_without_units(dir);
  CHECK_THROWS_AS(UnshardSession::from_profile(path), sim::NoFsdpUnitsError);
  try {
    UnshardSession::from_profile(path);
  } catch (const ProfileError& e) {  // still a ProfileError for callers that only show the message
    CHECK(std::string(e.what()).find("no module is marked as an FSDP unit") != std::string::npos);
    CHECK(e.kind() == ProfileErrorKind::MalformedTable);
  }
  // Other unusable inputs are plain ProfileErrors.
  try {
    UnshardSession::from_profile(dir.file("missing.ssdb"));
    FAIL("no error");
  } catch (const sim::NoFsdpUnitsError&) {
    FAIL("a missing file is not a profile without units");
  } catch (const ProfileError&) {
  }
}

// ---- What-if knobs (issue 15 item 7): checkpointing, offload, parallelism, micro-batches. ----

namespace {
std::string model(const char* name) { return test::source_dir() + "/resources/models/" + name; }

// What `shardscope simulate --model M --world N --plan P.json` computes (the same calls).
sim::SimResult simulate_model_cli_way(const std::string& model_path, int world, const std::string& plan_path) {
  sim::SimInputRequest req;
  req.model_path = model_path;
  req.plan_path = plan_path;
  req.world_override = world;
  sim::SimInputs in = sim::load_sim_inputs(req);
  return sim::simulate(sim::compile_step(in.model, in.plan, in.cluster));
}
}  // namespace

TEST_CASE("checkpointing a unit predicts what simulate computes for the exported plan; undo is exact", "[unshard][whatif]") {
  UnshardSession s = UnshardSession::from_model(model("llama3-8b.json"), 8, clusters());
  const int layer = s.inputs().model.find_unit("layers.3");
  REQUIRE(layer >= 0);
  // A description's block has sub-modules: full and selective per sub-module; the root none.
  const auto choices = s.checkpoint_choices(layer);
  CHECK(choices == std::vector<std::string>{"none", "full", "attention", "feed_forward"});
  CHECK(s.checkpoint_choices(s.inputs().model.find_unit("")).empty());
  const Prediction before = s.prediction();
  CHECK(before.result.recomputes == 0);

  s.set_checkpoint(layer, "full");
  const Prediction full = s.prediction();
  CHECK(full.result.recomputes == 1);  // one micro-batch: one forward rerun of layers.3
  CHECK(full.result.recompute_ns > 0);
  CHECK(full.step_ns > before.step_ns);
  CHECK(full.peak_bytes < before.peak_bytes);
  CHECK(s.undo_label() == "checkpoint layers.3 full");

  test::TempDir dir;
  s.export_plan(dir.file("plan.json"));
  const sim::FsdpPlan written = sim::load_plan_file(dir.file("plan.json"));
  CHECK(written.checkpoint == std::map<std::string, std::string>{{"layers.3", "full"}});
  const sim::SimResult cli = simulate_model_cli_way(model("llama3-8b.json"), 8, dir.file("plan.json"));
  CHECK(cli.step_ns == full.step_ns);
  CHECK(cli.peak_bytes == full.peak_bytes);

  s.set_checkpoint(layer, "attention");
  const Prediction selective = s.prediction();
  CHECK(selective.result.recompute_ns > 0);
  CHECK(selective.result.recompute_ns < full.result.recompute_ns);  // attention is part of the block
  // Every layer at once, as one change.
  s.set_checkpoint_all("full");
  CHECK(s.prediction().result.recomputes == 32);
  CHECK(std::count(s.state().checkpoint.begin(), s.state().checkpoint.end(), "full") == 32);
  REQUIRE(s.undo());
  REQUIRE(s.undo());
  REQUIRE(s.undo());
  CHECK(s.prediction().step_ns == before.step_ns);
  CHECK(s.prediction().peak_bytes == before.peak_bytes);
  REQUIRE(s.redo());
  CHECK(s.prediction().step_ns == full.step_ns);

  // A pattern the unit does not have is the simulator's error; nothing changes.
  const UnshardState kept = s.state();
  CHECK_THROWS_AS(s.set_checkpoint(layer, "no_such_part"), ProfileError);
  CHECK(s.state() == kept);
  CHECK(s.prediction().step_ns == full.step_ns);
}

TEST_CASE("a profile's units offer full checkpointing only; offload adds host copies and a CPU optimizer", "[unshard][whatif]") {
  UnshardSession s = UnshardSession::from_profile(sample(), clusters());
  const int layer = s.inputs().model.find_unit("layers.2");
  REQUIRE(layer >= 0);
  CHECK(s.checkpoint_choices(layer) == std::vector<std::string>{"none", "full"});
  CHECK_FALSE(s.takes_model_parallelism());

  s.set_offload("cpu");
  const Prediction& p = s.prediction();
  CHECK(p.result.host_copy_ns > 0);
  CHECK(p.result.cpu_optimizer_ns > 0);
  // Per unit: its copies, summed from the simulated ops of its exec unit.
  TimeNs from_ops = 0;
  const int e = p.step.exec_of_unit[static_cast<std::size_t>(layer)];
  for (const auto& op : p.result.ops)
    if (op.exec == e && (op.kind == sim::OpKind::HostToDevice || op.kind == sim::OpKind::DeviceToHost)) from_ops += op.end - op.start;
  CHECK(from_ops > 0);
  CHECK(p.host_copy_ns[static_cast<std::size_t>(layer)] == from_ops);
  s.set_offload_prefetch_depth(3);
  s.set_pipelined_optimizer(true);
  test::TempDir dir;
  s.export_plan(dir.file("plan.json"));
  const sim::FsdpPlan written = sim::load_plan_file(dir.file("plan.json"));
  CHECK(written.offload == "cpu");
  CHECK(written.offload_prefetch_depth == 3);
  CHECK(written.pipelined_optimizer);
  CHECK(simulate_cli_way(sample(), dir.file("plan.json"), !s.prediction().preset_fitted).step_ns == s.prediction().step_ns);

  const UnshardState kept = s.state();
  CHECK_THROWS_AS(s.set_offload("nvme"), ProfileError);
  CHECK_THROWS_AS(s.set_offload_prefetch_depth(0), ProfileError);
  CHECK(s.state() == kept);
}

TEST_CASE("parallelism on a profile: pp works, tp / cp / ep are refused with the reason and nothing changes", "[unshard][whatif]") {
  UnshardSession s = UnshardSession::from_profile(sample(), clusters());
  REQUIRE(s.state().world_size == 4);
  const Prediction before = s.prediction();
  sim::Parallelism tp;
  tp.tp = 2;
  try {
    s.set_parallelism(tp);
    FAIL("tp on a profile was accepted");
  } catch (const ProfileError& e) {
    CHECK(std::string(e.what()).find("model description") != std::string::npos);
  }
  CHECK(s.state().parallel == sim::Parallelism{});
  CHECK(s.prediction().step_ns == before.step_ns);
  CHECK_FALSE(s.can_undo());

  sim::Parallelism pp3;
  pp3.pp = 3;  // 3 does not divide the world of 4
  try {
    s.set_parallelism(pp3);
    FAIL("pp 3 at world 4 was accepted");
  } catch (const ProfileError& e) {
    CHECK(std::string(e.what()).find("does not divide the world size 4") != std::string::npos);
  }
  sim::Parallelism zero;
  zero.cp = 0;
  CHECK_THROWS_AS(s.set_parallelism(zero), ProfileError);
  CHECK_THROWS_AS(s.set_micro_batches(0), ProfileError);
  CHECK(s.prediction().step_ns == before.step_ns);

  sim::Parallelism pp2;
  pp2.pp = 2;
  s.set_parallelism(pp2);
  s.set_micro_batches(4);
  const Prediction& p = s.prediction();
  REQUIRE(p.result.stages.size() == 2);
  CHECK(p.result.p2p_sends > 0);
  CHECK(p.result.bubble_ns > 0);
  test::TempDir dir;
  s.export_plan(dir.file("plan.json"));
  const sim::FsdpPlan written = sim::load_plan_file(dir.file("plan.json"));
  CHECK(written.parallel.pp == 2);
  CHECK(written.gradient_accumulation == 4);
  const sim::SimResult cli = simulate_cli_way(sample(), dir.file("plan.json"), !p.preset_fitted);
  CHECK(cli.step_ns == p.step_ns);
  CHECK(cli.bubble_ns == p.result.bubble_ns);
}

TEST_CASE("tp, pp and micro-batches on a 70B description at 1024 GPUs: as simulate computes; a plan file restores them", "[unshard][whatif]") {
  UnshardSession s = UnshardSession::from_model(model("llama3-70b.json"), 1024, clusters());
  REQUIRE(s.takes_model_parallelism());
  CHECK(s.state().world_size == 1024);
  sim::Parallelism par;
  par.tp = 8;
  par.sequence_parallel = true;
  par.pp = 4;
  s.set_parallelism(par);
  s.set_micro_batches(16);
  const Prediction& p = s.prediction();
  CHECK(p.result.tp_collectives > 0);
  CHECK(p.result.model_parallel_ns > 0);
  REQUIRE(p.result.stages.size() == 4);
  CHECK(p.result.shown_stage >= 0);

  test::TempDir dir;
  s.export_plan(dir.file("plan.json"));
  const sim::SimResult cli = simulate_model_cli_way(model("llama3-70b.json"), 1024, dir.file("plan.json"));
  CHECK(cli.step_ns == p.step_ns);
  CHECK(cli.tp_collectives == p.result.tp_collectives);
  CHECK(cli.peak_bytes == p.peak_bytes);

  // A fresh session given the plan file's text ends in the same state and numbers.
  UnshardSession t = UnshardSession::from_model(model("llama3-70b.json"), 1024, clusters());
  std::ifstream in(dir.file("plan.json"));
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  t.apply_plan_file_json(json, "plan.json");
  CHECK(t.state().parallel == s.state().parallel);
  CHECK(t.state().micro_batches == 16);
  CHECK(t.prediction().step_ns == p.step_ns);

  // tp 3 does not divide 1024: refused, the last good prediction stays.
  sim::Parallelism bad = par;
  bad.tp = 3;
  CHECK_THROWS_AS(s.set_parallelism(bad), ProfileError);
  CHECK(s.state().parallel == par);
  CHECK(s.prediction().step_ns == cli.step_ns);
  // Undo goes back through micro-batches, then the parallelism.
  REQUIRE(s.undo());
  CHECK(s.state().micro_batches == 1);
  REQUIRE(s.undo());
  CHECK(s.state().parallel == sim::Parallelism{});
}

TEST_CASE("every parallelism and offload combination either re-simulates or is refused with a ProfileError", "[unshard][whatif]") {
  // The panel's boxes can reach any of these; none may crash or leave a half-made state.
  for (const bool description : {true, false}) {
    UnshardSession s = description ? UnshardSession::from_model(model("llama3-8b.json"), 64, clusters())
                                   : UnshardSession::from_profile(sample(), clusters());
    int accepted = 0, refused = 0;
    for (int tp : {1, 2, 3, 8})
      for (int cp : {1, 2})
        for (int pp : {1, 2, 3, 4})
          for (const char* schedule : {"1f1b", "gpipe", "interleaved"})
            for (int v : {1, 2})
              for (int mb : {1, 3, 8})
                for (const char* offload : {"none", "cpu"}) {
                  sim::Parallelism par;
                  par.tp = tp;
                  par.cp = cp;
                  par.cp_kind = tp == 2 ? "ring" : "ulysses";
                  par.sequence_parallel = tp == 8;
                  par.pp = pp;
                  par.pp_schedule = schedule;
                  par.pp_virtual = v;
                  par.ep = cp;  // ep divides the FSDP group whenever cp does
                  UnshardState next = s.state();
                  next.parallel = par;
                  next.micro_batches = mb;
                  next.offload = offload;
                  const UnshardState before = s.state();
                  const TimeNs step_before = s.prediction().step_ns;
                  try {
                    s.apply(next, "combination");
                    ++accepted;
                    CHECK(s.state() == next);
                    CHECK(s.prediction().step_ns > 0);
                  } catch (const ProfileError& e) {
                    ++refused;
                    CHECK(std::string(e.what()).size() > 10);  // says why
                    CHECK(s.state() == before);
                    CHECK(s.prediction().step_ns == step_before);
                  }
                }
    CHECK(accepted > 0);
    CHECK(refused > 0);
  }
}

TEST_CASE("plan automatically on a pipeline with checkpointing plans or refuses, never leaves a half-made state", "[unshard][whatif]") {
  UnshardSession s = UnshardSession::from_model(model("llama3-8b.json"), 64, clusters());
  sim::Parallelism par;
  par.tp = 4;
  par.pp = 2;
  s.set_parallelism(par);
  s.set_micro_batches(4);
  s.set_checkpoint(s.inputs().model.find_unit("layers.1"), "full");
  const UnshardState before = s.state();
  try {
    s.plan_automatically();
    CHECK(s.state().parallel == par);  // the planner chooses kept units, nothing else
    CHECK(s.state().checkpoint == before.checkpoint);
    CHECK(s.state().micro_batches == 4);
  } catch (const ProfileError&) {
    CHECK(s.state() == before);
  }
}

TEST_CASE("a description that checkpoints every layer: each layer reads 'full' and can be taken back; numbers as simulate gives them", "[unshard][whatif]") {
  // llama3-70b.json declares "activation_checkpointing": "full". Baked into the model, no unit
  // could be checkpointed (or un-checkpointed) and every layer read "none".
  UnshardSession s = UnshardSession::from_model(model("llama3-70b.json"), 64, clusters());
  const Prediction p0 = s.prediction();
  int full = 0, choosable = 0;
  for (int u = 0; u < s.unit_count(); ++u) {
    if (s.inputs().model.units[static_cast<std::size_t>(u)].is_root) continue;
    full += s.state().checkpoint[static_cast<std::size_t>(u)] == "full";
    const auto& choices = s.checkpoint_choices(u);
    choosable += std::find(choices.begin(), choices.end(), "none") != choices.end();
  }
  CHECK(full == 80);
  CHECK(choosable == 80);
  // The numbers of `shardscope simulate --model llama3-70b.json --world 64` (the description's
  // checkpointing built into the model): the same step; the peak within one layer's checkpointed
  // input (128 MiB of 40 GiB: built in, the layer being recomputed also keeps its saved input).
  const sim::SimResult cli = simulate_model_cli_way(model("llama3-70b.json"), 64, "");
  CHECK(cli.step_ns == p0.step_ns);
  CHECK(std::abs(cli.peak_bytes - p0.peak_bytes) <= (std::int64_t{128} << 20));
  // Taken back on one layer: more memory, less time.
  const int l3 = s.inputs().model.find_unit("layers.3");
  REQUIRE(l3 >= 0);
  s.set_checkpoint(l3, "none");
  CHECK(s.prediction().peak_bytes > p0.peak_bytes);
  CHECK(s.prediction().step_ns < p0.step_ns);
}

TEST_CASE("a session made from the app's already-read profile equals one that reads the file", "[unshard]") {
  const std::string path = test::source_dir() + "/resources/samples/cpu-fsdp2-llama-2rank.ssdb";
  const auto loaded = std::make_shared<const Profile>(load_profile(path));
  UnshardSession read = UnshardSession::from_profile(path, clusters());
  UnshardSession given = UnshardSession::from_profile(path, clusters(), loaded);
  REQUIRE(read.unit_count() == given.unit_count());
  CHECK(read.prediction().step_ns == given.prediction().step_ns);
  CHECK(read.prediction().peak_bytes == given.prediction().peak_bytes);
  CHECK(read.inputs().measured_step_ns == given.inputs().measured_step_ns);
  CHECK(read.plan_file_json() == given.plan_file_json());
}
