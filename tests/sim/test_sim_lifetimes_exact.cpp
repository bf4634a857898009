// When the replay's tensors are made and freed, where a job's own lifetimes differ from "saved in
// forward, freed in the unit's backward": the output the training loop holds in a variable, a
// checkpointed unit's input that the segment before it already holds, and a root's gradients made
// in two places (its tail's in the output head's backward, the embedding's at the very end).
// Each is checked against the same model without it, on the same timeline.
#include <catch2/catch.hpp>

#include "profiler/sim/step_simulator.h"
#include "tests/sim/sim_fixtures.h"

using namespace ss;
using namespace ss::sim;

namespace {

// Bytes of category `cat` (every category: -1) live at time t: the events at or before t.
std::int64_t level(const SimResult& r, TimeNs t, int cat = -1) {
  std::int64_t b = 0;
  for (const auto& e : r.memory)
    if (e.time <= t && (cat < 0 || static_cast<int>(e.cat) == cat)) b += e.delta;
  return b;
}

// The root's compute ops in a phase, in time order (head, then tail in forward; tail, head in backward).
std::vector<const SimOp*> root_compute(const SimResult& r, const CompiledStep& s, Phase ph) {
  std::vector<const SimOp*> out;
  for (const auto& o : r.ops)
    if (o.kind == OpKind::Compute && o.phase == ph && o.exec >= 0 && s.units[static_cast<std::size_t>(o.exec)].is_root) out.push_back(&o);
  return out;
}

int root_exec(const CompiledStep& s) {
  for (std::size_t e = 0; e < s.units.size(); ++e)
    if (s.units[e].is_root) return static_cast<int>(e);
  return -1;
}

// Root head (saved `head_saved`) + u0 + u1 + root tail (saved 5000, of which the loss's 4000).
SimModel decoder(std::int64_t head_saved, std::int64_t held, std::int64_t root_params = 0, std::int64_t tail_params = -1,
                 std::int64_t held_through_backward = 0) {
  SimModel m = test::chain_model(2, 1000, 100, 200, 1000);
  m.units[0].param_count = root_params;
  m.units[0].tail_params = tail_params;
  for (auto& sg : m.segments) sg.input_bytes = 300;
  m.segments.insert(m.segments.begin(), SimSegment{0, 10, 10, head_saved, 0});
  SimSegment tail{0, 50, 100, 5000, 0};
  tail.loss_saved_bytes = 4000;
  tail.caller_held_bytes = held;
  tail.backward_held_bytes = held_through_backward;
  m.segments.push_back(tail);
  return m;
}

}  // namespace

TEST_CASE("the output a training loop holds lives from its forward to the next pass's forward end", "[sim][exact][memory]") {
  // `logits = model(x)`: 500 of the tail's 5000 saved bytes stay in the loop's variable after the
  // backward, through the optimizer step into the next step, until its forward returns. The step
  // replays the previous step's copy from its start to the tail's forward.
  const ClusterModel c = test::linear_cluster(2);
  const CompiledStep s0 = compile_step(decoder(0, 0), FsdpPlan{}, c);
  const CompiledStep s1 = compile_step(decoder(0, 500), FsdpPlan{}, c);
  const SimResult without = simulate(s0, true), with = simulate(s1, true);
  // Timing and work are unchanged: only memory moves.
  REQUIRE(with.step_ns == without.step_ns);
  REQUIRE(with.ops.size() == without.ops.size());
  const TimeNs tail_fwd = root_compute(with, s1, Phase::Forward).back()->start;
  const TimeNs tail_bwd_end = root_compute(with, s1, Phase::Backward).front()->end;
  const int act = static_cast<int>(MemCat::Activation);
  for (TimeNs t : {TimeNs{0}, tail_fwd - 1, tail_fwd, tail_fwd + 1, tail_bwd_end - 1, tail_bwd_end, with.step_ns}) {
    INFO("t = " << t);
    const bool held = t < tail_fwd || t >= tail_bwd_end;
    CHECK(level(with, t) - level(without, t) == (held ? 500 : 0));
    CHECK(level(with, t, act) - level(without, t, act) == (held ? 500 : 0));
  }
  CHECK(with.min_bytes >= 0);
  // In backward the held output stacks on every unit's backward: the backward's peak is 500 higher.
  CHECK(with.peak_bytes >= without.peak_bytes);

  // Held only through the backward (`del out` after loss.backward()): 300 more from the tail's
  // backward to the backward's end (the reduce-scatters done), not into the optimizer step.
  const CompiledStep s3 = compile_step(decoder(0, 500, 0, -1, 300), FsdpPlan{}, c);
  const SimResult three = simulate(s3, true);
  const TimeNs bwd_end = three.backward_end_ns;
  REQUIRE(three.step_ns == with.step_ns);
  for (TimeNs t : {tail_fwd, tail_bwd_end - 1, tail_bwd_end, bwd_end - 1, bwd_end, three.step_ns}) {
    INFO("t = " << t);
    CHECK(level(three, t) - level(with, t) == (t >= tail_bwd_end && t < bwd_end ? 300 : 0));
  }

  // Micro-batches: each pass's tail frees the previous pass's output as it makes its own, so the
  // root never holds two.
  FsdpPlan accumulate;
  accumulate.gradient_accumulation = 2;
  const CompiledStep s2 = compile_step(decoder(0, 500), accumulate, c);
  const SimResult two = simulate(s2, true);
  std::int64_t lvl = 0, most = 0;
  for (const auto& e : two.memory)
    if (e.cat == MemCat::Activation && e.exec == root_exec(s2)) lvl += e.delta, most = std::max(most, lvl);
  CHECK(most == 5000);  // the tail's saved, the output among them
  CHECK(lvl == 500);    // the second pass's output, held past the step
}

TEST_CASE("a checkpointed unit's input that the segment before it holds is counted once", "[sim][exact][checkpoint]") {
  // The root's head saves 700, among them the 300 B tensor u0 is handed; u0 and u1 are
  // checkpointed and keep their 300 B inputs (u1's is u0's output, which u0 does not keep).
  // Counted twice before: u0's 300 on top of the head's 700.
  const ClusterModel c = test::linear_cluster(2);
  FsdpPlan p;
  p.checkpoint["*"] = "full";
  const CompiledStep s = compile_step(decoder(700, 0), p, c);
  const SimResult r = simulate(s, true);
  const int act = static_cast<int>(MemCat::Activation);
  const TimeNs tail_fwd = root_compute(r, s, Phase::Forward).back()->start;
  // Before the tail: the head's 700, u0 nothing more, u1 its input 300.
  CHECK(level(r, tail_fwd - 1, act) == 700 + 300);
  // In u0's backward, after its rerun: the head's 700 and u0's rebuilt 1000 - 300 (u1 is done).
  const SimOp* u0_bwd = test::find_op(r, OpKind::Compute, s, "u0", Phase::Backward);
  REQUIRE(u0_bwd != nullptr);
  CHECK(level(r, u0_bwd->start + 1, act) == 700 + 700);
  // Every byte made is freed: the step ends as it began.
  CHECK(level(r, r.step_ns, act) == 0);
  CHECK(r.min_bytes >= 0);

  // u0 not checkpointed (only u1): u1's input is u0's output, which u0's saved 1000 holds.
  FsdpPlan only_u1;
  only_u1.checkpoint["u1"] = "full";
  const CompiledStep s1 = compile_step(decoder(700, 0), only_u1, c);
  const SimResult r1 = simulate(s1, true);
  CHECK(level(r1, root_compute(r1, s1, Phase::Forward).back()->start - 1, act) == 700 + 1000);
  // Without a head that saves anything, u0 keeps its input itself.
  const CompiledStep s2 = compile_step(decoder(0, 0), p, c);
  const SimResult r2 = simulate(s2, true);
  CHECK(level(r2, root_compute(r2, s2, Phase::Forward).back()->start - 1, act) == 300 + 300);
}

TEST_CASE("a root's gradients: its tail's in the output head's backward, the rest at the end", "[sim][exact][memory]") {
  // The root holds 1000 parameters, 250 of them in its tail (norm, output head): bf16 params,
  // unsharded gradients 2 B each. After the tail's backward 500 B exist; the embedding's 1500 B
  // only once the head's backward has run (and go into the reduce-scatter input at once).
  const ClusterModel c = test::linear_cluster(2);
  const CompiledStep s = compile_step(decoder(0, 0, 1000, 250), FsdpPlan{}, c);
  const SimResult r = simulate(s, true);
  const int grad = static_cast<int>(MemCat::UnshardedGrad);
  const auto bwd = root_compute(r, s, Phase::Backward);
  REQUIRE(bwd.size() == 2);
  const std::int64_t root_grads = s.units[static_cast<std::size_t>(root_exec(s))].reduced * s.param_bytes;
  REQUIRE(root_grads == 2000);
  std::int64_t root_level = 0;
  auto root_grads_at = [&](TimeNs t) {
    root_level = 0;
    for (const auto& e : r.memory)
      if (e.time <= t && static_cast<int>(e.cat) == grad && e.exec == root_exec(s)) root_level += e.delta;
    return root_level;
  };
  CHECK(root_grads_at(bwd[0]->end - 1) == 0);
  CHECK(root_grads_at(bwd[0]->end) == 500);
  CHECK(root_grads_at(bwd[1]->start + 1) == 500);  // through u1's and u0's backward
  CHECK(root_grads_at(r.step_ns) == 0);
  CHECK(r.min_bytes >= 0);
  // Tail parameters unknown (-1), or none of its own (tied embeddings: the shared weight's
  // gradient is made in the output head's backward): all of them after the tail's backward.
  for (std::int64_t tail : {std::int64_t{-1}, std::int64_t{0}}) {
    const CompiledStep st = compile_step(decoder(0, 0, 1000, tail), FsdpPlan{}, c);
    const SimResult rt = simulate(st, true);
    std::int64_t b = 0;
    for (const auto& e : rt.memory)
      if (e.time <= root_compute(rt, st, Phase::Backward)[1]->start + 1 && static_cast<int>(e.cat) == grad && e.exec == root_exec(st)) b += e.delta;
    CHECK(b == 2000);
  }
}

TEST_CASE("the gradient a checkpointed unit is handed counts where the next unit is checkpointed too", "[sim][exact][checkpoint]") {
  // u0 and u1 are handed 250 B gradients of their outputs (SimSegment::bwd_incoming_bytes) and
  // hold 400 B at their backward's highest. Only u0 has a next unit (u1): with both checkpointed,
  // u0's backward holds 400 + 250 while it computes; with one or neither checkpointed, the model's
  // saved or rebuilt output stands for the gradient, and nothing is added.
  const ClusterModel c = test::linear_cluster(2);
  auto model = [] {
    SimModel m = decoder(0, 0);
    for (auto& sg : m.segments)
      if (sg.unit != 0) sg.bwd_temp_bytes = 400, sg.bwd_incoming_bytes = 250;
    return m;
  };
  const int tmp = static_cast<int>(MemCat::Temporary);
  auto temporaries_in = [&](const FsdpPlan& p, const char* unit) {
    const CompiledStep s = compile_step(model(), p, c);
    const SimResult r = simulate(s, true);
    const SimOp* op = test::find_op(r, OpKind::Compute, s, unit, Phase::Backward);
    REQUIRE(op != nullptr);
    CHECK(level(r, r.step_ns, tmp) == 0);  // freed when the compute ends
    return level(r, op->start, tmp);
  };
  FsdpPlan both;
  both.checkpoint["*"] = "full";
  CHECK(temporaries_in(both, "u0") == 400 + 250);
  CHECK(temporaries_in(both, "u1") == 400);  // the root's tail after it is not checkpointed
  FsdpPlan only_u0, only_u1;
  only_u0.checkpoint["u0"] = "full";
  only_u1.checkpoint["u1"] = "full";
  CHECK(temporaries_in(only_u0, "u0") == 400);
  CHECK(temporaries_in(only_u1, "u0") == 400);
  CHECK(temporaries_in(FsdpPlan{}, "u0") == 400);
}

namespace {

// An exec unit's backward compute ops, in time order.
std::vector<const SimOp*> backward_of(const SimResult& r, int exec) {
  std::vector<const SimOp*> out;
  for (const auto& o : r.ops)
    if (o.kind == OpKind::Compute && o.phase == Phase::Backward && o.exec == exec) out.push_back(&o);
  return out;
}

// An exec unit's unsharded gradient bytes live at time t.
std::int64_t grads_of(const SimResult& r, int exec, TimeNs t) {
  std::int64_t b = 0;
  for (const auto& e : r.memory)
    if (e.time <= t && e.cat == MemCat::UnshardedGrad && e.exec == exec) b += e.delta;
  return b;
}

}  // namespace

TEST_CASE("a bucket's members make their gradients in their own backward", "[sim][exact][buckets][memory]") {
  // u0, u1, u2 gathered as one bucket, of 1000, 3000 and 2000 parameters (bf16: 2 B a gradient).
  // The backward runs u2, u1, u0: after u2's, u2's 4000 B exist; after u1's, 10,000 B; u0's come
  // last, at the bucket's post-backward, which copies them all into the reduce-scatter input.
  // (Written all at the end of u2's backward, u1's and u0's backward held 12,000 B.)
  const ClusterModel c = test::linear_cluster(2);
  SimModel m = test::chain_model(3, 1000, 100, 200);
  m.units[2].param_count = 3000;
  m.units[3].param_count = 2000;
  FsdpPlan p;
  p.buckets = {{"u0", "u1", "u2"}};
  const CompiledStep s = compile_step(m, p, c);
  REQUIRE(s.param_bytes == 2);
  const int bucket = s.exec_of_unit[1];
  REQUIRE(bucket == s.exec_of_unit[3]);
  const SimResult r = simulate(s, true);
  const auto bwd = backward_of(r, bucket);  // u2's, u1's, u0's
  REQUIRE(bwd.size() == 3);
  CHECK(grads_of(r, bucket, bwd[0]->end - 1) == 0);
  CHECK(grads_of(r, bucket, bwd[0]->end) == 4000);
  CHECK(grads_of(r, bucket, bwd[1]->start + 1) == 4000);
  CHECK(grads_of(r, bucket, bwd[1]->end) == 10000);
  CHECK(grads_of(r, bucket, bwd[2]->start + 1) == 10000);
  CHECK(grads_of(r, bucket, r.step_ns) == 0);
  CHECK(r.min_bytes >= 0);

  // Kept for the next micro-batch (no reduce-scatter between them): written as they were made all
  // the same, and freed once, by the reducing micro-batch's post-backward.
  FsdpPlan accumulate = p;
  accumulate.gradient_accumulation = 2;
  accumulate.sync_every_microbatch = false;
  const SimResult ra = simulate(compile_step(m, accumulate, c), true);
  const auto ba = backward_of(ra, bucket);
  REQUIRE(ba.size() == 6);
  CHECK(grads_of(ra, bucket, ba[0]->end) == 4000);
  CHECK(grads_of(ra, bucket, ba[1]->end) == 10000);
  CHECK(grads_of(ra, bucket, ba[3]->start) == 12000);  // through the second micro-batch
  CHECK(grads_of(ra, bucket, ra.step_ns) == 0);
}
