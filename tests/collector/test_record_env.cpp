#include <catch2/catch.hpp>

#include "profiler/collector/launcher/record_env.h"

using namespace ss::record;

TEST_CASE("record environment: injection paths, PYTHONPATH, output dir") {
  RecordSettings s;
  s.output_dir = "/tmp/out.parts";
  s.collector_library = "/opt/ss/libshardscope_collector.so";
  s.python_dir = "/opt/ss/python";
  auto r = build_record_env({{"PYTHONPATH", "/home/u/src"}, {"HOME", "/home/u"}}, s);
  CHECK(r.env.at("CUDA_INJECTION64_PATH") == s.collector_library);
  CHECK(r.env.at("NVTX_INJECTION64_PATH") == s.collector_library);
  CHECK(r.env.at("SHARDSCOPE_OUTPUT_DIR") == "/tmp/out.parts");
  CHECK(r.env.at("SHARDSCOPE_COLLECTOR") == "1");
  CHECK(r.env.at("SHARDSCOPE_MODULES") == "1");
  CHECK(r.env.at("SHARDSCOPE_BACKWARD_RANGES") == "modules");
  CHECK(r.env.at("PYTHONPATH") == "/opt/ss/python/shardscope/_site:/opt/ss/python:/home/u/src");
  CHECK(r.env.at("HOME") == "/home/u");
  // The default memory mode leaves the job's allocator alone.
  CHECK(r.env.at("SHARDSCOPE_MEMORY") == "history");
  CHECK_FALSE(r.env.count("PYTORCH_CUDA_ALLOC_CONF"));
  CHECK(r.warnings.empty());
}

TEST_CASE("no collector library: no injection variables; --no-modules; segments keeps the allocator") {
  RecordSettings s;
  s.output_dir = "/o";
  s.memory = MemoryMode::Segments;
  s.modules = false;
  s.unit_backward_ranges = true;
  auto r = build_record_env({{"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"}, {"SHARDSCOPE_COLLECTOR", "1"},
                             {"SHARDSCOPE_BACKWARD_RANGES", "modules"}}, s);
  CHECK_FALSE(r.env.count("CUDA_INJECTION64_PATH"));
  CHECK_FALSE(r.env.count("SHARDSCOPE_COLLECTOR"));
  CHECK(r.env.at("SHARDSCOPE_MODULES") == "0");
  CHECK(r.env.at("SHARDSCOPE_BACKWARD_RANGES") == "units");
  CHECK(r.env.at("SHARDSCOPE_MEMORY") == "segments");
  CHECK(r.env.at("PYTORCH_CUDA_ALLOC_CONF") == "expandable_segments:True");
}

TEST_CASE("a record run from inside a recorded rank does not pass on that rank's mark") {
  RecordSettings s;
  s.output_dir = "/o";
  auto r = build_record_env({{"SHARDSCOPE_RANK_PID", "4242"}, {"RANK", "0"}}, s);
  CHECK_FALSE(r.env.count("SHARDSCOPE_RANK_PID"));
  CHECK(r.env.at("RANK") == "0");
}

TEST_CASE("--memory per-tensor switches the job to the cudaMallocAsync backend") {
  RecordSettings s;
  s.output_dir = "/o";
  s.memory = MemoryMode::PerTensor;
  auto r = build_record_env({}, s);
  CHECK(r.env.at("SHARDSCOPE_MEMORY") == "per-tensor");
  CHECK(r.env.at("PYTORCH_CUDA_ALLOC_CONF") == "backend:cudaMallocAsync");
}

TEST_CASE("per-tensor memory: backend forced, the user's other options kept, native-only ones dropped") {
  std::vector<std::string> w;
  CHECK(alloc_conf_with_async_backend("", w) == "backend:cudaMallocAsync");
  CHECK(alloc_conf_with_async_backend("backend:cudaMallocAsync", w) == "backend:cudaMallocAsync");
  CHECK(w.empty());
  CHECK(alloc_conf_with_async_backend("backend:native, pinned_use_cuda_host_register:True", w) ==
        "backend:cudaMallocAsync,pinned_use_cuda_host_register:True");
  REQUIRE(w.size() == 1);
  CHECK_THAT(w[0], Catch::Contains("backend:native"));
  w.clear();
  CHECK(alloc_conf_with_async_backend("expandable_segments:True,max_split_size_mb:128", w) == "backend:cudaMallocAsync");
  CHECK(w.size() == 2);
}

TEST_CASE("another tool's injection and disabled NCCL NVTX are warned about") {
  RecordSettings s;
  s.output_dir = "/o";
  s.collector_library = "/lib/ours.so";
  auto r = build_record_env({{"CUDA_INJECTION64_PATH", "/nsys/libToolsInjection64.so"}, {"NCCL_NVTX_DISABLE", "1"}}, s);
  CHECK(r.env.at("CUDA_INJECTION64_PATH") == "/lib/ours.so");
  CHECK(r.warnings.size() == 2);
}

TEST_CASE("record --steps A:B: the capture window is parsed strictly and passed on") {
  auto w = parse_step_window("3:6");
  REQUIRE(w);
  CHECK(w->first == 3);
  CHECK(w->end == 6);
  CHECK(w->text() == "3:6");
  CHECK(parse_step_window("2:")->end == -1);
  CHECK(parse_step_window("2:")->text() == "2:");
  CHECK(parse_step_window(":4")->first == 0);
  CHECK(parse_step_window(":4")->end == 4);
  for (const char* bad : {"", "3", "6:3", "3:3", "-1:4", "a:4", "3:x", "1:2:3", " 1:2"}) CHECK_FALSE(parse_step_window(bad));

  RecordSettings s;
  s.output_dir = "/o";
  s.steps = parse_step_window("3:6");
  CHECK(build_record_env({}, s).env.at("SHARDSCOPE_STEPS") == "3:6");
  s.steps.reset();  // a window left in the environment by an outer record is not this one's
  CHECK_FALSE(build_record_env({{"SHARDSCOPE_STEPS", "1:2"}}, s).env.count("SHARDSCOPE_STEPS"));
}
