// JSON inputs (plans, clusters, model descriptions), the collective cost formula and --fit.
#include <catch2/catch.hpp>

#include <cmath>

#include "profiler/sim/cluster_model.h"
#include "profiler/sim/device_table.h"
#include "profiler/sim/fsdp_plan.h"
#include "profiler/sim/model_description.h"
#include "profiler/sim/sim_inputs.h"
#include "storage/cpu_device.h"
#include "storage/errors.h"
#include "tests/support/test_paths.h"

using namespace ss;
using namespace ss::sim;

TEST_CASE("collective cost: NCCL ring shape, hierarchical levels", "[sim][cluster]") {
  ClusterModel c;  // H100 defaults
  // 8 ranks in one node, 1 GiB all-gather: α = 8.4 + 7·3.4 = 32.2 us; 2^30·7/8 / 350 B/ns = 2,684,354.56 ns.
  CHECK(c.collective_ns(Coll::AllGather, 1LL << 30, 8) == std::llround(32200 + 1073741824.0 * 7 / 8 / 350));
  // All-reduce: 14 ring steps, factor 2·7/8, 476 GB/s.
  CHECK(c.collective_ns(Coll::AllReduce, 1LL << 30, 8) == std::llround((8.4 + 14 * 3.4) * 1000 + 1073741824.0 * 2 * 7 / 8 / 476));
  // 16 ranks on 2 nodes, flat ring: 15 steps of which 1 crosses nodes; busBW min(350, 200).
  CHECK(c.collective_ns(Coll::AllGather, 1LL << 30, 16) ==
        std::llround((8.4 + 14 * 3.4 + 14.0) * 1000 + 1073741824.0 * 15 / 16 / 200));
  c.hierarchical = true;
  // Rails: S/8 over 2 nodes at 47 GB/s with α 8.4 + 1·14 us; then S over 8 GPUs on NVLink.
  CHECK(c.collective_ns(Coll::AllGather, 1LL << 30, 16) ==
        std::llround((8.4 + 14.0) * 1000 + 1073741824.0 / 8 / 2 / 47 + 32200 + 1073741824.0 * 7 / 8 / 350));
  CHECK(c.collective_ns(Coll::AllGather, 1LL << 30, 1) == 0);
  // Latency grows linearly with ranks: at 8192 ranks α alone exceeds 1,024·14 us.
  c.hierarchical = false;
  CHECK(c.collective_ns(Coll::AllGather, 1, 8192) > 1024 * 14000);
}

TEST_CASE("fit recovers latency and bandwidth from measured collectives", "[sim][cluster][fit]") {
  ClusterModel truth;
  truth.coll[0].intra = {20, 5, 180};  // α(8) = 20 + 7·5 = 55 us, 180 GB/s
  std::vector<CollSample> samples;
  for (std::int64_t mb : {1, 4, 16, 64, 256})
    samples.push_back({Coll::AllGather, mb << 20, 8, truth.collective_ns(Coll::AllGather, mb << 20, 8)});
  ClusterModel fitted;  // starts from the H100 defaults
  FitReport rep = fit_cluster(fitted, samples);
  CHECK(rep.samples[0] == 5);
  CHECK(rep.busbw_GBps[0] == Approx(180).epsilon(0.001));
  CHECK(rep.alpha_us[0] == Approx(55).epsilon(0.01));
  CHECK(rep.rms_error_us[0] < 0.01);
  for (const auto& s : samples) CHECK(std::abs(fitted.collective_ns(Coll::AllGather, s.bytes, 8) - s.duration) <= 2);
  CHECK(rep.samples[1] == 0);  // no reduce-scatter samples: left as it was
  CHECK(fitted.coll[1].intra.busbw_GBps == 360);
}

TEST_CASE("fit with one message size: bandwidth-bound samples set the bandwidth, latency-bound ones the latency", "[sim][cluster][fit]") {
  // Equal FSDP layers: every all-gather the same 416 MiB. The H100 preset's latency at 4 ranks is
  // kept and the bandwidth set so that the model gives the samples' mean duration.
  ClusterModel preset;
  const std::int64_t bytes = 416LL << 20;
  std::vector<CollSample> samples;
  for (TimeNs d : {380'000, 400'000, 420'000}) samples.push_back({Coll::AllGather, bytes, 4, d});
  ClusterModel fitted = preset;
  const FitReport rep = fit_cluster(fitted, samples);
  const double alpha_ns = double(preset.collective_ns(Coll::AllGather, 1, 4));  // ≈ the latency (1 byte)
  // 416 MiB · 3/4 on the bus in (400 us − α): busBW = 327,155,712 / (400,000 − α) bytes per ns.
  CHECK(rep.busbw_GBps[0] == Approx(327155712.0 / (400000.0 - alpha_ns)).epsilon(1e-3));
  CHECK(std::abs(double(fitted.collective_ns(Coll::AllGather, bytes, 4)) - 400000.0) < 50.0);
  CHECK(rep.rms_error_us[0] == Approx(std::sqrt((20.0 * 20.0 * 2) / 3)).epsilon(0.01));
  // Tiny messages near the latency: the bandwidth stays, the latency is fitted.
  std::vector<CollSample> small{{Coll::ReduceScatter, 4096, 4, 30'000}, {Coll::ReduceScatter, 4096, 4, 30'000}};
  ClusterModel fitted_small = preset;
  const FitReport rs = fit_cluster(fitted_small, small);
  CHECK(fitted_small.coll[1].intra.busbw_GBps == preset.coll[1].intra.busbw_GBps);
  CHECK(std::abs(double(fitted_small.collective_ns(Coll::ReduceScatter, 4096, 4)) - 30000.0) < 50.0);
  CHECK(rs.samples[1] == 2);
  // Tiny messages far over the latency (a CPU loop's clip_grad_norm_ and loss all-reduces, 112 B
  // and 4 B in about a millisecond): still latency, not a bandwidth of 1e-5 GB/s that a shard's
  // all-reduce would take seconds at.
  std::vector<CollSample> loop{{Coll::AllReduce, 112, 2, 1'200'000}, {Coll::AllReduce, 4, 2, 800'000},
                               {Coll::AllReduce, 112, 2, 1'000'000}, {Coll::AllReduce, 4, 2, 1'000'000}};
  ClusterModel fitted_loop = preset;
  const FitReport ar = fit_cluster(fitted_loop, loop);
  CHECK(fitted_loop.coll[2].intra.busbw_GBps == preset.coll[2].intra.busbw_GBps);
  CHECK(ar.alpha_us[2] == Approx(1000).epsilon(0.001));
  CHECK(fitted_loop.collective_ns(Coll::AllReduce, 264 << 10, 2) < 1'100'000);
}

TEST_CASE("cluster and plan JSON: round trip and clear errors", "[sim][json]") {
  ClusterModel c;
  c.world_size = 64;
  c.hierarchical = true;
  c.overlap_slowdown = 0.15;
  c.coll[1].inter.busbw_GBps = 123;
  ClusterModel back = parse_cluster_json(cluster_to_json(c), "mem");
  CHECK(back.world_size == 64);
  CHECK(back.hierarchical);
  CHECK(back.overlap_slowdown == 0.15);
  CHECK(back.coll[1].inter.busbw_GBps == 123);

  FsdpPlan p;
  p.unsharded = {"layers.31", "norm"};
  p.reshard_degree["layers.0"] = 8;
  p.forward_prefetch["layers.0"] = {"layers.1", "layers.2"};
  p.buckets = {{"a", "b"}};
  p.bucket_cap_mb = {{"default", 2000}, {"2", 1000}};
  p.gradient_accumulation = 4;
  p.hsdp_replicate = 2;
  CHECK(parse_plan_json(plan_to_json(p), "mem") == p);
  // The per-module form of reshard_after_forward.
  FsdpPlan q = parse_plan_json(R"({"reshard_after_forward": {"x": false, "y": true, "z": 4}})", "q.json");
  CHECK(q.unsharded == std::vector<std::string>{"x"});
  CHECK(q.resharded == std::vector<std::string>{"y"});
  CHECK(q.reshard_degree.at("z") == 4);
  CHECK(plan_to_python(p).find("fully_shard(model.get_submodule(\"layers.31\"), reshard_after_forward=False") != std::string::npos);
  // Two models in the profile (a teacher "" beside its student "FSDPNet"): the function takes
  // root= and names each model's modules relative to it ("FSDPNetwork" is the first model's).
  FsdpPlan two;
  two.unsharded = {"FSDPNet.layers.1", "layers.0", "FSDPNetwork.fc", "FSDPNet"};
  const std::string py = plan_to_python(two, {"FSDPNet"});
  CHECK(py.find("def apply_shardscope_plan(model, root=\"\", **fully_shard_kwargs):") != std::string::npos);
  CHECK(py.find("    if root == \"\":\n        fully_shard(model.get_submodule(\"layers.0\")") != std::string::npos);
  CHECK(py.find("        fully_shard(model.get_submodule(\"FSDPNetwork.fc\")") != std::string::npos);
  CHECK(py.find("    if root == \"FSDPNet\":\n        fully_shard(model.get_submodule(\"layers.1\")") != std::string::npos);
  CHECK(py.find("        fully_shard(model.get_submodule(\"\"), reshard_after_forward=False") != std::string::npos);
  CHECK(py.find("FSDPNet.layers.1") == std::string::npos);
  // FSDP1's wrap policy takes the model the same way.
  CHECK(py.find("fsdp1_wrap_policy(model, \"plan.json\", {Block}, root=\"\")") != std::string::npos);
  CHECK(plan_to_python(p).find("fsdp1_wrap_policy(model, \"plan.json\", {Block}))") != std::string::npos);

  CHECK_THROWS_WITH(parse_plan_json("{\"unsharded\": [1]}", "p.json"), Catch::Contains("p.json: unsharded[0]: expected a module name"));
  CHECK_THROWS_WITH(parse_plan_json("{\"zero_stage\": 1}", "p.json"), Catch::Contains("zero_stage: expected 2 or 3"));
  CHECK_THROWS_WITH(parse_plan_json("{\"unsharded\": [", "p.json"), Catch::Contains("p.json: invalid JSON"));
  CHECK_THROWS_WITH(parse_cluster_json("{\"collectives\": {\"all_gather\": {\"intra\": {\"busbw_GBps\": -1}}}}", "c.json"),
                    Catch::Contains("c.json: collectives.all_gather.intra.busbw_GBps: expected a positive bandwidth"));
  CHECK_THROWS_WITH(parse_cluster_json("[1, 2]", "c.json"), Catch::Contains("c.json: top level: expected an object"));
  CHECK_THROWS_WITH(parse_model_json("{\"layers\": 2}", "m.json"), Catch::Contains("m.json: hidden_size: expected an integer (required)"));
  CHECK_THROWS_AS(load_plan_file("/nonexistent/plan.json"), ProfileError);
  // Sizes in range one by one but absurd together are refused, not overflowed.
  const ModelDescription huge = parse_model_json(
      R"({"layers": 100000, "hidden_size": 1048576, "ffn_hidden_size": 4194304, "num_heads": 16, "seq_len": 67108864})", "h.json");
  CHECK_THROWS_WITH(build_sim_model(huge), Catch::Contains("more than 1e15 parameters"));
}

TEST_CASE("shipped model descriptions: published parameter counts", "[sim][models]") {
  const std::string dir = ss::test::source_dir() + "/resources/models/";
  // Published totals: Llama 3 8B 8.03 B, 70B 70.6 B (HF model cards); Wan 2.1 T2V 14 B.
  const SimModel l8 = build_sim_model(load_model_file(dir + "llama3-8b.json"));
  CHECK(double(l8.total_params()) == Approx(8.03e9).epsilon(0.005));
  CHECK(l8.units.size() == 33);  // root + 32 blocks
  const SimModel l70 = build_sim_model(load_model_file(dir + "llama3-70b.json"));
  CHECK(double(l70.total_params()) == Approx(70.6e9).epsilon(0.005));
  CHECK(l70.units.size() == 81);
  const SimModel dit = build_sim_model(load_model_file(dir + "wan2.1-t2v-14b.json"));
  CHECK(double(dit.total_params()) == Approx(14e9).epsilon(0.03));
  // Llama-3 8B block forward on H100 at 55% of 989.4 TFLOP/s: 2 FLOPs per weight (the block's
  // 218.1M parameters less its two 4096-wide norms) per token + causal attention 2·8192²·4096.
  const double flops = 2.0 * 8192 * double(l8.units[1].param_count - 2 * 4096) + 2.0 * 8192.0 * 8192.0 * 4096;
  CHECK(double(l8.segments[1].fwd_ns) == Approx(flops / (989.4 * 0.55 * 1e3)).epsilon(1e-6));
  // The cluster's device replaces the model's: B200 is faster than H100.
  const SimModel b = build_sim_model(load_model_file(dir + "llama3-8b.json"), "B200");
  CHECK(b.segments[1].fwd_ns < l8.segments[1].fwd_ns);
  CHECK(find_device("NVIDIA H100 80GB HBM3")->name == "H100");
  CHECK_FALSE(find_device("TPU v5"));
}

TEST_CASE("shipped cluster presets parse", "[sim][cluster]") {
  for (const char* f : {"h100-nvlink-ib.json", "h200-nvlink-ib.json", "a100-nvlink-ib.json", "b200-nvlink-ib.json"}) {
    INFO(f);
    ClusterModel c = load_cluster_file(ss::test::source_dir() + "/resources/clusters/" + f);
    CHECK(c.gpus_per_node == 8);
    CHECK(find_device(c.device));
  }
  // The H100 preset equals the built-in default.
  ClusterModel preset = load_cluster_file(ss::test::source_dir() + "/resources/clusters/h100-nvlink-ib.json");
  CHECK(cluster_to_json(preset) == cluster_to_json(ClusterModel()));
}

TEST_CASE("a cluster file without world_size replays a profile at the profile's world size", "[sim][cluster]") {
  CHECK_FALSE(parse_cluster_json(R"({"host_optimizer_params_per_s": 3e8})", "c.json").world_size_given);
  CHECK(parse_cluster_json(R"({"world_size": 4})", "c.json").world_size_given);
  ss::test::TempDir dir;
  SimInputRequest req;
  req.profile_path = ss::test::source_dir() + "/resources/samples/cpu-fsdp2-llama-2rank.ssdb";
  // What `python -m shardscope.measure_host` writes: the host figures only.
  req.cluster_path = dir.file("host.json");
  ss::test::write_file(req.cluster_path, R"({"name": "host-measured", "host_optimizer_params_per_s": 3e8})");
  SimInputs in = load_sim_inputs(req);
  CHECK(in.cluster.world_size == 2);
  CHECK(in.cluster.host_optimizer_params_per_s == 3e8);
  CHECK(in.cluster.host_link_GBps == ClusterModel{}.host_link_GBps);  // not in the file: the default
  // Nor the device and its ranks per node: a CPU profile stays a CPU run (it had become an H100
  // with 8 GPUs per node), and the file's own per-unit figures are read.
  CHECK(in.cluster.device == kCpuDeviceName);
  CHECK(in.cluster.gpus_per_node == 2);
  CHECK(in.cluster.comm_serialized);
  ss::test::write_file(req.cluster_path, R"({"fsdp_unit_forward_us": 1200, "fsdp_unit_backward_us": 2750.5})");
  const SimInputs units = load_sim_inputs(req);
  CHECK(units.cluster.device == kCpuDeviceName);
  CHECK(units.cluster.fsdp_unit_forward_us == 1200);
  CHECK(units.cluster.fsdp_unit_backward_us == 2750.5);
  CHECK(parse_cluster_json(cluster_to_json(units.cluster), "c.json").fsdp_unit_backward_us == 2750.5);
  CHECK_THROWS_WITH(parse_cluster_json(R"({"fsdp_unit_forward_us": -1})", "c.json"),
                    Catch::Contains("c.json: fsdp_unit_forward_us: expected a time in microseconds in [0, 1e6]"));
  // A file that names its world size, device or ranks per node keeps them (a what-if elsewhere).
  ss::test::write_file(req.cluster_path, R"({"world_size": 8, "device": "H100", "gpus_per_node": 4})");
  const SimInputs there = load_sim_inputs(req);
  CHECK(there.cluster.world_size == 8);
  CHECK(there.cluster.device == "H100");
  CHECK(there.cluster.gpus_per_node == 4);
}
