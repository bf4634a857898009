// Turning a measured, imported or synthetic profile into a SimModel: FSDP units and their own
// parameter bytes from the modules table, per-unit forward/backward compute from module ranges
// (busy time of compute-stream kernels inside them), the root's head/tail compute and the
// optimizer from what lies between, and measured collectives for fitting the cluster model.
// Collectives FSDP does not issue and GPU idle time inside each stretch are kept as measured
// (SimSegment::fwd_extra / bwd_extra); the unit ranges of a pass tile it, so nothing is dropped.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "profiler/sim/cluster_model.h"
#include "profiler/sim/sim_model.h"
#include "storage/errors.h"
#include "storage/profile_model.h"
#include "storage/sqlite_handle.h"

namespace ss::sim {

// One step's FSDP collectives as a rank issued them.
struct StepCollectives {
  int all_gathers = 0, reduce_scatters = 0;
  bool operator==(const StepCollectives&) const = default;
};

// FSDP's own process groups among a profile's, where the run has tensor (or context) parallelism
// beside FSDP, whose sequence-parallel all-gathers and reduce-scatters are collectives of the same
// kinds as FSDP's: known when the hooks named FSDP's group (meta rank<R>.fsdp_group). Not known:
// every all-gather and reduce-scatter may be FSDP's.
struct FsdpGroups {
  bool known = false;
  std::set<std::int32_t> ids;  // process_groups.id of FSDP's group on this rank (none: a mesh of one rank)
  bool holds_group(std::int64_t process_group) const { return !known || ids.count(static_cast<std::int32_t>(process_group)) > 0; }
  bool holds(const CollectiveEvent& c) const { return holds_group(c.process_group); }
};

struct ProfileInput {
  SimModel model;
  int rank = 0;           // the representative rank
  int world_size = 1;
  int steps_used = 0;     // steps averaged (the first is skipped as warm-up when there are more)
  int forward_only_steps_left_out = 0;  // steps holding a forward without backward (an evaluation), not averaged
  int frozen_units = 0;                 // units no backward goes through (SimUnit::frozen)
  int repeat_call_units = 0;            // units called more than once a pass (SimUnit::repeat_fwd_calls)
  int long_steps_left_out = 0;          // steps over kLongStepFactor x the median (a checkpoint save), not averaged
  TimeNs long_steps_ns = 0;             // their mean duration
  TimeNs measured_step_ns = 0;
  std::string gpu_name;
  OriginKind origin = OriginKind::Measured;
  std::vector<CollSample> collectives;  // for --fit
  std::vector<std::pair<RowId, int>> unit_of_module;  // modules.id -> SimModel unit (units and their descendants)
  std::vector<std::pair<TimeNs, TimeNs>> step_windows;  // the steps averaged
  // Their forward-backward passes (micro-batches: several a step under gradient accumulation),
  // tiling each step in order: per-pass figures (activations, temporaries, gathers) come from these.
  std::vector<std::pair<TimeNs, TimeNs>> pass_windows;
  int micro_batches = 1;               // passes per step as recorded (FsdpPlan::gradient_accumulation)
  bool sync_every_microbatch = true;   // whether the passes before the last reduce-scatter too
  bool reshard_after_backward = true;  // false: the passes after the first gather (almost) nothing in forward
  // No step markers (a window cut from a run): the one "step" is the span of the complete unit
  // ranges, so measured and simulated time cover the same modules.
  bool window_only = false;
  // Whether the profile has FSDP's own all-gather ranges (FSDP2 on CPU): the units' forward
  // gathers were counted from them; otherwise add_gathers_from_profile counts the collectives.
  bool fsdp_gather_ranges = false;
  TimeNs profile_span_ns = 0;  // the whole recording, for saying how much of it was compared
  // What the measured step holds (per step, from the trace): compute busy, non-FSDP collectives
  // while no compute runs, GPU idle; the rest is time only FSDP collectives run.
  TimeNs measured_compute_ns = 0, measured_other_comm_ns = 0, measured_idle_ns = 0;
  int other_collectives = 0;   // non-FSDP collectives in the steps used (all steps together)
  // HSDP as recorded: the replicate degree (1: plain FSDP over the world). Each reduce-scatter over
  // a shard group of g ranks followed by an all-reduce of its 1/g output over world / g ranks.
  int recorded_hsdp_replicate = 1;
  // The job's own explicit prefetch lists (FSDPModule.set_modules_to_forward_prefetch /
  // set_modules_to_backward_prefetch; FsdpPlan's forward_prefetch / backward_prefetch), by unit.
  std::map<std::string, std::vector<std::string>> forward_prefetch, backward_prefetch;
  // The mesh dimensions the parameters are sharded over besides FSDP's ("tp=2": tensor parallelism
  // beside FSDP, "ep=2" expert parallelism inside it; hooks.py, model_parallel_dims), "" for none.
  std::string model_parallel;
  // A pipelined model (torch.distributed.pipelining; meta rank<R>.pipeline, hooks.py): its schedule
  // and stages as recorded ("ScheduleInterleaved1F1B stages=4 ranks=2 local=0,2 microbatches=2"),
  // "" for none. The replay is of this rank's stages: the units that ran on it.
  std::string pipeline;
  int units_on_other_stages = 0;  // units of the model that ran on other ranks' stages only
  // The ranks tensor parallelism adds beside FSDP's (meta rank<R>.model_parallel_ranks), where
  // FSDP's process group is known too (FsdpGroups): FSDP shards over world / model_parallel_ranks
  // ranks (SimModel::recorded_model_parallel), the other dimensions' collectives replayed as
  // measured. 1 and unknown groups otherwise: the replay takes every rank for FSDP's.
  int model_parallel_ranks = 1;
  FsdpGroups fsdp_groups;
  // The representative rank's all-gathers and reduce-scatters in each step used (none for a
  // window): the replay at the recorded plan makes as many when it models the loop.
  std::vector<StepCollectives> fsdp_collectives_per_step;
  // Steps used where an optimizer steps between two backward ranges (a GAN: the discriminator
  // stepped before the generator's backward through it), which the replay does not model.
  int steps_with_optimizer_between_backwards = 0;
};

// A profile with no module marked as an FSDP unit (modules.is_fsdp_unit): nothing to simulate.
// A ProfileError (MalformedTable), so callers that only report the message need not know it;
// the Unshard panel tells the user how to record or import one that has units.
class NoFsdpUnitsError : public ProfileError {
 public:
  using ProfileError::ProfileError;
};

// Throws ProfileError(MalformedTable) when the profile has no FSDP units (NoFsdpUnitsError) or no
// module ranges.
ProfileInput extract_profile(const Profile& profile);

// Saved activations per unit from the profile's memory events (category activation, allocations
// attributed to the unit's modules inside the steps used, averaged per step), put on the unit's
// forward segment. Reads the file at `path` (the loaded model holds no per-event categories).
// Returns the total bytes found (0 when the profile has no such events).
std::int64_t add_activations_from_profile(ProfileInput& in, const std::string& path);

// Temporaries per unit and phase from the profile's memory events (category temporary, paired
// by address): the most each unit's forward and backward hold at once, averaged over the steps
// used, put on the unit's last segment (the root's tail, where a loss's temporaries are).
// Returns the largest of them (0 when the profile has none).
std::int64_t add_temporaries_from_profile(ProfileInput& in, const std::string& path);
// For every unit but the root, what its backward holds at its highest beyond its start (its
// temporaries, plus the gradients made and less the saved tensors freed by then; measured from a
// checkpointing rerun's end), averaged over the passes, replacing the last segment's
// bwd_temp_bytes. Units without a backward range or memory events in it keep theirs.
// profile_backward_net.cpp.
void add_backward_net_from_profile(ProfileInput& in, const std::string& path);
// A rank's activation allocations and frees that carry an address, in time order (pairing them
// by address): rows (time_ns, address, bytes, module_id).
sql::Stmt activation_events_in_order(sql::Db& db, int rank);
// A rank's module and FSDP ranges that name a module, in phase `a` or `b`: rows (module_id, kind,
// phase, start_ns, end_ns, name).
sql::Stmt module_and_fsdp_ranges(sql::Db& db, int rank, RangePhase a, RangePhase b);
// What share of each unit's forward a full-checkpointing rerun repeats (SimSegment::rerun_share):
// up to where the last activation the unit's own backward frees is made (PyTorch's checkpoint
// stops there): the operator that made it on a CPU profile, the next sub-module's first kernel on
// a GPU profile. Units with nothing measured keep 1. profile_rerun.cpp.
void add_rerun_share_from_profile(ProfileInput& in, const std::string& path);
// Whether the sharded gradients outlive the optimizer step (zero_grad(set_to_none=False):
// SimModel::grads_kept): gradient memory live where every step used begins its forward, of at
// least 90 % of the model's sharded gradients. Sets it and returns it.
bool add_kept_grads_from_profile(ProfileInput& in, const std::string& path);
// Without FSDP2's ranges (SimpleFSDP, FSDP1, a GPU recording's NVTX): each unit's all-gathers per
// step from the collectives issued inside its modules; the step's gathers beyond what the model
// makes set SimUnit::extra_fwd_gathers (a prefetch under another unit's range is not one).
void add_gathers_from_profile(ProfileInput& in, const std::string& path);
// Each unit's parameters with gradients (SimUnit::trainable_params) from the reduce-scatters its
// modules issued in the steps used, where every one of them has its unit (LoRA).
void add_trainable_from_profile(ProfileInput& in, const std::string& path);

}  // namespace ss::sim
