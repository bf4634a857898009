// `shardscope simulate` and `shardscope plan` driven in-process: JSON fields, files written, and
// bad input giving a clear error, a non-zero exit and no output file; simulate's default fit to the
// profile's collectives, the cluster it names, and the replay warning with its reasons.
#include <catch2/catch.hpp>

#include <simdjson.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>

#include "app/cli/command.h"
#include "tests/sim/cli_capture.h"
#include "profiler/sim/fsdp_plan.h"
#include "profiler/sim/model_description.h"
#include "profiler/sim/sim_inputs.h"
#include "profiler/sim/sim_report.h"
#include "profiler/sim/step_simulator.h"
#include "profiler/synthetic/synthetic_profile.h"
#include "storage/profile_reader.h"
#include "storage/sqlite_handle.h"
#include "tests/support/test_paths.h"

using namespace ss;

namespace {

using Run = ss::test::CliRun;
Run run(const std::string& name, const std::vector<std::string>& args) { return ss::test::run_cli(name, args); }

std::string model(const char* f) { return ss::test::source_dir() + "/resources/models/" + f; }
std::string cluster(const char* f) { return ss::test::source_dir() + "/resources/clusters/" + f; }

double number(simdjson::dom::element doc, const char* key) {
  double d = 0;
  REQUIRE_FALSE(doc[key].get_double().get(d));
  return d;
}

std::string text(simdjson::dom::element doc, const char* key) {
  std::string_view v;
  REQUIRE_FALSE(doc[key].get_string().get(v));
  return std::string(v);
}

bool boolean(simdjson::dom::element doc, const char* key) {
  bool b = false;
  REQUIRE_FALSE(doc[key].get_bool().get(b));
  return b;
}

bool has(simdjson::dom::element doc, const char* key) {
  simdjson::dom::element e;
  return doc[key].get(e) == simdjson::SUCCESS;
}

std::string sample() { return ss::test::source_dir() + "/resources/samples/synthetic-fsdp-4rank.ssdb"; }

}  // namespace

TEST_CASE("simulate a model description and a profile", "[sim][cli]") {
  ss::test::TempDir dir;
  Run r = run("simulate", {"--model", model("llama3-8b.json"), "--cluster", cluster("h100-nvlink-ib.json"), "--world", "16",
                           "--format", "json"});
  REQUIRE(r.code == 0);
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(r.out);
  CHECK(number(doc, "step_time_ms") > 0);
  CHECK(number(doc, "exposed_comm_ms") >= 0);
  std::int64_t world = 0, peak = 0;
  REQUIRE_FALSE(doc["world_size"].get_int64().get(world));
  REQUIRE_FALSE(doc["peak_memory_bytes"].get_int64().get(peak));
  CHECK(world == 16);
  CHECK(peak > 0);
  simdjson::dom::element m;
  CHECK(doc["measured_step_time_ms"].get(m) != simdjson::SUCCESS);  // a model has no measurement

  SyntheticSpec spec;
  spec.layers = 4;
  write_synthetic_profile(dir.file("in.ssdb"), spec);
  r = run("simulate", {dir.file("in.ssdb"), "--fit", "-o", dir.file("sim.ssdb"), "--format", "json"});
  REQUIRE(r.code == 0);
  doc = parser.parse(r.out);
  CHECK(number(doc, "measured_step_time_ms") > 0);
  CHECK(doc["error_pct"].is_double());
  bool measured = true;
  REQUIRE_FALSE(doc["measured"].get_bool().get(measured));
  CHECK_FALSE(measured);  // synthetic input: reported, but not a measurement
  // What is replayed as measured is reported apart from what is modelled: the generator's 2 us
  // launch gaps are idle, and it has no collective FSDP does not issue.
  CHECK(number(doc, "idle_ms") > 0);
  CHECK(number(doc, "other_comm_ms") == 0);
  simdjson::dom::element breakdown;
  REQUIRE_FALSE(doc["measured_breakdown"].get(breakdown));
  CHECK(number(breakdown, "idle_ms") == Approx(number(doc, "idle_ms")).epsilon(0.01));
  CHECK(doc["measured_window"].get(m) != simdjson::SUCCESS);  // the synthetic profile has step markers
  const Profile sim = load_profile(dir.file("sim.ssdb"));
  CHECK(sim.origin.kind == OriginKind::Simulated);
  CHECK(sim.origin.parameters_json.find("\"plan\"") != std::string::npos);
  CHECK(sim.origin.parameters_json.find("\"cluster\"") != std::string::npos);
  r = run("simulate", {dir.file("in.ssdb")});
  CHECK(r.code == 0);
  CHECK(r.out.find("Step time") != std::string::npos);
}

TEST_CASE("plan: strategies, plan file, and the plan replayed by simulate", "[sim][cli][planner]") {
  ss::test::TempDir dir;
  // Budget: the baseline peak at world 8 plus 6 GiB (room for a few 0.44 GB blocks).
  sim::ClusterModel c;
  c.world_size = 8;
  const sim::SimModel m = sim::build_sim_model(sim::load_model_file(model("llama3-8b.json")));
  const std::int64_t base_peak = sim::simulate(sim::compile_step(m, sim::FsdpPlan{}, c)).peak_bytes;
  const std::string budget = std::to_string(base_peak + (6LL << 30));
  for (const char* strategy : {"greedy", "cost"}) {
    INFO(strategy);
    Run r = run("plan", {"--model", model("llama3-8b.json"), "--world", "8", "--budget", budget, "--strategy", strategy, "-o",
                         dir.file(std::string(strategy) + ".json"), "--format", "json"});
    REQUIRE(r.code == 0);
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.parse(r.out);
    std::int64_t peak = 0;
    REQUIRE_FALSE(doc["peak_memory_bytes"].get_int64().get(peak));
    CHECK(peak <= std::stoll(budget));
    simdjson::dom::array unsharded;
    REQUIRE_FALSE(doc["unsharded"].get_array().get(unsharded));
    CHECK(unsharded.size() > 0);
    const double planned = number(doc, "step_time_ms");
    // The plan file is a plan: simulate --plan gives the same prediction.
    const sim::FsdpPlan p = sim::load_plan_file(dir.file(std::string(strategy) + ".json"));
    CHECK(p.unsharded.size() == unsharded.size());
    CHECK(ss::test::read_file(dir.file(std::string(strategy) + ".json")).find("fully_shard(model.get_submodule(") != std::string::npos);
    Run s = run("simulate", {"--model", model("llama3-8b.json"), "--world", "8", "--plan", dir.file(std::string(strategy) + ".json"),
                             "--format", "json"});
    REQUIRE(s.code == 0);
    simdjson::dom::parser p2;
    CHECK(number(p2.parse(s.out), "step_time_ms") == Approx(planned).epsilon(1e-9));
  }
  // Manual mode reports the prediction for the listed modules.
  Run r = run("plan", {"--model", model("llama3-8b.json"), "--world", "8", "--modules", "layers.31,layers.30", "--format", "json"});
  REQUIRE(r.code == 0);
  CHECK(r.out.find("\"layers.30\"") != std::string::npos);
}

TEST_CASE("plan --buckets: the buckets, the plan file, its Python, and simulate replaying it", "[sim][cli][planner]") {
  ss::test::TempDir dir;
  // The tiny description at 64 GPUs: its two layers' all-gathers are latency-bound.
  Run r = run("plan", {"--model", model("fsdp-sample-tiny.json"), "--world", "64", "--buckets", "-o", dir.file("b.json"), "--format",
                       "json"});
  REQUIRE(r.code == 0);
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(r.out);
  CHECK(text(doc, "strategy") == "manual");
  CHECK(number(doc, "buckets_saved_ms") > 0);
  simdjson::dom::array unsharded;
  REQUIRE_FALSE(doc["unsharded"].get_array().get(unsharded));
  CHECK(unsharded.size() == 0);  // --buckets alone: no unit kept
  const sim::FsdpPlan p = sim::load_plan_file(dir.file("b.json"));
  CHECK(p.buckets == std::vector<std::vector<std::string>>{{"layers.0", "layers.1"}});
  CHECK(p.fsdp2_buckets == p.buckets);
  simdjson::dom::parser p1;
  const std::string python = text(p1.parse(ss::test::read_file(dir.file("b.json"))), "fsdp2_python");
  CHECK(python.find(R"(fully_shard([model.get_submodule("layers.0"), model.get_submodule("layers.1")], reshard_after_forward=True)") !=
        std::string::npos);
  Run s = run("simulate", {"--model", model("fsdp-sample-tiny.json"), "--world", "64", "--plan", dir.file("b.json"), "--format", "json"});
  REQUIRE(s.code == 0);
  simdjson::dom::parser p2;
  CHECK(number(p2.parse(s.out), "step_time_ms") == Approx(number(doc, "step_time_ms")).epsilon(1e-9));
  // Text: the lists and what they save; with --search it is refused.
  Run t = run("plan", {"--model", model("fsdp-sample-tiny.json"), "--world", "64", "--buckets"});
  REQUIRE(t.code == 0);
  CHECK(t.out.find("Strategy     buckets only") != std::string::npos);
  CHECK(t.out.find("Buckets      1 of two or more units: layers.0+layers.1 (") != std::string::npos);
  CHECK(run("plan", {"--model", model("fsdp-sample-tiny.json"), "--world", "64", "--budget", "80GiB", "--search", "--buckets"}).code == 1);
}

TEST_CASE("simulate and plan reject bad input clearly and write nothing", "[sim][cli][errors]") {
  ss::test::TempDir dir;
  Run r = run("simulate", {dir.file("missing.ssdb"), "-o", dir.file("out.ssdb")});
  CHECK(r.code == cli::kExitBadInput);
  CHECK(r.err.find("missing.ssdb") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.file("out.ssdb")));

  ss::test::write_file(dir.file("bad.json"), "{\"world_size\": \"eight\"}");
  r = run("simulate", {"--model", model("llama3-8b.json"), "--cluster", dir.file("bad.json"), "-o", dir.file("out.ssdb")});
  CHECK(r.code == cli::kExitBadInput);
  CHECK(r.err.find("bad.json: world_size: expected an integer") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.file("out.ssdb")));

  r = run("plan", {"--model", model("llama3-8b.json"), "--budget", "lots"});
  CHECK(r.code == cli::kExitUsage);
  CHECK(r.err.find("--budget: 'lots' is not a size") != std::string::npos);

  r = run("plan", {"--model", model("llama3-8b.json"), "--modules", "layers.99", "-o", dir.file("p.json")});
  CHECK(r.code == cli::kExitBadInput);
  CHECK(r.err.find("'layers.99' is not an FSDP unit") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.file("p.json")));

  r = run("plan", {"--model", model("llama3-8b.json"), "--budget", "70GiB", "--strategy", "exact"});
  CHECK(r.code == cli::kExitBadInput);
  CHECK(r.err.find("limited to 20 candidate units") != std::string::npos);

  r = run("simulate", {});
  CHECK(r.code == cli::kExitUsage);
}

TEST_CASE("simulate fits the cluster to the profile's collectives by default and says which cluster it used", "[sim][cli][fit]") {
  simdjson::dom::parser parser;
  // Default: a profile with collectives and no --cluster is replayed on the fitted cluster, as --fit.
  Run r = run("simulate", {sample(), "--format", "json"});
  REQUIRE(r.code == 0);
  simdjson::dom::element doc = parser.parse(r.out);
  CHECK(boolean(doc, "cluster_fitted"));
  CHECK(text(doc, "cluster_used").find("fitted to the profile's collectives") != std::string::npos);
  CHECK(text(doc, "cluster_used").find("--no-fit") != std::string::npos);  // how to opt out
  CHECK(has(doc, "fit"));
  const double fitted_ms = number(doc, "step_time_ms");
  sim::SimInputRequest req;
  req.profile_path = sample();
  req.fit = true;
  const sim::SimInputs in = sim::load_sim_inputs(req);
  CHECK(fitted_ms == Approx(sim::to_ms(sim::simulate(sim::compile_step(in.model, in.plan, in.cluster)).step_ns)).epsilon(1e-12));
  r = run("simulate", {sample(), "--fit", "--format", "json"});
  REQUIRE(r.code == 0);
  simdjson::dom::parser p2;
  CHECK(number(p2.parse(r.out), "step_time_ms") == fitted_ms);

  // --no-fit: the preset as it is.
  r = run("simulate", {sample(), "--no-fit", "--format", "json"});
  REQUIRE(r.code == 0);
  doc = parser.parse(r.out);
  CHECK_FALSE(boolean(doc, "cluster_fitted"));
  CHECK(text(doc, "cluster_used").find("not fitted (--no-fit)") != std::string::npos);
  CHECK_FALSE(has(doc, "fit"));
  CHECK(number(doc, "step_time_ms") != fitted_ms);

  // A cluster file is used as given unless --fit asks to fit it.
  const std::string c = cluster("h100-nvlink-ib.json");
  r = run("simulate", {sample(), "--cluster", c, "--format", "json"});
  REQUIRE(r.code == 0);
  doc = parser.parse(r.out);
  CHECK_FALSE(boolean(doc, "cluster_fitted"));
  CHECK(text(doc, "cluster_used").find(c) != std::string::npos);
  CHECK(text(doc, "cluster_used").find("add --fit") != std::string::npos);
  r = run("simulate", {sample(), "--cluster", c, "--fit", "--format", "json"});
  REQUIRE(r.code == 0);
  CHECK(boolean(parser.parse(r.out), "cluster_fitted"));

  // The text output names it too.
  r = run("simulate", {sample()});
  REQUIRE(r.code == 0);
  CHECK(r.out.find("Cluster      h100-nvlink-ib (built-in preset), fitted to the profile's collectives (") != std::string::npos);
  r = run("simulate", {sample(), "--no-fit"});
  CHECK(r.out.find("not fitted (--no-fit)") != std::string::npos);

  // A model description has nothing to fit to: the preset, and no fit is claimed.
  r = run("simulate", {"--model", model("llama3-8b.json"), "--format", "json"});
  REQUIRE(r.code == 0);
  doc = parser.parse(r.out);
  CHECK_FALSE(boolean(doc, "cluster_fitted"));
  CHECK(text(doc, "cluster_used") == "h100-nvlink-ib (built-in preset)");
  CHECK_FALSE(has(doc, "warning"));

  r = run("simulate", {sample(), "--fit", "--no-fit"});
  CHECK(r.code == cli::kExitUsage);
  CHECK(r.err.find("exclude each other") != std::string::npos);
}

TEST_CASE("simulate warns when the replay is more than 10% from the measured step, and why", "[sim][cli][warning]") {
  simdjson::dom::parser parser;
  // The bundled sample is synthetic: its "measured" step is generated, and on the unfitted preset
  // the replay is far from it. Both reasons are named.
  Run r = run("simulate", {sample(), "--no-fit", "--format", "json"});
  REQUIRE(r.code == 0);
  simdjson::dom::element doc = parser.parse(r.out);
  const double err = number(doc, "replay_error_pct");
  REQUIRE(std::abs(err) > 10.0);
  CHECK(number(doc, "replay_step_time_ms") == number(doc, "step_time_ms"));  // no --plan: the step is the replay
  CHECK(number(doc, "error_pct") == err);
  const std::string warning = text(doc, "warning");
  CHECK(warning.find("more than 10%") != std::string::npos);
  CHECK(warning.find("synthetic") != std::string::npos);
  CHECK(warning.find("not fitted to this profile's") != std::string::npos);
  simdjson::dom::array reasons;
  REQUIRE_FALSE(doc["warning_reasons"].get_array().get(reasons));
  CHECK(reasons.size() >= 2);
  r = run("simulate", {sample(), "--no-fit"});
  CHECK(r.out.find("WARNING      the replay as profiled") != std::string::npos);

  // With a plan, the replay is still the profile as recorded: what the warning judges does not move.
  ss::test::TempDir dir;
  ss::test::write_file(dir.file("plan.json"), R"({"unsharded": ["layers.3", "layers.4"]})");
  r = run("simulate", {sample(), "--no-fit", "--plan", dir.file("plan.json"), "--world", "16", "--format", "json"});
  REQUIRE(r.code == 0);
  simdjson::dom::parser p2;
  simdjson::dom::element planned = p2.parse(r.out);
  CHECK(number(planned, "replay_step_time_ms") == number(doc, "replay_step_time_ms"));
  CHECK(number(planned, "step_time_ms") != number(planned, "replay_step_time_ms"));
  CHECK(text(planned, "warning") == warning);

  // Within 10 %: no warning. A simulated profile read back replays to its own step time.
  r = run("simulate", {sample(), "--no-fit", "-o", dir.file("sim.ssdb")});
  REQUIRE(r.code == 0);
  r = run("simulate", {dir.file("sim.ssdb"), "--no-fit", "--format", "json"});
  REQUIRE(r.code == 0);
  doc = parser.parse(r.out);
  CHECK(std::abs(number(doc, "replay_error_pct")) <= 10.0);
  CHECK_FALSE(has(doc, "warning"));
  CHECK_FALSE(has(doc, "warning_reasons"));
  r = run("simulate", {dir.file("sim.ssdb"), "--no-fit"});
  CHECK(r.out.find("WARNING") == std::string::npos);
}

TEST_CASE("simulate refuses a profile without FSDP units with a clear message", "[sim][cli][errors]") {
  ss::test::TempDir dir;
  SyntheticSpec spec;
  spec.layers = 2;
  write_synthetic_profile(dir.file("p.ssdb"), spec);
  {
    sql::Db db(dir.file("p.ssdb"), SQLITE_OPEN_READWRITE);
    db.exec("UPDATE modules SET is_fsdp_unit = 0, fsdp_unit_id = NULL");
  }
  Run r = run("simulate", {dir.file("p.ssdb"), "-o", dir.file("sim.ssdb")});
  CHECK(r.code == cli::kExitBadInput);
  CHECK(r.err.find("no module is marked as an FSDP unit") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.file("sim.ssdb")));
}

namespace {
// Inputs as a measured profile's, with a replay `error` % off its 100 ms measured step.
sim::SimInputs measured_inputs() {
  sim::SimInputs in;
  in.from_profile = true;
  in.origin = OriginKind::Measured;
  in.measured_step_ns = 100'000'000;
  in.measured_compute_ns = 90'000'000;
  in.steps_used = 5;
  in.fit_samples_available = 40;
  return in;
}
sim::SimResult replay_of(TimeNs step_ns, int all_gathers = 0, int reduce_scatters = 0) {
  sim::SimResult r;
  r.step_ns = step_ns;
  r.all_gathers = all_gathers;
  r.reduce_scatters = reduce_scatters;
  return r;
}
bool says(const sim::ReplayCheck& c, const char* text) {
  for (const auto& r : c.reasons)
    if (r.find(text) != std::string::npos) return true;
  return false;
}
}  // namespace

TEST_CASE("check_replay: within 10% no warning; far, the reasons the inputs give", "[sim][warning]") {
  sim::SimInputs in = measured_inputs();
  auto c = sim::check_replay(in, replay_of(109'000'000), true);
  CHECK(c.comparable);
  CHECK(c.error_pct == Approx(9.0));
  CHECK_FALSE(c.far);
  CHECK(c.reasons.empty());
  CHECK(c.warning.empty());
  c = sim::check_replay(in, replay_of(89'000'000), true);
  CHECK(c.far);
  CHECK(c.error_pct == Approx(-11.0));
  // A fitted cluster on a clean measured profile of 5 steps: no known cause; said so.
  REQUIRE(c.reasons.size() == 1);
  CHECK(says(c, "none of the usual causes"));
  CHECK(c.warning.find("-11.0%") != std::string::npos);

  // Each cause, alone.
  c = sim::check_replay(in, replay_of(130'000'000), false);
  CHECK(says(c, "not fitted to this profile's 40 measured collectives"));
  CHECK_FALSE(says(c, "none of the usual"));
  in.fit_samples_available = 0;
  c = sim::check_replay(in, replay_of(130'000'000), false);
  CHECK(says(c, "no all-gather / reduce-scatter to fit"));
  in = measured_inputs();
  in.measured_idle_ns = 25'000'000;
  c = sim::check_replay(in, replay_of(130'000'000), true);
  CHECK(says(c, "25% of the measured step is GPU idle"));
  in = measured_inputs();
  in.measured_other_comm_ns = 15'000'000;
  in.other_collectives = 7;
  c = sim::check_replay(in, replay_of(130'000'000), true);
  CHECK(says(c, "15% of the measured step is 7 collective(s) FSDP does not issue"));
  in = measured_inputs();
  in.steps_used = 1;
  c = sim::check_replay(in, replay_of(130'000'000), true);
  CHECK(says(c, "averages only 1 step "));
  in = measured_inputs();
  in.window_only = true;
  in.steps_used = 1;
  in.profile_span_ns = 400'000'000;
  c = sim::check_replay(in, replay_of(130'000'000), true);
  CHECK(says(c, "no step markers"));
  CHECK_FALSE(says(c, "averages only"));  // a window has no steps to count
  in = measured_inputs();
  in.origin = OriginKind::Synthetic;
  c = sim::check_replay(in, replay_of(130'000'000), true);
  CHECK(c.reasons.front().find("synthetic") != std::string::npos);
  in.origin = OriginKind::Simulated;
  c = sim::check_replay(in, replay_of(130'000'000), true);
  CHECK(says(c, "itself a simulation"));

  // Nothing measured to compare with: no check.
  in = measured_inputs();
  in.measured_step_ns = 0;
  CHECK_FALSE(sim::check_replay(in, replay_of(130'000'000), false).comparable);
  CHECK_FALSE(sim::check_replay(in, replay_of(130'000'000), false).far);
  in = measured_inputs();
  in.from_profile = false;
  CHECK_FALSE(sim::check_replay(in, replay_of(130'000'000), false).far);
}

TEST_CASE("check_replay: the replay's FSDP collectives against each profiled step's", "[sim][warning]") {
  sim::SimInputs in = measured_inputs();
  in.gpu_name = "CPU";  // a CPU rank runs each collective in its step: every step is compared
  in.fsdp_collectives_per_step = {{27, 12}, {27, 12}, {27, 12}};
  // As the job issued them: no warning, whatever the step time.
  auto c = sim::check_replay(in, replay_of(80'000'000, 27, 12), true).collectives;
  CHECK(c.checked);
  CHECK(c.match);
  CHECK(c.warning.empty());
  // Fewer reduce-scatters: the loop is not modelled, said with the numbers, within 10 % or not.
  c = sim::check_replay(in, replay_of(99'000'000, 27, 5), true).collectives;
  CHECK_FALSE(c.match);
  CHECK(c.warning.find("27 all-gathers and 5 reduce-scatters a step, the profile's steps 27 and 12") != std::string::npos);
  CHECK(c.warning.find("does not model this loop") != std::string::npos);
  // With an optimizer step between two backward passes: the GAN is named.
  in.steps_with_optimizer_between_backwards = 3;
  c = sim::check_replay(in, replay_of(99'000'000, 29, 5), true).collectives;
  CHECK_FALSE(c.match);
  CHECK(c.warning.find("a GAN") != std::string::npos);
  // Steps that differ among themselves (a plan changed mid-run): no replay matches them all.
  in = measured_inputs();
  in.gpu_name = "CPU";
  in.fsdp_collectives_per_step = {{9, 5}, {6, 5}, {9, 5}};
  c = sim::check_replay(in, replay_of(99'000'000, 9, 5), true).collectives;
  CHECK_FALSE(c.match);
  CHECK(c.fewest.all_gathers == 6);
  CHECK(c.most.all_gathers == 9);
  CHECK(c.warning.find("differ among themselves (6 to 9 all-gathers, 5 to 5 reduce-scatters") != std::string::npos);
  // On a GPU a collective may run in the step after the host's: the steps' mean is compared.
  in.gpu_name = "NVIDIA H100 80GB HBM3";
  in.fsdp_collectives_per_step = {{10, 5}, {9, 5}, {8, 5}};
  c = sim::check_replay(in, replay_of(99'000'000, 9, 5), true).collectives;
  CHECK(c.match);
  CHECK(c.mean == sim::StepCollectives{9, 5});
  c = sim::check_replay(in, replay_of(99'000'000, 9, 4), true).collectives;
  CHECK_FALSE(c.match);
  CHECK(c.warning.find("9 all-gathers and 4 reduce-scatters a step, the profile's steps 9 and 5 on average") != std::string::npos);
  // Nothing to compare with: a window, a synthetic profile, no counts.
  in.window_only = true;
  CHECK_FALSE(sim::check_replay(in, replay_of(99'000'000, 1, 1), true).collectives.checked);
  in.window_only = false;
  in.origin = OriginKind::Synthetic;
  CHECK_FALSE(sim::check_replay(in, replay_of(99'000'000, 1, 1), true).collectives.checked);
  in = measured_inputs();
  CHECK_FALSE(sim::check_replay(in, replay_of(99'000'000, 1, 1), true).collectives.checked);
  CHECK(sim::check_replay(in, replay_of(99'000'000, 1, 1), true).collectives.match);
}

TEST_CASE("plan --checkpoint / --offload-if-needed write the knobs; simulate replays them; knob options", "[sim][cli][planner][checkpoint]") {
  ss::test::TempDir dir;
  sim::ClusterModel c;
  c.world_size = 8;
  const sim::SimModel m = sim::build_sim_model(sim::load_model_file(model("llama3-8b.json")));
  const std::int64_t base_peak = sim::simulate(sim::compile_step(m, sim::FsdpPlan{}, c)).peak_bytes;
  // 10 GiB under the base peak: only checkpointing gets there.
  const std::string budget = std::to_string(base_peak - (10LL << 30));
  const std::string out = dir.file("ck.json");
  Run r = run("plan", {"--model", model("llama3-8b.json"), "--world", "8", "--budget", budget, "--strategy", "cost", "--checkpoint",
                       "-o", out, "--format", "json"});
  REQUIRE(r.code == 0);
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(r.out);
  CHECK(number(doc, "recomputes") > 0);
  const sim::FsdpPlan p = sim::load_plan_file(out);
  CHECK(!p.checkpoint.empty());
  CHECK(p.checkpoint.begin()->second == "full");
  Run s = run("simulate", {"--model", model("llama3-8b.json"), "--world", "8", "--plan", out, "--format", "json"});
  REQUIRE(s.code == 0);
  simdjson::dom::parser p2;
  CHECK(number(p2.parse(s.out), "step_time_ms") == Approx(number(doc, "step_time_ms")).epsilon(1e-9));
  // Greedy does not plan checkpointing: a usage error.
  CHECK(run("plan", {"--model", model("llama3-8b.json"), "--budget", budget, "--checkpoint"}).code != 0);
  // Far below anything checkpointing reaches: offload is chosen and written.
  const std::string tiny = std::to_string(base_peak / 3);
  Run o = run("plan", {"--model", model("llama3-8b.json"), "--world", "8", "--budget", tiny, "--strategy", "cost", "--checkpoint",
                       "--offload-if-needed", "-o", dir.file("off.json")});
  CHECK(o.out.find("chosen: nothing else fits") != std::string::npos);
  CHECK(sim::load_plan_file(dir.file("off.json")).offload != "none");
  // Knob options on simulate; a selective pattern that matches nothing is a clear error.
  Run k = run("simulate", {"--model", model("llama3-8b.json"), "--world", "8", "--offload", "cpu", "--pipelined-optimizer",
                           "--offload-prefetch", "2", "--checkpoint-all", "attention", "--format", "json"});
  REQUIRE(k.code == 0);
  simdjson::dom::parser p3;
  simdjson::dom::element kd = p3.parse(k.out);
  CHECK(text(kd, "offload") == "cpu");
  CHECK(number(kd, "cpu_optimizer_ms") > 0);
  CHECK(number(kd, "recomputes") == 32);
  Run bad = run("simulate", {"--model", model("llama3-8b.json"), "--checkpoint-all", "mlp"});
  CHECK(bad.code != 0);
  CHECK(bad.err.find("'mlp' matches no sub-module") != std::string::npos);
  // The simulated profile gets the offload streams only when the plan offloads.
  REQUIRE(run("simulate", {"--model", model("llama3-8b.json"), "--world", "8", "--offload", "optimizer", "-o", dir.file("o.ssdb")}).code == 0);
  REQUIRE(run("simulate", {"--model", model("llama3-8b.json"), "--world", "8", "-o", dir.file("n.ssdb")}).code == 0);
  auto streams = [&](const std::string& f) {
    sql::Db db(f, SQLITE_OPEN_READONLY);
    sql::Stmt st(db.get(), "SELECT count(*) FROM streams");
    REQUIRE(st.step());
    return sqlite3_column_int64(st.get(), 0);
  };
  CHECK(streams(dir.file("o.ssdb")) == streams(dir.file("n.ssdb")) + 3);
  // Recomputes appear as ss:rcp ranges, one per checkpointed block, as the hooks record them.
  REQUIRE(run("simulate", {"--model", model("llama3-8b.json"), "--world", "8", "--checkpoint-all", "full", "-o", dir.file("c.ssdb")}).code == 0);
  sql::Db db(dir.file("c.ssdb"), SQLITE_OPEN_READONLY);
  sql::Stmt st(db.get(), "SELECT count(*) FROM ranges r JOIN strings s ON s.id = r.name_id WHERE s.value LIKE 'ss:rcp:layers.%'");
  REQUIRE(st.step());
  CHECK(sqlite3_column_int64(st.get(), 0) == 32);
}

// Issue 14: the measured critical path as the planner's evidence. On the real CPU recording the
// candidates are exactly the units whose all-gathers are on the critical path, with the times the
// critical-path analysis reports.
TEST_CASE("plan --evidence critical-path plans from the units the measured step waited for", "[sim][cli]") {
  const std::string real = ss::test::source_dir() + "/resources/samples/cpu-fsdp2-llama-2rank.ssdb";
  Run a = run("analyze", {"critical-path", real, "--format", "json"});
  REQUIRE(a.code == 0);
  simdjson::dom::parser pa;
  simdjson::dom::element ad = pa.parse(a.out);
  std::map<std::string, std::int64_t> on_path;
  for (simdjson::dom::element t : ad["tables"].get_array())
    if (std::string_view(t["name"]) == "all_gathers_on_path")
      for (simdjson::dom::element row : t["rows"].get_array()) {
        const std::string unit(std::string_view(row.at(0)));
        if (unit != "(root)" && unit != "(unattributed)" && int64_t(row.at(1)) > 0) on_path[unit] = int64_t(row.at(1));
      }
  REQUIRE(on_path.size() == 4);  // layers.0-3; the root never is a candidate

  Run r = run("plan", {real, "--budget", "150MiB", "--strategy", "cost", "--evidence", "critical-path", "--format", "json"});
  REQUIRE(r.code == 0);
  simdjson::dom::parser pr;
  simdjson::dom::element doc = pr.parse(r.out);
  std::map<std::string, std::int64_t> evidence;
  for (simdjson::dom::element e : doc["critical_path_evidence"].get_array())
    evidence[std::string(std::string_view(e["unit"]))] = int64_t(e["all_gather_on_path_ns"]);
  CHECK(evidence == on_path);
  for (simdjson::dom::element u : doc["unsharded"].get_array()) CHECK(on_path.count(std::string(std::string_view(u))) == 1);

  // With --modules, only the named units that are also on the path.
  Run one = run("plan", {real, "--budget", "150MiB", "--strategy", "cost", "--evidence", "critical-path", "--modules",
                         "layers.2", "--format", "json"});
  REQUIRE(one.code == 0);
  simdjson::dom::parser p1;
  for (simdjson::dom::element u : p1.parse(one.out)["unsharded"].get_array()) CHECK(std::string_view(u) == "layers.2");

  // The synthetic sample's all-gathers carry no module: nothing is on the path to plan from.
  Run none = run("plan", {sample(), "--budget", "80GiB", "--strategy", "cost", "--evidence", "critical-path"});
  CHECK(none.code == 0);
  CHECK(none.out.find("Nothing planned") != std::string::npos);
  // Evidence needs a measured profile, and a planner to restrict.
  CHECK(run("plan", {"--model", model("llama3-8b.json"), "--world", "8", "--budget", "40GiB", "--strategy", "cost",
                     "--evidence", "critical-path"}).code == 1);
  CHECK(run("plan", {real, "--modules", "layers.2", "--evidence", "critical-path"}).code == 1);
}
