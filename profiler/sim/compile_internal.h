// What compile_step.cpp shares with the parallelism and pipeline compilation (not a public API).
#pragma once

#include <memory>

#include "profiler/sim/step_simulator.h"

namespace ss::sim {

// All-gather, reduce-scatter, HSDP all-reduce and copy costs of one exec unit for its params,
// ag_bytes and shard.
void compute_unit_costs(const CompiledStep& s, ExecUnit& e, const ClusterModel& c, double hbm_bytes_per_ns);

// Tensor / context / expert parallelism: checks the degrees against the model and the world, and
// returns the segment as one TP x CP rank sees it (compute, activations divided by the degrees).
SimSegment parallel_segment(const SimModel& m, const CompiledStep& s, const SimSegment& sg);
// The unit's parameters on one TP / EP rank (before FSDP shards them).
std::int64_t parallel_params(const CompiledStep& s, const SimUnit& u);
// What the unit's FSDP collectives move per rank (parameters all-gathered, gradients reduce-
// scattered): parallel_params less its apart groups' parameters, each group's EP slice back in
// where its own mesh has more than one rank (SimUnit::apart_groups).
std::int64_t gathered_params(const CompiledStep& s, const SimUnit& u);
// Of those, what the unit's parameter groups on a mesh of their own gather there, and over how
// many ranks (the first such group's mesh); {0, 1} where every such mesh has one rank.
struct ApartGathered {
  std::int64_t params = 0;
  int mesh = 1;
};
ApartGathered apart_gathered(const CompiledStep& s, const SimUnit& u);
// The segment's TP / CP / EP collectives and ring-attention costs, filled into `es`.
void parallel_comm(const CompiledStep& s, const SimSegment& scaled, const ClusterModel& c, ExecSegment& es);

// Pipeline parallelism: splits the compiled step into pp x pp_virtual virtual stages.
void split_pipeline(CompiledStep& s, const SimModel& m, const ClusterModel& c);
// One pipelined step (simulate() calls it when step.stages is not empty).
SimResult simulate_pipeline(const CompiledStep& step, bool detail);
// simulate()'s machinery one pass at a time, for the pipeline: start() (persistent state), then
// forward and backward passes in any order (FSDP state carries over), then finish() (optimizer).
// Ops and memory events are appended to the SimResult in issue order.
class PassRunner {
 public:
  PassRunner(const CompiledStep& s, SimResult& r);
  ~PassRunner();
  void start();
  void forward_pass(int micro);
  void backward_pass(int micro, bool last);
  void finish();
  TimeNs now() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Peak, categories and per-unit memory of r.memory (sorts it).
void sweep_memory(const CompiledStep& s, SimResult& r, bool detail);
// The single-stage simulation simulate() runs otherwise.
SimResult simulate_flat(const CompiledStep& step, bool detail);

}  // namespace ss::sim
