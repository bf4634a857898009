// `record --memory history`: the tensor facts read with the allocator's snapshot
// (allocator_history.h). A capture window that opens after step 0 tells the tensors alive then as
// "ss:live:..." messages; on a GPU the history already holds their allocations, so each must name
// the allocation at its address as an "ss:mem:..." fact does (the fourth GPU loan's windowed
// recording had no named tensor: docs/gpu-runs.md).
#include <catch2/catch.hpp>

#include "profiler/collector/launcher/allocator_history.h"

using namespace ss;

TEST_CASE("the facts file's ss:mem and ss:live lines both name allocations; others are skipped", "[collector][history]") {
  const TimeNs origin = 1'000'000;
  const std::vector<std::pair<TimeNs, std::string>> lines = {
      {1'000'500, "ss:mem:sharded_parameter:4096:layers.0"},
      {1'002'000, "ss:live:optimizer_state:8192:1048576:layers.1"},
      {1'002'100, "ss:live:gradient:12288:2048"},
      {1'003'000, "ss:freed:8192"},
      {1'004'000, "ss:live:optimizer_state:16384:0"},  // no size: malformed
      {1'005'000, "not a fact"},
  };
  const std::vector<TensorFact> facts = record::history_tensor_facts(lines, origin);
  REQUIRE(facts.size() == 3);
  CHECK(facts[0].time == 500);
  CHECK(facts[0].address == 4096);
  CHECK(facts[0].category == MemoryCategory::ShardedParameter);
  CHECK(facts[0].module == "layers.0");
  CHECK(facts[1].time == 2000);
  CHECK(facts[1].address == 8192);
  CHECK(facts[1].category == MemoryCategory::OptimizerState);
  CHECK(facts[1].has_module);
  CHECK(facts[1].module == "layers.1");
  CHECK(facts[2].address == 12288);
  CHECK(facts[2].category == MemoryCategory::Gradient);
  CHECK_FALSE(facts[2].has_module);
}
