// The memory-category rules (profiler/common/memory_categories.h) on hand-made event sequences,
// one per rule, and the tensor facts' parser.
#include <catch2/catch.hpp>

#include "profiler/common/memory_categories.h"

using namespace ss;

namespace {

// One step: forward [0, 100), backward [100, 200), optimizer [200, 300).
const std::vector<StepPhases> kStep{{0, 100, 200, 300}};

std::vector<MemoryCategory> run(const std::vector<MemoryEventIn>& ev, const std::vector<TensorFact>& facts = {}) {
  return classify_memory(ev, kStep, facts);
}

}  // namespace

TEST_CASE("forward allocations: activations live into backward, temporaries die in forward", "[memory]") {
  auto c = run({{10, 1, 64, MemContext::Forward}, {150, 1, -64, MemContext::Backward},
                {20, 2, 32, MemContext::Forward}, {30, 2, -32, MemContext::Forward}});
  CHECK(c == std::vector<MemoryCategory>{MemoryCategory::Activation, MemoryCategory::Activation,
                                         MemoryCategory::Temporary, MemoryCategory::Temporary});
}

TEST_CASE("FSDP2 communication buffers and unsharded parameters", "[memory]") {
  auto c = run({{5, 1, 100, MemContext::AllGather},       // all-gather output
                {8, 2, 100, MemContext::AllGatherCopyOut},  // unsharded parameter
                {9, 1, -100, MemContext::AllGatherCopyOut},
                {50, 2, -100, MemContext::Forward}});
  CHECK(c[0] == MemoryCategory::AllGatherBuffer);
  CHECK(c[2] == MemoryCategory::AllGatherBuffer);  // a free has its allocation's category
  CHECK(c[1] == MemoryCategory::UnshardedParameter);
  CHECK(c[3] == MemoryCategory::UnshardedParameter);
}

TEST_CASE("backward: unsharded grads freed by FSDP, reduce-scatter input and the sharded grad", "[memory]") {
  auto c = run({{110, 1, 40, MemContext::Backward},        // autograd's grad of the unsharded parameter
                {120, 1, -40, MemContext::ReduceScatter},  // freed once copied into the RS input
                {115, 2, 40, MemContext::ReduceScatter},   // reduce-scatter input, dies in backward
                {130, 2, -40, MemContext::ReduceScatter},
                {116, 3, 20, MemContext::ReduceScatter},   // reduce-scatter output = sharded grad
                {310, 3, -20, MemContext::None},           // zero_grad next step
                {140, 4, 8, MemContext::Backward},         // a temporary of backward
                {141, 4, -8, MemContext::Backward}});
  CHECK(c[0] == MemoryCategory::Gradient);
  CHECK(c[2] == MemoryCategory::ReduceScatterBuffer);
  CHECK(c[4] == MemoryCategory::Gradient);
  CHECK(c[6] == MemoryCategory::Temporary);
  // The last unit's reduce-scatter input, kept by FSDP2 until the next step's reduce-scatter wait.
  auto held = classify_memory({{190, 8, 40, MemContext::ReduceScatter}, {520, 8, -40, MemContext::PostBackward}},
                              {{0, 100, 200, 300}, {300, 400, 500, 600}}, {});
  CHECK(held[0] == MemoryCategory::ReduceScatterBuffer);
}

TEST_CASE("a reduce-scatter's block whose free gloo's worker made is a buffer, not the gradient", "[memory]") {
  // c10d::_reduce_scatter_base_ on gloo clones the input on the training thread; when gloo's
  // worker drops the Work last, the trace has no free and the importer places one, at worst at the
  // step's end. Recorded there by the training thread, the same block would be the sharded
  // gradient that zero_grad frees.
  MemoryEventIn lost{299, 5, -40, MemContext::None};
  lost.off_thread = true;
  auto c = run({{150, 5, 40, MemContext::ReduceScatter}, lost, {151, 6, 20, MemContext::ReduceScatter},
                {299, 6, -20, MemContext::None}});
  CHECK(c[0] == MemoryCategory::ReduceScatterBuffer);
  CHECK(c[1] == MemoryCategory::ReduceScatterBuffer);
  CHECK(c[2] == MemoryCategory::Gradient);
}

TEST_CASE("optimizer: states outlive the step, its temporaries do not", "[memory]") {
  auto c = run({{210, 1, 16, MemContext::Optimizer}, {220, 2, 16, MemContext::Optimizer}, {230, 2, -16, MemContext::Optimizer}});
  CHECK(c[0] == MemoryCategory::OptimizerState);
  CHECK(c[1] == MemoryCategory::Temporary);
}

TEST_CASE("gradient accumulation: a later pass's forward makes activations and temporaries again", "[memory]") {
  // Pass 1: forward [0, 100), backward [100, 200); pass 2: forward [200, 300), backward [300, 400);
  // optimizer [400, 500). The passes come from the step's module ranges.
  std::vector<StepPhases> steps{{0, 100, 400, 500}};
  find_later_passes(steps, {10, 20, 210, 220, 250}, {100, 150, 160, 300, 320});
  REQUIRE(steps[0].later_passes.size() == 1);
  CHECK(steps[0].later_passes[0].forward == 210);
  CHECK(steps[0].later_passes[0].backward == 300);
  auto c = classify_memory({{220, 1, 64, MemContext::Forward},    // pass 2's activation, freed in its backward
                            {350, 1, -64, MemContext::Backward},
                            {230, 2, 32, MemContext::Forward},    // pass 2's temporary
                            {240, 2, -32, MemContext::Forward},
                            {120, 3, 16, MemContext::Backward},   // pass 1's backward temporary
                            {130, 3, -16, MemContext::Backward},
                            {310, 4, 8, MemContext::Backward},    // pass 2's gradient, kept past the optimizer
                            {520, 4, -8, MemContext::None}},
                           steps, {});
  CHECK(c[0] == MemoryCategory::Activation);
  CHECK(c[2] == MemoryCategory::Temporary);
  CHECK(c[4] == MemoryCategory::Temporary);
  CHECK(c[6] == MemoryCategory::Gradient);
  // Without the passes, pass 2's activation lay in the backward phase: a temporary.
  CHECK(classify_memory({{220, 1, 64, MemContext::Forward}, {350, 1, -64, MemContext::Backward}}, {{0, 100, 400, 500}}, {})[0] ==
        MemoryCategory::Temporary);
  // A forward range of its own pass after the last backward range: that pass runs forward to the optimizer.
  std::vector<StepPhases> trailing{{0, 100, 400, 500}};
  find_later_passes(trailing, {10, 210, 260}, {100});
  REQUIRE(trailing[0].later_passes.size() == 1);
  CHECK(trailing[0].later_passes[0].backward == 400);
  // One pass: no later passes, forward ranges before the backward ignored.
  std::vector<StepPhases> one{{0, 100, 400, 500}};
  find_later_passes(one, {10, 20}, {100, 150});
  CHECK(one[0].later_passes.empty());
}

TEST_CASE("outside every step: unknown, unless a tensor fact names it", "[memory]") {
  // Address 7 is reused: the fact at time -5 names only the allocation live then.
  auto c = run({{-10, 7, 32, MemContext::None}, {-8, 9, 4, MemContext::None}, {400, 7, -32, MemContext::None},
                {401, 7, 32, MemContext::None}},
               {{-5, 7, MemoryCategory::ShardedParameter}});
  CHECK(c[0] == MemoryCategory::ShardedParameter);
  CHECK(c[2] == MemoryCategory::ShardedParameter);
  CHECK(c[1] == MemoryCategory::Unknown);
  CHECK(c[3] == MemoryCategory::Unknown);
}

TEST_CASE("recomputed forwards are activations; a free at the same instant pairs before a reuse", "[memory]") {
  auto c = run({{150, 5, 8, MemContext::Recompute}, {160, 5, -8, MemContext::Backward}, {160, 5, 8, MemContext::Backward},
                {170, 5, -8, MemContext::Backward}});
  CHECK(c[0] == MemoryCategory::Activation);
  CHECK(c[1] == MemoryCategory::Activation);
  CHECK(c[2] == MemoryCategory::Temporary);
}

TEST_CASE("range names map to memory contexts; tensor facts parse strictly", "[memory]") {
  CHECK(memory_context_of_range("FSDP::all_gather (layers.0)") == MemContext::AllGather);
  CHECK(memory_context_of_range("fsdp::all_gather_copy_in") == MemContext::AllGather);
  CHECK(memory_context_of_range("FSDP::all_gather_copy_out (layers.0)") == MemContext::AllGatherCopyOut);
  CHECK(memory_context_of_range("FSDP::post_backward_reduce (3)") == MemContext::ReduceScatter);
  CHECK(memory_context_of_range("FSDP::post_backward_reshard (3)") == MemContext::PostBackward);
  CHECK(memory_context_of_range("gloo:all_gather") == MemContext::AllGather);
  // FSDP1: its FlatParameter is unsharded where a unit's pre-hook or a prefetch runs.
  CHECK(memory_context_of_range("FSDP::unshard (layers.0)") == MemContext::AllGatherCopyOut);
  CHECK(memory_context_of_range("FullyShardedDataParallel._pre_forward") == MemContext::AllGatherCopyOut);
  CHECK(memory_context_of_range("FullyShardedDataParallel._pre_backward_hook") == MemContext::AllGatherCopyOut);
  CHECK(memory_context_of_range("FullyShardedDataParallel._post_backward_prefetch") == MemContext::AllGatherCopyOut);
  CHECK(memory_context_of_range("FullyShardedDataParallel._post_backward_hook") == MemContext::ReduceScatter);
  CHECK(memory_context_of_range("FullyShardedDataParallel._post_backward_hook_reshard_only") == MemContext::PostBackward);
  CHECK_FALSE(memory_context_of_range("FullyShardedDataParallel.forward"));
  CHECK_FALSE(memory_context_of_range("FullyShardedDataParallel._root_pre_forward"));  // casts the inputs
  CHECK_FALSE(memory_context_of_range("FullyShardedDataParallel."));
  CHECK(memory_context_of_range("Optimizer.step#AdamW.step") == MemContext::Optimizer);
  CHECK_FALSE(memory_context_of_range("aten::mm"));
  auto f = parse_tensor_fact("ss:mem:sharded_parameter:140022712089536", 12);
  REQUIRE(f);
  CHECK(f->address == 140022712089536);
  CHECK(f->category == MemoryCategory::ShardedParameter);
  CHECK(f->time == 12);
  CHECK_FALSE(f->has_module);
  auto g = parse_tensor_fact("ss:mem:optimizer_state:4096:layers.0.attention.wq", 5);
  REQUIRE(g);
  CHECK(g->address == 4096);
  CHECK(g->has_module);
  CHECK(g->module == "layers.0.attention.wq");
  CHECK(parse_tensor_fact("ss:mem:sharded_parameter:4096:", 5)->module.empty());  // the root module
  CHECK_FALSE(parse_tensor_fact("ss:mem:bogus:12", 0));
  CHECK_FALSE(parse_tensor_fact("ss:mem:gradient:12x", 0));
  CHECK_FALSE(parse_tensor_fact("ss:mem:gradient", 0));
}

TEST_CASE("tensors alive when a capture window starts, and their deaths, parse strictly", "[memory]") {
  auto l = parse_live_tensor("ss:live:optimizer_state:4096:65536:layers.0.attention.wq", 7);
  REQUIRE(l);
  CHECK(l->bytes == 65536);
  CHECK(l->fact.address == 4096);
  CHECK(l->fact.category == MemoryCategory::OptimizerState);
  CHECK(l->fact.time == 7);
  CHECK(l->fact.module == "layers.0.attention.wq");
  auto root = parse_live_tensor("ss:live:sharded_parameter:8192:128:", 1);
  REQUIRE(root);
  CHECK(root->fact.has_module);
  CHECK(root->fact.module.empty());
  CHECK_FALSE(parse_live_tensor("ss:live:gradient:8192:256", 1)->fact.has_module);
  for (const char* bad : {"ss:live:gradient:8192", "ss:live:gradient:8192:0", "ss:live:gradient:8192:-4", "ss:live:bogus:1:2",
                          "ss:live:gradient:x:2", "ss:live:gradient:1:2x", "ss:mem:gradient:1"})
    CHECK_FALSE(parse_live_tensor(bad, 0));
  CHECK(parse_freed_tensor("ss:freed:4096") == 4096);
  CHECK_FALSE(parse_freed_tensor("ss:freed:"));
  CHECK_FALSE(parse_freed_tensor("ss:freed:40x"));
  CHECK_FALSE(parse_freed_tensor("ss:live:gradient:1:2"));
}
