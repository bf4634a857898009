// The what-if search (search_configs, `plan --search`): every listed configuration is exactly what
// simulating its plan gives, fits the budget and is ranked; the pruning bounds are bounds (never
// above a simulated peak or step) and do not change the list; a budget nothing fits says why; the
// CLI's JSON plans re-simulate to the same step through `simulate --plan`.
#include <catch2/catch.hpp>

#include <simdjson.h>

#include <iostream>
#include <random>
#include <sstream>

#include "app/cli/command.h"
#include "tests/sim/cli_capture.h"
#include "profiler/sim/model_description.h"
#include "profiler/sim/search.h"
#include "profiler/sim/sim_inputs.h"
#include "tests/sim/sim_fixtures.h"
#include "tests/support/test_paths.h"

using namespace ss;
using namespace ss::sim;

namespace {

// A small decoder: 8 blocks, big enough activations that checkpointing and TP matter at 8k tokens.
ModelDescription small_decoder() {
  ModelDescription d;
  d.name = "small";
  d.layers = 8;
  d.hidden = 2048;
  d.ffn_hidden = 8192;
  d.heads = 16;
  d.kv_heads = 4;
  d.vocab = 32000;
  d.seq_len = 8192;
  d.micro_batch = 1;
  return d;
}

SearchRequest request(std::int64_t budget, int top = 10) {
  SearchRequest r;
  r.budget_bytes = budget;
  r.top = top;
  return r;
}

ClusterModel cluster(int world) {
  ClusterModel c;
  c.world_size = world;
  return c;
}

double per_seq(const SearchConfig& c) { return double(c.result.step_ns) / double(c.sequences); }

}  // namespace

TEST_CASE("search: every listed configuration is its plan's simulation, fits, and is ranked", "[sim][search]") {
  const ModelDescription d = small_decoder();
  const SimModel m = build_sim_model(d);
  const ClusterModel c = cluster(16);
  const std::int64_t budget = 12LL << 30;
  for (int g : {0, 64}) {
    SearchRequest req = request(budget, 12);
    req.global_batch = g;
    const SearchResult res = search_configs(m, search_shape(d, m), FsdpPlan{}, c, req);
    REQUIRE_FALSE(res.configs.empty());
    CHECK(res.reason.empty());
    CHECK(res.simulated > 0);
    CHECK(res.enumerated >= res.simulated + res.pruned_static + res.pruned_bound);
    CHECK(res.unplanned_contenders == 0);  // uncapped, every configuration that could make the list was planned
    for (std::size_t i = 0; i < res.configs.size(); ++i) {
      const SearchConfig& cfg = res.configs[i];
      const SimResult again = simulate(compile_step(m, cfg.plan, c));
      CHECK(again.step_ns == cfg.result.step_ns);
      CHECK(again.peak_bytes == cfg.result.peak_bytes);
      CHECK(cfg.result.peak_bytes <= budget);
      if (i > 0) CHECK(per_seq(res.configs[i - 1]) <= per_seq(cfg));
      const Parallelism& p = cfg.plan.parallel;
      CHECK(cfg.dp * p.tp * p.cp * p.pp == 16);
      CHECK(cfg.sequences == std::int64_t(cfg.dp) * cfg.plan.gradient_accumulation);
      if (g > 0) CHECK(cfg.sequences == g);
      if (g == 0 && p.pp == 1) CHECK(cfg.plan.gradient_accumulation == 1);
      CHECK(p.sequence_parallel == (p.tp > 1));
      if (p.pp > 1) CHECK(cfg.plan.offload == "none");
      CHECK(cfg.plan.checkpoint.at("*") == cfg.checkpoint);
      CHECK(cfg.tokens_per_s == Approx(double(cfg.sequences) * d.seq_len / (double(cfg.result.step_ns) / 1e9)));
      CHECK(cfg.mfu > 0.0);
      CHECK(cfg.mfu < 1.0);
    }
  }
}

TEST_CASE("search: the 1-D FSDP configuration is a candidate, and the bounds do not change the list", "[sim][search]") {
  const ModelDescription d = small_decoder();
  const SimModel m = build_sim_model(d);
  const ClusterModel c = cluster(16);
  // A budget everything fits, and room for every configuration in the list.
  SearchRequest all = request(1LL << 40, 10000);
  all.unshard_top_k = 0;
  const SearchResult every = search_configs(m, search_shape(d, m), FsdpPlan{}, c, all);
  bool one_d = false;
  for (const auto& cfg : every.configs) one_d = one_d || (cfg.plan.parallel.is_1d() && cfg.checkpoint == "none" && cfg.plan.offload == "none");
  CHECK(one_d);
  CHECK(every.pruned_bound == 0);  // the list is never full, so nothing is out of it
  // Every simulated configuration is listed (nothing fits less, nothing is planned).
  CHECK(static_cast<int>(every.configs.size()) == every.simulated);

  for (int top : {1, 5}) {
    SearchRequest pruned = request(10LL << 30, top), exhaustive = pruned, threaded = pruned;
    exhaustive.prune = false;
    threaded.threads = 3;  // any order of work gives the same list
    const SearchResult a = search_configs(m, search_shape(d, m), FsdpPlan{}, c, pruned);
    const SearchResult b = search_configs(m, search_shape(d, m), FsdpPlan{}, c, exhaustive);
    const SearchResult t = search_configs(m, search_shape(d, m), FsdpPlan{}, c, threaded);
    CHECK(a.pruned_bound > 0);
    CHECK(a.simulated < b.simulated);
    REQUIRE(a.configs.size() == b.configs.size());
    REQUIRE(a.configs.size() == t.configs.size());
    for (std::size_t i = 0; i < a.configs.size(); ++i) {
      CHECK(a.configs[i].plan == b.configs[i].plan);
      CHECK(a.configs[i].result.step_ns == b.configs[i].result.step_ns);
      CHECK(a.configs[i].plan == t.configs[i].plan);
      CHECK(a.configs[i].result.step_ns == t.configs[i].result.step_ns);
    }
  }
}

TEST_CASE("search: static memory and the step bound never exceed a simulation", "[sim][search]") {
  const ModelDescription d = small_decoder();
  const SimModel m = build_sim_model(d);
  std::mt19937_64 rng(15);
  int checked = 0;
  for (int world : {8, 16, 32}) {
    const ClusterModel c = cluster(world);
    for (int tp : {1, 2, 4})
      for (int cp : {1, 2})
        for (int pp : {1, 2, 4})
          for (const char* ck : {"none", "attention", "full"}) {
            if (world % (tp * cp * pp) != 0) continue;
            FsdpPlan p;
            p.parallel.tp = tp, p.parallel.sequence_parallel = tp > 1 && (rng() & 1), p.parallel.cp = cp, p.parallel.pp = pp;
            p.parallel.cp_kind = (rng() & 1) ? "ring" : "ulysses";
            p.gradient_accumulation = pp * (1 + static_cast<int>(rng() % 3));
            p.checkpoint["*"] = ck;
            if (pp == 1) p.offload = std::vector<std::string>{"none", "optimizer", "cpu"}[rng() % 3];
            if (rng() % 4 == 0) p.unsharded = {"layers.6", "layers.7"};
            const CompiledStep s = compile_step(m, p, c);
            const SimResult r = simulate(s);
            CHECK(static_memory_bytes(s) <= r.peak_bytes);
            CHECK(step_lower_bound_ns(s) <= r.step_ns);
            if (pp > 1) {
              // The planning bound's premise: unsharding leaves a stage's one-micro-batch forward as it is.
              FsdpPlan u = p;
              for (int l = 0; l < d.layers; ++l) u.unsharded.push_back("layers." + std::to_string(l));
              const SimResult ru = simulate(compile_step(m, u, c));
              REQUIRE(ru.stages.size() == r.stages.size());
              for (std::size_t j = 0; j < r.stages.size(); ++j) CHECK(ru.stages[j].fwd_ns == r.stages[j].fwd_ns);
            }
            ++checked;
          }
  }
  CHECK(checked > 100);
  // Compute-bound (one node, one micro-batch, 1-D): the bound is the step but for the exposed
  // all-gathers, copies and the optimizer.
  const CompiledStep s = compile_step(m, FsdpPlan{}, cluster(8));
  const SimResult r = simulate(s);
  CHECK(step_lower_bound_ns(s) <= r.step_ns - r.exposed_comm_ns);
  CHECK(double(step_lower_bound_ns(s)) > 0.9 * double(r.step_ns));
}

TEST_CASE("search: a budget nothing fits gives an empty list and the reason", "[sim][search]") {
  const ModelDescription d = small_decoder();
  const SimModel m = build_sim_model(d);
  // 1 GiB: the model's constant 1 GiB ("other") alone fills it.
  const SearchResult res = search_configs(m, search_shape(d, m), FsdpPlan{}, cluster(16), request(1LL << 30));
  CHECK(res.configs.empty());
  CHECK(res.pruned_static > 0);
  CHECK(res.reason.find("no configuration fits the budget") != std::string::npos);
  CHECK(res.reason.find("static memory") == std::string::npos);  // says it in words: parameters, gradients, optimizer states
  CHECK(res.reason.find("optimizer states") != std::string::npos);
}

TEST_CASE("search: a profile (no layer shapes) searches dp, pp, checkpointing, offload and micro-batches", "[sim][search]") {
  SimModel m = sim::test::chain_model(8, 50'000'000, 2'000'000, 4'000'000, 4LL << 30);
  m.other_memory_bytes = 1LL << 30;
  for (auto& sg : m.segments) sg.input_bytes = 64 << 20;
  SearchShape none;  // a profile: no shape
  SearchRequest req = request(40LL << 30, 200);
  const SearchResult res = search_configs(m, none, FsdpPlan{}, cluster(16), req);
  REQUIRE_FALSE(res.configs.empty());
  bool piped = false;
  for (const auto& cfg : res.configs) {
    CHECK(cfg.plan.parallel.tp == 1);
    CHECK(cfg.plan.parallel.cp == 1);
    CHECK(cfg.checkpoint != "attention");  // no sub-modules to select
    CHECK(cfg.tokens_per_s == 0.0);        // no sequence length
    CHECK(cfg.sequences_per_s > 0.0);
    piped = piped || cfg.plan.parallel.pp > 1;
  }
  CHECK(piped);
  bool said = false;
  for (const auto& n : res.notes) said = said || n.find("need a model description") != std::string::npos;
  CHECK(said);
}

TEST_CASE("search: a mixture of experts gets expert parallelism", "[sim][search]") {
  ModelDescription d = small_decoder();
  d.num_experts = 8, d.experts_per_token = 2, d.moe_ffn_hidden = 2048;
  const SimModel m = build_sim_model(d);
  SearchRequest req = request(1LL << 40, 10000);
  req.unshard_top_k = 0;
  const SearchResult res = search_configs(m, search_shape(d, m), FsdpPlan{}, cluster(16), req);
  bool ep = false;
  for (const auto& cfg : res.configs) {
    const Parallelism& p = cfg.plan.parallel;
    CHECK(d.num_experts % p.ep == 0);
    CHECK((cfg.dp * p.cp) % p.ep == 0);
    ep = ep || p.ep > 1;
  }
  CHECK(ep);
}

TEST_CASE("a plan that sets \"*\" checkpointing overrides a description's own", "[sim][search]") {
  // llama3-70b.json trains with full checkpointing; `plan --search` writes {"*": "none"} plans.
  ss::test::TempDir dir;
  ss::test::write_file(dir.file("p.json"), R"({"activation_checkpointing": {"*": "none"}, "world_size": 512})");
  SimInputRequest req;
  req.model_path = ss::test::source_dir() + "/resources/models/llama3-70b.json";
  req.plan_path = dir.file("p.json");
  const SimInputs none = load_sim_inputs(req);
  CHECK(simulate(compile_step(none.model, none.plan, none.cluster)).recomputes == 0);
  req.plan_path.clear();
  const SimInputs as_described = load_sim_inputs(req);
  // The description's own checkpointing is a plan knob ("*"), not baked into the model.
  REQUIRE(as_described.plan.checkpoint.count("*") == 1);
  CHECK(as_described.plan.checkpoint.at("*") == "full");
  FsdpPlan p = as_described.plan;
  p.world_size = 512;
  const SimResult r = simulate(compile_step(as_described.model, p, as_described.cluster));
  CHECK(r.recomputes > 0);
  CHECK(r.peak_bytes < simulate(compile_step(none.model, none.plan, none.cluster)).peak_bytes);
  // A plan that names one layer only: that layer as the plan says, the others as the description.
  ss::test::write_file(dir.file("one.json"), R"({"activation_checkpointing": {"layers.3": "none"}, "world_size": 512})");
  req.plan_path = dir.file("one.json");
  const SimInputs one = load_sim_inputs(req);
  CHECK(one.plan.checkpoint.at("*") == "full");
  CHECK(one.plan.checkpoint.at("layers.3") == "none");
  const SimResult r1 = simulate(compile_step(one.model, one.plan, one.cluster));
  CHECK(r1.recomputes == r.recomputes - 1);
}

namespace {

using Run = ss::test::CliRun;
Run run(const std::string& name, const std::vector<std::string>& args) { return ss::test::run_cli(name, args); }

std::string model(const char* f) { return ss::test::source_dir() + "/resources/models/" + f; }

}  // namespace

TEST_CASE("plan --search --json: plans that simulate --plan re-simulates to the same step", "[sim][search][cli]") {
  ss::test::TempDir dir;
  const Run r = run("plan", {"--model", model("llama3-8b.json"), "--world", "64", "--search", "--global-batch", "128", "--top", "3", "--json"});
  REQUIRE(r.code == 0);
  simdjson::dom::parser parser;
  simdjson::dom::array arr;
  REQUIRE_FALSE(parser.parse(r.out).get_array().get(arr));
  REQUIRE(arr.size() == 3);
  double prev = 0;
  for (simdjson::dom::element c : arr) {
    double step = 0;
    std::int64_t seqs = 0, peak = 0;
    REQUIRE_FALSE(c["step_time_ms"].get_double().get(step));
    REQUIRE_FALSE(c["sequences_per_step"].get_int64().get(seqs));
    REQUIRE_FALSE(c["peak_memory_bytes"].get_int64().get(peak));
    CHECK(seqs == 128);
    CHECK(step >= prev);  // same sequences per step: ranked by step time
    CHECK(peak <= 80LL << 30);  // the H100's memory, the default budget
    prev = step;
    simdjson::dom::element b;
    CHECK_FALSE(c["breakdown"]["pipeline_bubble_ms"].get(b));
  }
  // The first configuration's plan, given back to simulate.
  simdjson::dom::element plan;
  REQUIRE_FALSE(arr.at(0)["plan"].get(plan));
  ss::test::write_file(dir.file("best.json"), simdjson::to_string(plan));
  double first = 0;
  REQUIRE_FALSE(arr.at(0)["step_time_ms"].get_double().get(first));
  const Run s = run("simulate", {"--model", model("llama3-8b.json"), "--world", "64", "--plan", dir.file("best.json"), "--format", "json"});
  REQUIRE(s.code == 0);
  simdjson::dom::parser p2;
  double again = 0;
  REQUIRE_FALSE(p2.parse(s.out)["step_time_ms"].get_double().get(again));
  CHECK(again == first);
  CHECK(r.err.find("search: ") != std::string::npos);  // the counts go to stderr with --json
}

TEST_CASE("plan --search: the table, -o, and clear errors", "[sim][search][cli]") {
  ss::test::TempDir dir;
  const Run t = run("plan", {"--model", model("llama3-8b.json"), "--world", "16", "--search", "--budget", "60GiB", "--top", "4", "-o",
                             dir.file("best.json")});
  REQUIRE(t.code == 0);
  CHECK(t.out.find("rank") != std::string::npos);
  CHECK(t.out.find("tokens/s") != std::string::npos);
  CHECK(t.out.find("Budget       60 GiB per rank\n") != std::string::npos);
  const Run s = run("simulate", {"--model", model("llama3-8b.json"), "--world", "16", "--plan", dir.file("best.json")});
  CHECK(s.code == 0);

  const Run none = run("plan", {"--model", model("llama3-8b.json"), "--world", "16", "--search", "--budget", "1GiB"});
  CHECK(none.code == 2);
  CHECK(none.out.find("Nothing fits: no configuration fits the budget") != std::string::npos);

  const Run fixed = run("plan", {"--model", model("llama3-8b.json"), "--search", "--parallel", "tp=2"});
  CHECK(fixed.code == 1);
  CHECK(fixed.err.find("drop --parallel") != std::string::npos);
  const Run stray = run("plan", {"--model", model("llama3-8b.json"), "--budget", "60GiB", "--global-batch", "8"});
  CHECK(stray.code == 1);
  CHECK(stray.err.find("--global-batch is an option of --search") != std::string::npos);
  const Run cpu = run("plan", {ss::test::source_dir() + "/resources/samples/cpu-fsdp2-llama-2rank.ssdb", "--search"});
  CHECK(cpu.code == 1);
  CHECK(cpu.err.find("give --budget") != std::string::npos);
  const Run profile = run("plan", {ss::test::source_dir() + "/resources/samples/synthetic-fsdp-4rank.ssdb", "--search", "--world", "16"});
  CHECK(profile.code == 0);
  CHECK(profile.out.find("a profile: dp, pp, checkpointing, offload and micro-batches only") != std::string::npos);
}
