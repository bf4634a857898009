// `shardscope simulate --parallel ...` driven in-process: the TP collective count the model's shape
// implies, the pipeline's stages, and bad --parallel specs refused with a clear message.
#include <catch2/catch.hpp>

#include <simdjson.h>

#include <iostream>
#include <sstream>

#include "app/cli/command.h"
#include "tests/sim/cli_capture.h"
#include "profiler/sim/model_description.h"
#include "profiler/synthetic/synthetic_profile.h"
#include "tests/support/test_paths.h"

using namespace ss;

namespace {

using Run = ss::test::CliRun;
Run simulate(const std::vector<std::string>& args) { return ss::test::run_cli("simulate", args); }

std::string llama8b() { return ss::test::source_dir() + "/resources/models/llama3-8b.json"; }

std::int64_t integer(simdjson::dom::element doc, const char* key) {
  std::int64_t v = 0;
  REQUIRE_FALSE(doc[key].get_int64().get(v));
  return v;
}

}  // namespace

TEST_CASE("simulate --parallel tp=2: TP collectives as the model's shape implies", "[sim][cli][parallel]") {
  const Run r = simulate({"--model", llama8b(), "--world", "16", "--parallel", "tp=2", "--format", "json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  simdjson::dom::parser parser;
  const simdjson::dom::element doc = parser.parse(r.out);
  simdjson::dom::element par;
  REQUIRE_FALSE(doc["parallelism"].get(par));
  CHECK(integer(par, "tp") == 2);
  CHECK(integer(par, "dp") == 8);  // 16 / tp
  // Llama-3-8B: 32 layers x 2 column->row pairs (attention, MLP) x 2 passes + the embedding's
  // forward all-reduce + the output head's backward all-reduce, one micro-batch; and loss
  // parallelism's three fp32-per-token all-reduces (max, sum of exponentials, target logit).
  const sim::ModelDescription d = sim::load_model_file(llama8b());
  REQUIRE(d.layers == 32);
  const std::int64_t expected = d.layers * 2 * 2 + 1 + 1;
  CHECK(integer(doc, "tp_collectives") == expected + 3);
  // Each carries the micro-batch's tokens x hidden in bf16: 8192 x 4096 x 2 bytes; the loss
  // statistics 8192 x 4 bytes each.
  CHECK(integer(doc, "tp_bytes") == expected * d.seq_len * d.hidden * d.param_dtype_bytes + 3 * d.seq_len * 4);
  CHECK(integer(doc, "cp_collectives") == 0);
  CHECK(integer(doc, "ep_collectives") == 0);

  // With sequence parallelism each pair is an all-gather + reduce-scatter: twice the count.
  const Run sp = simulate({"--model", llama8b(), "--world", "16", "--parallel", "tp=2,sp", "--format", "json"});
  REQUIRE(sp.code == 0);
  const simdjson::dom::element sdoc = parser.parse(sp.out);
  // ... and the embedding's and head's all-reduces become RS + AG pairs (4), the norms' weight
  // gradients are all-reduced (2 per layer + the final norm), plus the 3 loss statistics.
  CHECK(integer(sdoc, "tp_collectives") == d.layers * 4 * 2 + 4 + (2 * d.layers + 1) + 3);
  // Without --parallel the report has no parallelism fields (today's output).
  const Run plain = simulate({"--model", llama8b(), "--world", "16", "--format", "json"});
  REQUIRE(plain.code == 0);
  CHECK(plain.out.find("tp_collectives") == std::string::npos);
  CHECK(plain.out.find("\"stages\"") == std::string::npos);
}

TEST_CASE("simulate --parallel pp=2 --micro-batches 4 reports two stages", "[sim][cli][parallel]") {
  const Run r = simulate({"--model", llama8b(), "--world", "16", "--parallel", "pp=2", "--micro-batches", "4", "--format", "json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  simdjson::dom::parser parser;
  const simdjson::dom::element doc = parser.parse(r.out);
  simdjson::dom::array stages;
  REQUIRE_FALSE(doc["stages"].get_array().get(stages));
  REQUIRE(stages.size() == 2);
  // 1F1B: the first stage holds pp = 2 micro-batches at once, the last one.
  std::vector<std::int64_t> in_flight;
  for (simdjson::dom::element st : stages) in_flight.push_back(integer(st, "max_in_flight"));
  CHECK(in_flight == std::vector<std::int64_t>{2, 1});
  simdjson::dom::element par;
  REQUIRE_FALSE(doc["parallelism"].get(par));
  CHECK(integer(par, "pp") == 2);
  CHECK(integer(doc, "p2p_sends") == 4);  // the shown stage's 4 sends (activations or gradients)
  // The text report names the pipeline too.
  const Run text = simulate({"--model", llama8b(), "--world", "16", "--parallel", "pp=2", "--micro-batches", "4"});
  REQUIRE(text.code == 0);
  CHECK(text.out.find("Pipeline     2 stages") != std::string::npos);
}

TEST_CASE("simulate refuses bad --parallel specs with a clear message", "[sim][cli][parallel][errors]") {
  struct Case {
    std::vector<std::string> extra;
    int code;
    const char* says;
  };
  const std::vector<Case> cases = {
      {{"--parallel", "tp=0"}, cli::kExitUsage, "--parallel: tp needs a degree >= 1, not '0'"},
      {{"--parallel", "tp=two"}, cli::kExitUsage, "--parallel: tp needs a degree >= 1, not 'two'"},
      {{"--parallel", "pp="}, cli::kExitUsage, "--parallel: pp needs a degree >= 1"},
      {{"--parallel", "tp=2,zp=2"}, cli::kExitUsage, "--parallel: unknown item 'zp=2'"},
      {{"--parallel", "tp=3"}, cli::kExitBadInput, "tp x cp x pp = 3 does not divide the world size 16"},
      {{"--parallel", "pp=2,v=2", "--micro-batches", "3"}, cli::kExitBadInput, "to be a multiple of pp 2"},
      {{"--parallel", "pp=2", "--micro-batches", "0"}, cli::kExitUsage, "--micro-batches must be between 1 and 4096"},
      {{"--parallel", "pp=16,v=4", "--micro-batches", "16"}, cli::kExitBadInput, "pp x pp_virtual = 64 stages"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args{"--model", llama8b(), "--world", "16", "--format", "json"};
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    const Run r = simulate(args);
    INFO(c.extra[1] << " -> " << r.err);
    CHECK(r.code == c.code);
    CHECK(r.err.find(c.says) != std::string::npos);
    CHECK(r.out.empty());
  }

  // Tensor parallelism on a profile: refused, a profile has no layer shapes.
  ss::test::TempDir dir;
  SyntheticSpec spec;
  spec.layers = 2;
  write_synthetic_profile(dir.file("in.ssdb"), spec);
  const Run r = simulate({dir.file("in.ssdb"), "--no-fit", "--parallel", "tp=2", "--world", "4"});
  CHECK(r.code == cli::kExitBadInput);
  CHECK(r.err.find("need a model description") != std::string::npos);
}
