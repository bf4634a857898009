// The Unshard (what-if) panel's state and re-simulation, without Qt: which FSDP units keep their
// parameters after forward (reshard_after_forward=False), activation checkpointing per unit,
// offload, parallelism around FSDP (tp, sp, cp, pp, ep, micro-batches), world size, GPUs per node,
// bucket caps (a default and per-bucket overrides), memory budget and cluster preset, with an
// undo/redo stack of whole states. Every change re-simulates synchronously (compile_step +
// simulate: milliseconds even for a 70B pipeline), so the numbers shown are always those of the
// current state, and undo gives back exactly the earlier numbers.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "profiler/sim/bucket_planner.h"
#include "profiler/sim/cluster_model.h"
#include "profiler/sim/fsdp_plan.h"
#include "profiler/sim/planner.h"
#include "profiler/sim/sim_inputs.h"
#include "profiler/sim/sim_report.h"
#include "profiler/sim/step_simulator.h"

namespace ss::unshard {

struct ClusterPreset {
  std::string name;  // "profile" or a file stem from resources/clusters
  sim::ClusterModel cluster;
  bool fitted = false;  // fitted to the profile's own collectives (`simulate --fit`)
};

// Everything the user can change. Equal states give equal predictions.
struct UnshardState {
  std::vector<char> keep;          // per SimModel unit: keep unsharded after forward
  int world_size = 1;
  int gpus_per_node = 8;
  double bucket_cap_mb = 0;        // default cap; 0 with no overrides: no auto-bucketing (one all-gather per unit)
  // Per-bucket caps by auto-bucket index (FsdpPlan::bucket_cap_mb's numeric keys). With overrides
  // but no default, the other buckets take the simulator's default (kInductorBucketCapMb).
  std::map<int, double> bucket_cap_overrides_mb;
  std::int64_t budget_bytes = 0;   // per-rank memory budget
  int preset = 0;                  // index into the session's presets
  std::string strategy = "manual"; // how `keep` was chosen, recorded in the exported plan file
  // Per SimModel unit: activation checkpointing, "none", "full" or a selective pattern (a
  // sub-module name, FsdpPlan::checkpoint's values). The root is always "none".
  std::vector<std::string> checkpoint;
  std::string offload = "none";    // "none", "optimizer" or "cpu" (FsdpPlan::offload)
  int offload_prefetch_depth = 1;
  bool pipelined_optimizer = false;
  sim::Parallelism parallel;       // tp, sp, cp + kind, pp + schedule + chunks, ep
  int micro_batches = 1;           // FsdpPlan::gradient_accumulation
  // Explicit buckets from a plan file applied to the panel (`plan --buckets`); empty: the profile's
  // own (the base plan's, read-only).
  std::vector<std::vector<std::string>> buckets;
  bool operator==(const UnshardState&) const = default;
};

struct Prediction {
  TimeNs step_ns = 0;
  TimeNs compute_ns = 0;
  TimeNs exposed_comm_ns = 0;
  std::int64_t peak_bytes = 0;
  std::int64_t budget_bytes = 0;
  std::int64_t gpu_capacity_bytes = 0;  // 0 when the device is unknown
  bool fits_budget = true;
  bool fits_gpu = true;
  // The profile's measured step (0: none): its unobserved step when it has some (record --steps
  // A:B), to which load_sim_inputs calibrated the replay (the job without the profiler).
  TimeNs measured_step_ns = 0;
  // The baseline ("as profiled"): the profile's own plan, simulated on the state's cluster (preset,
  // world size, GPUs per node), so that the difference from it is the plan's alone.
  TimeNs baseline_step_ns = 0;
  std::int64_t baseline_peak_bytes = 0;
  sim::SimResult baseline;
  // The replay: the profile's own plan at its recorded world size and GPUs per node on the chosen
  // preset, against the measured step; far (> 10 %) with the likely reasons (sim::check_replay).
  sim::ReplayCheck replay;
  bool preset_fitted = false;           // the chosen preset is fitted to the profile's collectives
  std::vector<TimeNs> exposed_ag_ns;    // per SimModel unit: compute-lane wait on its all-gathers
  std::vector<TimeNs> host_copy_ns;     // per SimModel unit: its offload copies (both directions) in the step shown
  std::vector<int> bucket_of_unit;      // per SimModel unit: auto-bucket index, -1 when not auto-bucketed
  int bucket_count = 0;                 // auto-buckets formed
  // Per SimModel unit: the explicit bucket list of two or more units holding it (a plan file's
  // `buckets`, e.g. from plan --buckets, or the base plan's), -1 when none; and its members.
  std::vector<int> listed_bucket_of_unit;
  std::vector<std::vector<std::string>> listed_buckets;
  std::vector<std::vector<std::string>> checkpoint_choices;  // per SimModel unit (UnshardSession::checkpoint_choices)
  sim::CompiledStep step;               // as simulated (for the plan file)
  sim::SimResult result;
};

// compile_step's cap for a bucket that neither an override nor "default" names (inductor's).
inline constexpr double kInductorBucketCapMb = 2000.0;

// Time the compute lane waits, before each compute op, for an all-gather of the same exec unit
// that ended inside that gap; summed per exec unit. (The simulator reports only the total.)
std::vector<TimeNs> exposed_all_gather_per_exec(const sim::SimResult& r, std::size_t exec_units);

// Per exec unit: busy time of its host-to-device and device-to-host copies (offload).
std::vector<TimeNs> host_copy_per_exec(const sim::SimResult& r, std::size_t exec_units);

// Cluster presets: the given base (the profile's own configuration) first, then every *.json in
// `dir` (resources/clusters), sorted by name. Unreadable files are skipped.
std::vector<ClusterPreset> load_cluster_presets(const sim::ClusterModel& base, const std::string& dir);
// The user's cluster file at `path` among `presets`: one with collective costs is one more preset;
// one of measured host or per-unit figures only (shardscope.measure_host, measure_fsdp_units) is
// preset `start` with those figures, inserted after it. Returns the new preset's index. Throws
// ProfileError for a file that cannot be read.
int add_measured_preset(std::vector<ClusterPreset>& presets, int start, const std::string& path);

class UnshardSession {
 public:
  // Throws ProfileError when the profile cannot be simulated (no FSDP units: sim::NoFsdpUnitsError,
  // unreadable ...). `initial_preset` is the preset of the first state (not an undoable change).
  UnshardSession(sim::SimInputs inputs, std::vector<ClusterPreset> presets, int initial_preset = 0);
  // The profile's own configuration; presets: the profile's (unfitted), the same fitted to its
  // collectives when it has any the fit can use — then the default, as in `shardscope simulate` —
  // and the files in `clusters_dir`.
  // `loaded`: the profile at `path` already read (the app's), so its kernels and ranges are not
  // read a second time (seconds on a big profile).
  // `measured_cluster` (`gui --cluster`): a cluster file of the user's, the preset chosen at the
  // start (add_measured_preset).
  static UnshardSession from_profile(const std::string& path, const std::string& clusters_dir = "",
                                     std::shared_ptr<const Profile> loaded = nullptr, const std::string& measured_cluster = "");
  // A model description (resources/models/*.json) at `world` GPUs (0: the description's or the
  // default cluster's): what tensor, context and expert parallelism need (a profile has no layer
  // shapes). Presets: the default cluster, then the files in `clusters_dir`.
  static UnshardSession from_model(const std::string& path, int world, const std::string& clusters_dir = "",
                                   const std::string& measured_cluster = "");

  const sim::SimInputs& inputs() const { return in_; }
  const std::vector<ClusterPreset>& presets() const { return presets_; }
  const UnshardState& state() const { return state_; }
  const Prediction& prediction() const { return pred_; }
  // Moves on with every new prediction (a change, undo, redo), not with a refused or empty change.
  std::uint64_t revision() const { return revision_; }
  int unit_count() const { return static_cast<int>(in_.model.units.size()); }
  const sim::SimUnit& unit(int u) const { return in_.model.units[static_cast<std::size_t>(u)]; }
  // True for the root, which FSDP2 never reshards: its box is shown checked and disabled.
  bool unit_fixed(int u) const { return unit(u).is_root; }
  // Checkpointing choices of a unit: "none", "full" and one selective pattern per named sub-module
  // of its segments (model descriptions have them, profiles do not). Empty for the root and for a
  // unit that checkpointing would not change (it saves no more than its input).
  const std::vector<std::string>& checkpoint_choices(int u) const;
  // Tensor, context and expert parallelism need layer shapes (a model description).
  bool takes_model_parallelism() const { return in_.model.has_parallel_shapes; }

  // Each setter is one undoable change (a no-op when nothing changes); all re-simulate.
  // A change that the simulator rejects (e.g. an impossible world size) throws ProfileError and
  // leaves the state as it was.
  void set_keep(int unit, bool keep);
  void set_world_size(int n);
  void set_gpus_per_node(int n);
  void set_bucket_cap_mb(double mb);  // the default cap; 0: off
  // The cap of auto-bucket `bucket` (index in forward order); mb <= 0 removes the override.
  void set_bucket_cap_override(int bucket, double mb);
  void clear_bucket_cap_overrides();
  // The cap that applies to auto-bucket `bucket` in the current state (MB): its override, else the
  // default, else the simulator's; 0 when auto-bucketing is off.
  double bucket_cap_of(int bucket) const;
  bool bucketing_on() const { return state_.bucket_cap_mb > 0 || !state_.bucket_cap_overrides_mb.empty(); }
  void set_budget_bytes(std::int64_t b);
  void set_preset(int i);
  // Activation checkpointing of one unit ("none", "full" or one of checkpoint_choices).
  void set_checkpoint(int unit, const std::string& mode);
  // Every unit that can take `mode` (others stay as they are); one undoable change.
  void set_checkpoint_all(const std::string& mode);
  void set_offload(const std::string& mode);  // "none", "optimizer" or "cpu"; else ProfileError
  void set_offload_prefetch_depth(int k);     // >= 1
  void set_pipelined_optimizer(bool on);
  // Degrees >= 1, cp_kind and pp_schedule as FsdpPlan's; ProfileError otherwise or when the
  // simulator refuses the combination (e.g. tp on a profile, tp x cp x pp not dividing the world).
  void set_parallelism(const sim::Parallelism& par);
  void set_micro_batches(int n);
  void apply(UnshardState next, const std::string& label);
  // Restores what a plan file (plan_file_json's form, e.g. a saved comparison's) says about the
  // panel's controls: kept units, bucket caps, checkpointing, offload, parallelism, micro-batches,
  // the world size when the plan names one, and the strategy and budget it recorded; the rest
  // stays. One undoable change. Throws ProfileError for
  // malformed JSON or modules this profile does not have (`where` names the source in messages).
  void apply_plan_file_json(const std::string& json, const std::string& where);

  bool can_undo() const { return !undo_.empty(); }
  bool can_redo() const { return !redo_.empty(); }
  std::string undo_label() const { return undo_.empty() ? "" : undo_.back().label; }
  std::string redo_label() const { return redo_.empty() ? "" : redo_.back().label; }
  bool undo();
  bool redo();

  // Runs the cost planner (plan_unshard) on the current configuration with no unit kept, under
  // the budget, and applies its choice as one undoable change. Returns the planner's outcome.
  sim::PlanOutcome plan_automatically(sim::Strategy strategy = sim::Strategy::Cost);
  // Runs the bucket planner (sim::plan_buckets: merges of units gathered one after the other that
  // shorten the step, within the budget) on the current plan and applies its buckets as one
  // undoable change, the caps resolved into lists. Returns the planner's outcome.
  sim::BucketOutcome plan_buckets_automatically();

  // The plan of the current state: the profile's base plan plus the kept units and settings.
  sim::FsdpPlan plan() const { return plan_for(state_); }
  sim::ClusterModel cluster() const { return cluster_for(state_); }
  // The plan file, identical in form to `shardscope plan -o` (profiler/sim/plan_file.h).
  std::string plan_file_json() const;
  // plan() with the buckets it forms as modules (FsdpPlan::fsdp2_buckets: its caps' and the job's
  // own groups), for the plan file and the generated Python: FSDP2 has no caps.
  sim::FsdpPlan plan_for_export() const;
  void export_plan(const std::string& path) const;  // atomically; throws ProfileError on I/O errors

 private:
  struct Entry {
    UnshardState state;
    std::string label;
  };
  sim::FsdpPlan plan_for(const UnshardState& s) const;
  sim::ClusterModel cluster_for(const UnshardState& s) const;
  // The profile's own plan on preset `preset` with this world size and GPUs per node (cached).
  const sim::SimResult& baseline_for(int preset, int world, int per_node) const;
  Prediction predict(const UnshardState& s) const;
  void bucket_indices(Prediction& p, const UnshardState& s) const;

  sim::SimInputs in_;
  std::vector<ClusterPreset> presets_;
  UnshardState state_;
  Prediction pred_;
  std::uint64_t revision_ = 0;
  std::vector<Entry> undo_, redo_;  // each holds the state to go back (forward) to
  int profile_world_ = 1, profile_per_node_ = 8;  // the configuration the profile was recorded at
  mutable std::map<std::tuple<int, int, int>, sim::SimResult> baselines_;  // by (preset, world, GPUs per node)
};

}  // namespace ss::unshard
