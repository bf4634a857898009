// Loading what `simulate` and `plan` need: a profile or a model description, a cluster model
// (optionally fitted to the profile's collectives), and a base plan.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "profiler/sim/cluster_model.h"
#include "profiler/sim/fsdp_plan.h"
#include "profiler/sim/model_description.h"
#include "profiler/sim/profile_extract.h"
#include "profiler/sim/sim_model.h"
#include "storage/types.h"

namespace ss {
struct Profile;
}

namespace ss::sim {

// A profiled step longer than this many times the median of the steps (three or more) is not the
// training step the replay stands for (a checkpoint save, a pause of the host): left out of the
// measured step (profile_extract.cpp, leave_out_long_steps).
inline constexpr double kLongStepFactor = 2.0;

struct SimInputRequest {
  std::string profile_path;  // IN (a .ssdb), or
  std::string model_path;    // --model M.json
  std::string cluster_path;  // --cluster C.json
  std::string plan_path;     // --plan P.json
  bool fit = false;          // fit the cluster's α/β to the profile's collectives
  // Fit when the profile has collectives the fit can use and the cluster has no collective costs
  // of its own (the built-in preset, or a file of host / per-unit figures only): `simulate`'s
  // default; otherwise the cluster stays as given. Ignored when `fit` is set.
  bool fit_if_available = false;
  int world_override = 0;    // --world N
  // false: the model is built without the description's activation_checkpointing (`plan --search`
  // tries every level as a plan knob).
  bool description_checkpointing = true;
  // A profile with unobserved steps (record --steps A:B): calibrate the replay to them, so that
  // predictions are of the job as it runs without the profiler. false: --as-profiled.
  bool calibrate_to_unobserved = true;
  // profile_path already read (ranges and collectives; memory counters are not needed), e.g. by
  // the app that shows it: used instead of reading the file's kernels and ranges a second time.
  std::shared_ptr<const Profile> loaded;
};

struct SimInputs {
  SimModel model;
  std::optional<ModelDescription> description;  // with --model: the description as written
  ClusterModel cluster;
  FsdpPlan plan;
  // A profile's own configuration where it is not per unit: HSDP's replicate degree, micro-batches
  // per step and their gradient sync (a default plan otherwise). Replays and calibrations use it;
  // `plan` starts from it where the plan file does not say otherwise.
  FsdpPlan recorded_plan;
  std::string source;        // what the model came from
  bool from_profile = false;
  OriginKind origin = OriginKind::Simulated;
  TimeNs measured_step_ns = 0;  // from a profile
  // From a profile: what the measured step (or window) holds, and whether it is a window cut from
  // a run (no step markers: the span of complete unit ranges is compared; profile_extract.h).
  bool window_only = false;
  TimeNs profile_span_ns = 0;
  TimeNs measured_compute_ns = 0, measured_other_comm_ns = 0, measured_idle_ns = 0;
  int other_collectives = 0;
  int steps_used = 0;        // steps the measured step time averages (profile_extract.h)
  int forward_only_steps_left_out = 0;  // steps holding an evaluation forward, not averaged (profile_extract.h)
  int long_steps_left_out = 0;          // steps over kLongStepFactor x the median (a checkpoint save), not averaged
  int frozen_units = 0;                 // units no backward goes through (SimUnit::frozen)
  int repeat_call_units = 0;            // units called more than once a pass (SimUnit::repeat_fwd_calls)
  TimeNs long_steps_ns = 0;             // their mean duration
  // FSDP's collectives of each step used and the steps with an optimizer step between two
  // backward passes (ProfileInput): check_replay compares the replay's with them.
  std::vector<StepCollectives> fsdp_collectives_per_step;
  int steps_with_optimizer_between_backwards = 0;
  std::string model_parallel;  // ProfileInput::model_parallel
  std::string pipeline;        // ProfileInput::pipeline
  int units_on_other_stages = 0;
  int rank = 0;                // the profile's representative rank
  int profile_world = 0;
  std::string gpu_name;
  bool fitted = false;
  FitReport fit;
  int fit_samples_available = 0;  // the profile's collectives that fit_cluster can use (0: nothing to fit to)
  ClusterModel unfitted_cluster;  // the cluster before --fit (equal to `cluster` without it)
  // Memory replay: the profile's measured peak (mean over the steps used, representative rank)
  // less the model's peak at the profile's own plan. Positive: what the model does not explain
  // (allocator slack, inputs), added as a constant "other" (model.other_memory_bytes). Negative:
  // the model over-explains, and its transient bytes (activations, temporaries) are scaled by
  // transient_memory_scale (< 1). Either way the replay's peak is the measured one and a what-if
  // moves it by what the model predicts.
  std::int64_t measured_peak_bytes = 0;
  // The mean per-step peak inside the optimizer's ranges (0: none); the model's optimizer phase is
  // fitted to it (model.optimizer_temp_bytes).
  std::int64_t measured_optimizer_peak_bytes = 0;
  // The model's output the training loop holds past the backward, as measured, before any
  // calibration: to the next pass's forward (SimSegment::caller_held_bytes) and only to the
  // backward's end (SimSegment::backward_held_bytes).
  std::int64_t measured_output_held_bytes = 0, measured_output_held_through_backward_bytes = 0;
  std::int64_t memory_calibration_bytes = 0;
  // Where the profile tells the phases apart: what the model leaves out in forward (and the
  // optimizer step) and in backward (SimModel::other_backward_bytes); -1: one constant.
  std::int64_t memory_calibration_forward_bytes = -1, memory_calibration_backward_bytes = -1;
  double transient_memory_scale = 1.0;
  // The unobserved step (record --steps A:B): the median wall time of the representative rank's
  // steps outside the capture window (the job without the profiler; 0: the profile has none).
  // When calibrated, the model's host time (a CPU run's compute and host gaps; a GPU run's idle
  // gaps, where the host was behind) is scaled by host_time_scale so that the profiled step's
  // extra time (measured_step_ns - unobserved_step_ns) is taken out of the replay: predictions
  // are then of the job as it runs unprofiled, and compared with unobserved_step_ns.
  // Only the steps after the window where there are enough of them (sim_inputs.cpp: those before a
  // window from a later step ran with the memory records on).
  TimeNs unobserved_step_ns = 0;
  int unobserved_steps = 0;
  // Unobserved steps that called the model more often than the fewest (an evaluation between
  // optimizer steps), not in the median: the replay stands for the training step alone.
  int unobserved_steps_left_out = 0;
  bool unobserved_after_window = false;
  bool calibrated = false;
  double host_time_scale = 1.0;
  TimeNs replay_as_profiled_ns = 0;  // the replay before the calibration (of the profiled step)
  TimeNs replay_calibrated_ns = 0;   // and after it
  // The step a replay or prediction is judged against: the unobserved one when calibrated.
  TimeNs reference_step_ns() const { return calibrated ? unobserved_step_ns : measured_step_ns; }
  // How much slower the profiled step was than the unobserved one, in % (0 without unobserved steps).
  double recording_slowdown_pct() const {
    return unobserved_step_ns > 0 && measured_step_ns > 0
               ? 100.0 * (double(measured_step_ns) - double(unobserved_step_ns)) / double(unobserved_step_ns)
               : 0.0;
  }
};

// Throws ProfileError for unreadable or malformed inputs (file and field named).
SimInputs load_sim_inputs(const SimInputRequest& req);

// Writes `text` to `path` through a temporary file renamed into place (no half-written output).
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace ss::sim
