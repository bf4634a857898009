// Shared JSON and text rendering of a simulation result (simulate, plan, the GUI's what-if view).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "profiler/sim/sim_inputs.h"
#include "profiler/sim/step_simulator.h"
#include "storage/json_writer.h"

namespace ss::sim {

double to_ms(TimeNs ns);
// Writes the result's fields into the currently open JSON object.
void write_result_fields(JsonWriter& j, const CompiledStep& step, const SimResult& r, bool per_unit);
// `cpu`: the ranks are CPU processes over gloo (a CPU profile's replay): said in those words, not
// as GPUs, NCCL and GPU idle.
void print_result_text(std::ostream& o, const CompiledStep& step, const SimResult& r, bool per_unit, bool cpu = false);
// What the measured step of a profile holds (compute / non-FSDP collectives / idle) and, for a
// window without step markers, which span was compared. Nothing when the input is not a profile.
void write_measured_fields(JsonWriter& j, const SimInputs& in);
void print_measured_text(std::ostream& o, const SimInputs& in);
// The unobserved step of a profile recorded with `record --steps A:B` and what the calibration to
// it did (the profiled step's slowdown, the host-time scale, the replay before and after); a
// note that predictions are of the profiled job when the profile has none. Nothing for a model.
void write_calibration_fields(JsonWriter& j, const SimInputs& in);
void print_calibration_text(std::ostream& o, const SimInputs& in);
// The same in one sentence for the GUI's what-if panel, "" for a profile without unobserved steps
// (or a model): "calibrated to the job without the profiler: 276.900 ms, the median of 3 unobserved
// steps (...); the profiled step 337.300 ms was +21.8% slower".
std::string calibration_summary(const SimInputs& in);

// How far the replay of a profile — its own plan at its own world size, on the chosen cluster — is
// from the measured step, and, when it is far, why that is likely, read from the inputs: a
// synthetic or simulated profile, a cluster not fitted to the profile's collectives (or none to fit
// it to), much GPU idle or non-FSDP communication in the measured step (replayed as measured, not
// modelled), few steps averaged, a window that is not a full step.
inline constexpr double kReplayWarnPct = 10.0;
// Whether the replay at the recorded plan issues the FSDP collectives each profiled step did. A
// count that differs says the replay does not model the loop, whatever its step time: a GAN's two
// backward passes with an optimizer step between them, steps that differ among themselves.
struct CollectiveCheck {
  bool checked = false;  // a measured or imported profile with step markers
  bool match = true;
  StepCollectives replay;           // the replay's per step
  StepCollectives fewest, most;     // the profile's steps used (equal when they agree)
  StepCollectives mean;             // their mean, rounded: compared on a GPU profile (sim_report.cpp)
  std::string warning;              // one sentence with the numbers and the likely cause; empty on a match
};
struct ReplayCheck {
  bool comparable = false;  // the input is a profile with a measured step
  TimeNs replay_ns = 0, measured_ns = 0;
  double error_pct = 0;     // (replay - measured) / measured, %
  bool far = false;         // |error_pct| > kReplayWarnPct
  std::vector<std::string> reasons;  // most telling first; empty unless far
  std::string warning;      // one sentence with the numbers and the reasons; empty unless far
  CollectiveCheck collectives;
};
// `replay`: the simulation of the profile's own plan at its own world size.
ReplayCheck check_replay(const SimInputs& in, const SimResult& replay, bool cluster_fitted);
// "replay_collectives": the replay's and the profile's counts per step, whether they match, and the
// warning when not. Nothing when the check did not apply.
void write_collective_check(JsonWriter& j, const CollectiveCheck& c);

}  // namespace ss::sim
