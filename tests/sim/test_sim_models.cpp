// The shipped model descriptions (resources/models/): each loads, its parameter count matches the
// published one (resources/models/README.md gives the sources), expert parallelism issues the
// all-to-alls of its MoE layers, and the Llama 3 405B 3D-parallel configuration of the Llama 3
// paper stays at its documented error (docs/accuracy.md, "Published 3D-parallel configuration").
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <set>

#include "profiler/sim/cluster_model.h"
#include "profiler/sim/fsdp_plan.h"
#include "profiler/sim/model_description.h"
#include "profiler/sim/step_simulator.h"
#include "tests/support/test_paths.h"

using namespace ss::sim;

namespace {

std::string models_dir() { return ss::test::source_dir() + "/resources/models/"; }

// Parameters a token passes through: the experts' units count experts_per_token / num_experts of
// their parameters (every expert has the same size), everything else counts whole.
double active_params(const ModelDescription& d, const SimModel& m) {
  double p = 0;
  for (const auto& u : m.units)
    p += u.expert ? double(u.param_count) * d.experts_per_token / d.num_experts : double(u.param_count);
  return p;
}

SimResult run(const SimModel& m, int world, const Parallelism& par, int micro_batches) {
  FsdpPlan plan;
  plan.parallel = par;
  plan.gradient_accumulation = micro_batches;
  plan.world_size = world;
  return simulate(compile_step(m, plan, ClusterModel()));  // the H100 preset (resources/clusters/h100-nvlink-ib.json)
}

}  // namespace

TEST_CASE("every shipped model description loads and matches its published parameter count", "[sim][models]") {
  struct Published {
    double total, active, rel_tol;  // active 0: a dense model
  };
  // Published totals (README table): Llama 3 model cards / paper; Mixtral: Mistral AI's release
  // ("46.7B total parameters, 12.9B per token"); Qwen1.5-MoE-A2.7B model card ("14.3B in total and
  // 2.7B activated"); Wan 2.1 T2V "14B". Tolerances: the published figure's own rounding (0.5 %
  // for three significant digits; 2 % for "2.7B"; 3 % for "14B").
  const std::map<std::string, Published> published = {
      {"llama3-8b.json", {8.03e9, 0, 0.005}},
      {"llama3-70b.json", {70.6e9, 0, 0.005}},
      {"llama3-405b.json", {405e9, 0, 0.005}},
      {"mixtral-8x7b.json", {46.7e9, 12.9e9, 0.005}},
      {"qwen1.5-moe-a2.7b.json", {14.3e9, 2.7e9, 0.02}},
      {"qwen3-30b-a3b.json", {30.5e9, 3.3e9, 0.02}},
      {"wan2.1-t2v-14b.json", {14e9, 0, 0.03}},
      {"wan2.1-t2v-14b-480p.json", {14e9, 0, 0.03}},
      // The CPU sample trainers' --tiny model: the real modules' own count, exactly (root 32,832
      // + 2 layers x 41,088; resources/models/README.md).
      {"fsdp-sample-tiny.json", {115008, 0, 0}},
  };
  // Every file in the folder is in the table: a new model must come with its published count.
  std::set<std::string> shipped;
  for (const auto& e : std::filesystem::directory_iterator(models_dir()))
    if (e.path().extension() == ".json") shipped.insert(e.path().filename().string());
  std::set<std::string> listed;
  for (const auto& [f, p] : published) listed.insert(f);
  CHECK(shipped == listed);

  for (const auto& [file, pub] : published) {
    INFO(file);
    const ModelDescription d = load_model_file(models_dir() + file);
    const SimModel m = build_sim_model(d);
    CHECK(double(m.total_params()) == Approx(pub.total).epsilon(pub.rel_tol));
    if (pub.active > 0) {
      REQUIRE(d.num_experts > 0);
      CHECK(active_params(d, m) == Approx(pub.active).epsilon(pub.rel_tol));
    } else {
      CHECK(d.num_experts == 0);
    }
  }
}

TEST_CASE("Mixtral shape: the experts are one unit per layer; the counts follow from the config", "[sim][models][moe]") {
  const ModelDescription d = load_model_file(models_dir() + "mixtral-8x7b.json");
  const SimModel m = build_sim_model(d);
  // Root + 32 layer units (attention, norms, router) + 32 expert units.
  REQUIRE(m.units.size() == 65);
  const double h = 4096, f = 14336;
  int experts = 0;
  for (const auto& u : m.units)
    if (u.expert) {
      ++experts;
      CHECK(u.param_count == std::int64_t(8 * 3 * h * f));  // 8 SwiGLU experts
    }
  CHECK(experts == 32);
  // The layer unit: q, o (h x h), k, v (h x 1024), two RMSNorms, the router (h x 8).
  CHECK(m.units[1].param_count == std::int64_t(2 * h * h + 2 * h * 1024 + 2 * h + 8 * h));
  // Total = 46,702,792,704 (the sum of the checkpoint's tensors; the README shows it).
  CHECK(m.total_params() == 46702792704LL);
}

TEST_CASE("expert parallelism: dispatch and combine all-to-all per MoE layer and pass", "[sim][models][moe]") {
  ModelDescription d = load_model_file(models_dir() + "mixtral-8x7b.json");
  const int moe_layers = d.layers / d.moe_layer_interval;
  REQUIRE(moe_layers == 32);
  Parallelism ep8;
  ep8.ep = 8;
  const int micro = 2;
  const std::int64_t tokens = d.seq_len * d.micro_batch;
  const std::int64_t per_op = tokens * d.experts_per_token * d.hidden * d.param_dtype_bytes;  // routed tokens x h, bf16

  // Without checkpointing: dispatch + combine, forward and backward.
  d.activation_checkpointing = "none";
  const SimResult plain = run(build_sim_model(d), 8, ep8, micro);
  CHECK(plain.ep_collectives == 2 * moe_layers * 2 * micro);
  CHECK(plain.ep_bytes == std::int64_t(plain.ep_collectives) * per_op);
  CHECK(plain.model_parallel_ns > 0);

  // The file checkpoints every block: the rerun before each backward dispatches and combines again.
  d.activation_checkpointing = "full";
  const SimResult ckpt = run(build_sim_model(d), 8, ep8, micro);
  CHECK(ckpt.ep_collectives == 2 * moe_layers * 3 * micro);
  // ep = 1: the experts stay with their tokens; no all-to-all.
  CHECK(run(build_sim_model(d), 8, Parallelism{}, micro).ep_collectives == 0);
}

TEST_CASE("Llama 3 405B on 8,192 H100s (TP 8, PP 16, DP 64): prediction stays at its documented error", "[sim][models][published]") {
  // Llama 3 paper (arXiv 2407.21783), Table 4, first row: 8,192 GPUs, TP 8, CP 1, PP 16, DP 64,
  // sequence 8,192, batch size per DP group 32, 16M tokens per batch, 430 TFLOPs/GPU (BF16 MFU
  // 43 %); interleaved schedule with two model chunks per rank as in the paper's Figure 6.
  const ModelDescription d = load_model_file(models_dir() + "llama3-405b.json");
  const SimModel m = build_sim_model(d);
  const int gpus = 8192, dp = 64, per_dp = 32;
  const double tokens = double(dp) * per_dp * double(d.seq_len);  // 16,777,216
  // Model FLOPs per token as MFU counts them (Chowdhery et al., PaLM, appendix B, which the paper
  // cites): 6 N + 12 L h s (attention, no causal halving).
  const double flops_per_token = 6.0 * double(m.total_params()) + 12.0 * d.layers * double(d.hidden) * double(d.seq_len);
  const double published_s = tokens * flops_per_token / (gpus * 430e12);  // 12.56 s
  CHECK(published_s == Approx(12.56).epsilon(0.001));

  Parallelism par;
  par.tp = 8, par.sequence_parallel = true, par.pp = 16, par.pp_schedule = "interleaved", par.pp_virtual = 2;
  const SimResult r = run(m, gpus, par, per_dp);  // micro-batch size 1: 32 micro-batches per DP rank
  const double error = double(r.step_ns) * 1e-9 / published_s - 1;
  // docs/accuracy.md: +14.7 % (predicted 14.41 s). The simulator is slower than the published
  // run: 0.55 of peak for every kernel, exposed TP collectives, the pipeline bubble. A change that moves this by more than 3 points must update the documentation.
  CHECK(error == Approx(0.147).margin(0.03));
  CHECK(r.shown_stage >= 0);
  CHECK(r.stages.size() == 16);
}

TEST_CASE("head_dim: attention wider than hidden (Qwen3), refused for a DiT", "[sim][models]") {
  const ModelDescription d = load_model_file(models_dir() + "qwen3-30b-a3b.json");
  REQUIRE(d.head_dim == 128);
  const SimModel m = build_sim_model(d);
  // q and o: 2048 x (32 x 128); k and v: 2048 x (4 x 128); two RMSNorms; the router 2048 x 128.
  const double h = 2048;
  CHECK(m.units[1].param_count == std::int64_t(2 * h * 4096 + 2 * h * 512 + 2 * h + 128 * h));
  // head_dim equal to hidden / heads is the default: the same model, byte for byte.
  ModelDescription same = load_model_file(models_dir() + "llama3-8b.json");
  const SimModel a = build_sim_model(same);
  same.head_dim = 128;
  const SimModel b = build_sim_model(same);
  REQUIRE(a.segments.size() == b.segments.size());
  for (std::size_t i = 0; i < a.segments.size(); ++i) {
    CHECK(a.segments[i].fwd_ns == b.segments[i].fwd_ns);
    CHECK(a.segments[i].saved_activation_bytes == b.segments[i].saved_activation_bytes);
    CHECK(a.segments[i].parallel.cp_qkv_bytes == b.segments[i].parallel.cp_qkv_bytes);
  }
  CHECK(a.total_params() == b.total_params());
  CHECK_THROWS_WITH(parse_model_json(R"({"kind": "dit", "layers": 1, "hidden_size": 64, "ffn_hidden_size": 128, "num_heads": 4,
                                         "head_dim": 32, "seq_len": 16})", "d.json"),
                    Catch::Contains("d.json: head_dim"));
  // Without head_dim, heads must still divide hidden.
  CHECK_THROWS_WITH(parse_model_json(R"({"layers": 1, "hidden_size": 100, "ffn_hidden_size": 128, "num_heads": 3, "seq_len": 16})", "e.json"),
                    Catch::Contains("e.json: num_heads"));
}

TEST_CASE("pipeline: a unit kept unsharded holds one buffer however many micro-batches are in flight", "[sim][models][pipeline]") {
  // GPipe runs every forward before any backward, so each stage holds m micro-batches at once. The
  // root (kept unsharded from forward to backward, FSDP2's default) is one buffer on the rank: its
  // unsharded bytes at the peak do not grow with m, while the activations do. The shown stage
  // (the highest peak) is the last one: it holds the output head and the logits.
  const SimModel m = build_sim_model(load_model_file(models_dir() + "llama3-8b.json"));
  Parallelism par;
  par.pp = 2, par.pp_schedule = "gpipe";
  const SimResult two = run(m, 16, par, 2), eight = run(m, 16, par, 8);
  REQUIRE(two.shown_stage == eight.shown_stage);
  CHECK(eight.stages[static_cast<std::size_t>(eight.shown_stage)].max_in_flight == 8);
  const auto unsharded = static_cast<std::size_t>(MemCat::UnshardedParam), act = static_cast<std::size_t>(MemCat::Activation);
  CHECK(eight.peak_by_category[unsharded] == two.peak_by_category[unsharded]);
  CHECK(eight.peak_by_category[act] > 3 * two.peak_by_category[act]);
  // At the peak the stage holds its part of the root (the output head, 128256 x 4096 bf16, the
  // embedding's size) and at most the units being gathered, never one root per micro-batch.
  const std::int64_t head = 128256LL * 4096 * 2;
  CHECK(eight.peak_by_category[unsharded] >= head);
  CHECK(eight.peak_by_category[unsharded] < 2 * head);
}
