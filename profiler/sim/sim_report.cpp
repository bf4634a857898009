#include "profiler/sim/sim_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "storage/cpu_device.h"
#include "storage/units.h"

namespace ss::sim {

double to_ms(TimeNs ns) { return double(ns) / 1e6; }

namespace {
std::string unit_label(const CompiledStep& s, int e) {
  if (e < 0) return "(optimizer)";
  const std::string& n = s.units[static_cast<std::size_t>(e)].name;
  return n.empty() ? "(root)" : n;
}
const char* phase_name(Phase p) { return p == Phase::Forward ? "forward" : p == Phase::Backward ? "backward" : "optimizer"; }
std::string policy(int m) { return m == kKeepUnsharded ? "false" : m == kReshard ? "true" : std::to_string(m); }
// What a checkpointed segment's rerun repeats of its forward, over all of them (a rerun stops
// after the last tensor the backward needs: SimSegment::rerun_share).
double rerun_share_of_forward(const CompiledStep& s) {
  double rerun = 0, forward = 0;
  for (const auto& sg : s.segments)
    if (sg.recompute_ns > 0) rerun += double(sg.recompute_ns), forward += double(sg.fwd_ns + sg.fwd_idle_ns);
  return forward > 0 ? rerun / forward : 0;
}
// How the micro-batches of a step differ from separate steps, when they do.
std::string accumulation_note(const CompiledStep& s) {
  if (s.micro_batches < 2) return "";
  const bool reduced_last = !s.sync_every_microbatch;
  const bool held = s.hold_params_until_last_backward && s.stages.empty();  // (a pipeline's stages hold on their own)
  if (!reduced_last && !held) return "";
  return std::string(" (") + (reduced_last ? "gradients reduced on the last only" : "") + (reduced_last && held ? "; " : "") +
         (held ? "parameters kept unsharded between them" : "") + ")";
}
}  // namespace

void write_result_fields(JsonWriter& j, const CompiledStep& s, const SimResult& r, bool per_unit) {
  j.kv("world_size", s.world).kv("shard_group", s.shard).kv("replicate", s.replicate).kv("micro_batches", s.micro_batches);
  j.kv("step_time_ms", to_ms(r.step_ns))
      .kv("compute_ms", to_ms(r.compute_busy_ns))
      .kv("other_comm_ms", to_ms(r.other_comm_ns))
      .kv("idle_ms", to_ms(r.idle_ns))
      .kv("exposed_comm_ms", to_ms(r.exposed_comm_ns))
      .kv("comm_busy_ms", to_ms(r.comm_busy_ns))
      .kv("all_gathers", r.all_gathers)
      .kv("reduce_scatters", r.reduce_scatters)
      .kv("all_reduces", r.all_reduces)
      .kv("peak_memory_bytes", r.peak_bytes);
  // New knobs' figures only when used, so plans without them report exactly as before.
  if (r.recomputes > 0)
    j.kv("recomputes", r.recomputes).kv("recompute_ms", to_ms(r.recompute_ns)).kv("recompute_share_of_forward", rerun_share_of_forward(s));
  if (s.merged_host_saved_ns > 0) j.kv("merged_units_host_saved_ms_per_pass", to_ms(s.merged_host_saved_ns));
  if (s.offload != Offload::None)
    j.kv("offload", s.offload == Offload::Cpu ? "cpu" : "optimizer")
        .kv("host_copy_ms", to_ms(r.host_copy_ns))
        .kv("host_copy_bytes", r.host_copy_bytes)
        .kv("cpu_optimizer_ms", to_ms(r.cpu_optimizer_ns));
  if (!s.par.is_1d()) {
    const Parallelism& q = s.par;
    j.key("parallelism").begin_object().kv("dp", s.dp).kv("tp", q.tp).kv("sequence_parallel", q.sequence_parallel).kv("cp", q.cp)
        .kv("cp_kind", q.cp_kind).kv("pp", q.pp).kv("pp_schedule", q.pp_schedule).kv("pp_virtual", q.pp_virtual).kv("ep", q.ep).end_object();
    j.kv("tp_collectives", r.tp_collectives).kv("tp_bytes", r.tp_bytes).kv("cp_collectives", r.cp_collectives).kv("cp_bytes", r.cp_bytes)
        .kv("ep_collectives", r.ep_collectives).kv("ep_bytes", r.ep_bytes).kv("model_parallel_ms", to_ms(r.model_parallel_ns))
        .kv("model_parallel_exposed_ms", to_ms(r.model_parallel_exposed_ns));
  }
  if (!r.stages.empty()) {
    j.kv("p2p_sends", r.p2p_sends).kv("p2p_bytes", r.p2p_bytes).kv("bubble_ms", to_ms(r.bubble_ns)).kv("shown_stage", r.shown_stage);
    j.key("stages").begin_array();
    for (const auto& st : r.stages)
      j.begin_object().kv("units", st.units).kv("forward_ms", to_ms(st.fwd_ns)).kv("backward_ms", to_ms(st.bwd_ns))
          .kv("busy_ms", to_ms(st.busy_ns)).kv("end_ms", to_ms(st.end_ns)).kv("max_in_flight", st.max_in_flight)
          .kv("peak_memory_bytes", st.peak_bytes).end_object();
    j.end_array();
  }
  j.key("peak_memory").begin_object().kv("time_ms", to_ms(r.peak_time)).kv("module", unit_label(s, r.peak_exec)).kv("phase", phase_name(r.peak_phase));
  j.key("by_category").begin_object();
  for (int c = 0; c < kMemCatCount; ++c) j.kv(mem_cat_key(static_cast<MemCat>(c)), r.peak_by_category[static_cast<std::size_t>(c)]);
  j.end_object().end_object();
  if (!per_unit) return;
  j.key("units").begin_array();
  for (std::size_t e = 0; e < s.units.size(); ++e) {
    const auto& u = s.units[e];
    j.begin_object()
        .kv("name", u.name)
        .kv("params", u.params)
        .kv("trainable_params", u.trainable)  // with gradients: fewer under LoRA, none in a frozen model
        .kv("reshard_after_forward", policy(u.reshard))
        .kv("all_gather_ms", to_ms(u.ag_ns))
        .kv("backward_all_gather_ms", to_ms(u.ag_bwd_ns))
        .kv("reduce_scatter_ms", to_ms(u.rs_ns));
    if (u.checkpoint != Checkpoint::None) j.kv("checkpoint", u.checkpoint == Checkpoint::Full ? "full" : "selective");
    // What its backward holds at its highest above its start, and the gradient it is handed
    // (SimSegment::bwd_temp_bytes, bwd_incoming_bytes).
    std::int64_t highest = 0, handed = 0;
    for (const auto& sg : s.segments)
      if (sg.exec == static_cast<int>(e)) highest += sg.bwd_temp_bytes, handed += sg.bwd_incoming_bytes;
    j.kv("backward_transient_bytes", highest).kv("backward_handed_gradient_bytes", handed);
    if (e < r.unit_memory.size()) {
      j.kv("own_peak_bytes", r.unit_memory[e].own_peak);
      j.key("memory_at_peak").begin_object();
      for (int c = 0; c < kMemCatCount; ++c) j.kv(mem_cat_key(static_cast<MemCat>(c)), r.unit_memory[e].at_peak[static_cast<std::size_t>(c)]);
      j.end_object();
    }
    j.end_object();
  }
  j.end_array();
}

void print_result_text(std::ostream& o, const CompiledStep& s, const SimResult& r, bool per_unit, bool cpu) {
  char line[256];
  o << "World        " << s.world << (cpu ? " CPU ranks, gloo" : " GPUs") << " (shard group " << s.shard << ", replicate "
    << s.replicate;
  if (s.recorded_model_parallel > 1)  // a profile's tensor parallelism beside FSDP
    o << ", " << s.recorded_model_parallel << " model-parallel ranks as recorded, their collectives replayed as measured";
  o << "), " << s.micro_batches << (s.micro_batches == 1 ? " micro-batch" : " micro-batches")
    << accumulation_note(s) << "\n";
  std::snprintf(line, sizeof line, "Step time    %.3f ms (compute %.3f ms, exposed communication %.3f ms, %s busy %.3f ms)\n",
                to_ms(r.step_ns), to_ms(r.compute_busy_ns), to_ms(r.exposed_comm_ns), cpu ? "gloo" : "NCCL", to_ms(r.comm_busy_ns));
  o << line;
  if (r.other_comm_ns > 0 || r.idle_ns > 0) {
    std::snprintf(line, sizeof line, "  replayed as measured: non-FSDP collectives %.3f ms, %s %.3f ms\n", to_ms(r.other_comm_ns),
                  cpu ? "training thread idle" : "GPU idle", to_ms(r.idle_ns));
    o << line;
  }
  if (r.recomputes > 0) {
    std::snprintf(line, sizeof line, "Recompute    %d forward rerun(s), %.3f ms (activation checkpointing; %.0f %% of those units' forward)\n",
                  r.recomputes, to_ms(r.recompute_ns), 100.0 * rerun_share_of_forward(s));
    o << line;
  }
  if (s.merged_host_saved_ns > 0) {
    std::snprintf(line, sizeof line, "Buckets      their merged units' host cost taken out: %.3f ms per pass (the cluster's measured FSDP per-unit cost)\n",
                  to_ms(s.merged_host_saved_ns));
    o << line;
  }
  if (s.offload != Offload::None) {
    std::snprintf(line, sizeof line, "Offload      %s: host copies %.3f ms (%s), CPU optimizer %.3f ms\n",
                  s.offload == Offload::Cpu ? "cpu" : "optimizer", to_ms(r.host_copy_ns), format_bytes(r.host_copy_bytes).c_str(),
                  to_ms(r.cpu_optimizer_ns));
    o << line;
  }
  o << "Collectives  " << r.all_gathers << " all-gather, " << r.reduce_scatters << " reduce-scatter, " << r.all_reduces
    << " all-reduce\n";
  if (!s.par.is_1d()) {
    const Parallelism& q = s.par;
    std::snprintf(line, sizeof line, "Parallelism  dp %d x tp %d%s x cp %d (%s) x pp %d (%s%s) ; ep %d\n", s.dp, q.tp,
                  q.sequence_parallel ? " (SP)" : "", q.cp, q.cp_kind.c_str(), q.pp, q.pp_schedule.c_str(),
                  q.pp_virtual > 1 ? (", " + std::to_string(q.pp_virtual) + " chunks").c_str() : "", q.ep);
    o << line;
    std::snprintf(line, sizeof line, "  TP %d collectives (%s), CP %d (%s), EP %d (%s); exposed %.3f ms\n", r.tp_collectives,
                  format_bytes(r.tp_bytes).c_str(), r.cp_collectives, format_bytes(r.cp_bytes).c_str(), r.ep_collectives,
                  format_bytes(r.ep_bytes).c_str(), to_ms(r.model_parallel_exposed_ns));
    o << line;
  }
  if (!r.stages.empty()) {
    std::snprintf(line, sizeof line, "Pipeline     %zu stages, bubble %.3f ms on the shown stage %d; %d sends (%s)\n", r.stages.size(),
                  to_ms(r.bubble_ns), r.shown_stage, r.p2p_sends, format_bytes(r.p2p_bytes).c_str());
    o << line;
    for (std::size_t i = 0; i < r.stages.size(); ++i) {
      const auto& st = r.stages[i];
      std::snprintf(line, sizeof line, "  stage %zu: F %.3f ms, B %.3f ms per micro-batch, ends %.3f ms, %d in flight, peak %s  (%s)\n", i,
                    to_ms(st.fwd_ns), to_ms(st.bwd_ns), to_ms(st.end_ns), st.max_in_flight, format_bytes(st.peak_bytes).c_str(),
                    st.units.c_str());
      o << line;
    }
  }
  o << "Peak memory  " << format_bytes(r.peak_bytes) << " at " << to_ms(r.peak_time) << " ms, in " << unit_label(s, r.peak_exec)
    << " (" << phase_name(r.peak_phase) << ")\n";
  for (int c = 0; c < kMemCatCount; ++c) {
    const auto v = r.peak_by_category[static_cast<std::size_t>(c)];
    if (v == 0) continue;
    std::snprintf(line, sizeof line, "  %-22s %12s\n", mem_cat_key(static_cast<MemCat>(c)), format_bytes(v).c_str());
    o << line;
  }
  if (!per_unit) return;
  o << "\nUnits (forward order)\n  reshard  all-gather  bwd AG      RS          own peak     name\n";
  for (int e : s.fwd_order) {
    const auto& u = s.units[static_cast<std::size_t>(e)];
    std::snprintf(line, sizeof line, "  %-7s  %8.3f ms %8.3f ms %8.3f ms %12s  %s\n", policy(u.reshard).c_str(), to_ms(u.ag_ns),
                  to_ms(u.ag_bwd_ns), to_ms(u.rs_ns),
                  static_cast<std::size_t>(e) < r.unit_memory.size() ? format_bytes(r.unit_memory[static_cast<std::size_t>(e)].own_peak).c_str() : "-",
                  unit_label(s, e).c_str());
    o << line;
  }
}

void write_measured_fields(JsonWriter& j, const SimInputs& in) {
  if (!in.from_profile || in.measured_step_ns <= 0) return;
  j.key("measured_breakdown")
      .begin_object()
      .kv("compute_ms", to_ms(in.measured_compute_ns))
      .kv("other_comm_ms", to_ms(in.measured_other_comm_ns))
      .kv("idle_ms", to_ms(in.measured_idle_ns))
      .kv("fsdp_comm_only_ms", to_ms(in.measured_step_ns - in.measured_compute_ns - in.measured_other_comm_ns - in.measured_idle_ns))
      .kv("other_collectives", in.other_collectives)
      .kv("steps_used", in.steps_used)
      .kv("forward_only_steps_left_out", in.forward_only_steps_left_out)
      .kv("long_steps_left_out", in.long_steps_left_out)
      .kv("long_steps_ms", to_ms(in.long_steps_ns))
      .kv("frozen_units", in.frozen_units)
      .kv("repeat_call_units", in.repeat_call_units)
      .kv("model_parallel", in.model_parallel)
      .kv("pipeline", in.pipeline)
      .kv("units_on_other_stages", in.units_on_other_stages)
      .kv("model_parallel_modelled", in.model.recorded_model_parallel > 1)  // FSDP's collectives told apart
      .kv("peak_memory_bytes", in.measured_peak_bytes)
      .kv("memory_calibration_bytes", in.memory_calibration_bytes)
      .kv("memory_calibration_forward_bytes", in.memory_calibration_forward_bytes)
      .kv("memory_calibration_backward_bytes", in.memory_calibration_backward_bytes)
      .kv("transient_memory_scale", in.transient_memory_scale)
      .kv("optimizer_peak_memory_bytes", in.measured_optimizer_peak_bytes)
      .kv("optimizer_temp_bytes", in.model.optimizer_temp_bytes)
      .kv("output_held_to_next_forward_bytes", in.measured_output_held_bytes)
      .kv("output_held_through_backward_bytes", in.measured_output_held_through_backward_bytes)
      .kv("sharded_grads_kept", in.model.grads_kept)  // zero_grad(set_to_none=False), as the profile shows
      .kv("sharded_grads_freed_before_backward", in.model.grads_freed_before_backward)  // zero_grad() after the forward
      .kv("other_comm_scales_with_world", in.model.other_comm_world > 0)  // false: no sizes, replayed as measured
      .end_object();
  if (in.window_only) {
    j.key("measured_window")
        .begin_object()
        .kv("span_ms", to_ms(in.measured_step_ns))
        .kv("profile_span_ms", to_ms(in.profile_span_ns))
        .kv("note", "no step markers: measured and simulated cover the span of complete FSDP unit ranges; units cut "
                    "by the window's edges are left out. A window replay, not a full-step prediction.")
        .end_object();
  }
}

void print_measured_text(std::ostream& o, const SimInputs& in) {
  if (!in.from_profile || in.measured_step_ns <= 0) return;
  char line[256];
  // The time is a step's mean; the count is over the steps averaged.
  std::snprintf(line, sizeof line, "  measured:  compute %.3f ms, non-FSDP collectives %.3f ms (%d in %d step%s), %s %.3f ms\n",
                to_ms(in.measured_compute_ns), to_ms(in.measured_other_comm_ns), in.other_collectives,
                std::max(1, in.steps_used), in.steps_used == 1 ? "" : "s",
                is_cpu_device(in.gpu_name) ? "training thread idle" : "GPU idle", to_ms(in.measured_idle_ns));
  o << line;
  if (in.forward_only_steps_left_out > 0) {
    std::snprintf(line, sizeof line,
                  "  %d step%s holding a forward without backward (an evaluation under no_grad) left out: the measured step "
                  "is the mean of the other %d\n",
                  in.forward_only_steps_left_out, in.forward_only_steps_left_out == 1 ? "" : "s", in.steps_used);
    o << line;
  }
  if (in.frozen_units > 0) {
    std::snprintf(line, sizeof line,
                  "  %d FSDP unit%s no backward goes through (a frozen model under no_grad: a teacher, a reference model): "
                  "gathered in forward only, nothing reduced\n",
                  in.frozen_units, in.frozen_units == 1 ? "" : "s");
    o << line;
  }
  if (!in.pipeline.empty())
    o << "  pipelined (" << in.pipeline << "): rank " << in.rank << "'s stages replayed, "
      << in.units_on_other_stages << " FSDP unit" << (in.units_on_other_stages == 1 ? "" : "s")
      << " on other ranks' stages left out; the schedule, its sends and receives as measured (a profile's replay does not "
         "model the pipeline: `simulate --model M.json` with \"parallelism\": {\"pp\": N} does)\n";
  if (in.repeat_call_units > 0) {
    std::snprintf(line, sizeof line,
                  "  %d FSDP unit%s called more than once a pass (%s): gathered at each call while resharded after "
                  "forward, and again for each backward\n",
                  in.repeat_call_units, in.repeat_call_units == 1 ? "" : "s",
                  in.pipeline.empty() ? "a model run on two inputs, no_grad rollouts before the training forward"
                                      : "once a micro-batch of the pipeline's");
    o << line;
  }
  if (in.long_steps_left_out > 0) {
    std::snprintf(line, sizeof line,
                  "  %d step%s over %gx the median step (%.3f ms on average: a checkpoint save, a pause of the job) left "
                  "out: the measured step is the mean of the other %d\n",
                  in.long_steps_left_out, in.long_steps_left_out == 1 ? "" : "s", kLongStepFactor, to_ms(in.long_steps_ns),
                  in.steps_used);
    o << line;
  }
  if (in.measured_peak_bytes > 0) {
    o << "  measured peak memory " << format_bytes(in.measured_peak_bytes)
      << (is_cpu_device(in.gpu_name) ? " (the job's tensors: gloo's transport buffers left out)" : "");
    if (in.memory_calibration_bytes >= 0 && in.memory_calibration_forward_bytes >= 0) {
      o << "; not modelled (inputs, allocator) " << format_bytes(in.memory_calibration_forward_bytes) << " in forward, "
        << format_bytes(in.memory_calibration_backward_bytes) << " in backward, kept as 'other' in every what-if\n";
    } else if (in.memory_calibration_bytes >= 0) {
      o << "; not modelled (inputs, allocator) " << format_bytes(in.memory_calibration_bytes) << ", kept as 'other' in every what-if\n";
    } else if (in.transient_memory_scale < 1) {
      std::snprintf(line, sizeof line, "; the model's was %s more: its activations and temporaries scaled by %.4f in every what-if\n",
                    format_bytes(-in.memory_calibration_bytes).c_str(), in.transient_memory_scale);
      o << line;
    } else {
      o << "; the model's persistent state alone is " << format_bytes(-in.memory_calibration_bytes)
        << " more (memory events that miss the parameters?): not calibrated\n";
    }
  }
  if (in.model.grads_freed_before_backward)
    o << "  sharded gradients live through the forward (zero_grad() after it, before the backward): freed there and made "
         "again by the reduce-scatters in every what-if\n";
  else if (in.model.grads_kept)
    o << "  sharded gradients kept from step to step (zero_grad(set_to_none=False)): held the whole step in every what-if\n";
  // Said where it matters (0.5 % of the peak or more), not for the loss scalar every loop keeps.
  if (200 * (in.measured_output_held_bytes + in.measured_output_held_through_backward_bytes) >= in.measured_peak_bytes)
    o << "  the training loop holds the model's output past the backward: "
      << format_bytes(in.measured_output_held_bytes) << " to the next forward's end (`logits = model(x)`), "
      << format_bytes(in.measured_output_held_through_backward_bytes)
      << " to the backward's end; held so in every what-if (`del` it once the loss is computed to free it for the backward)\n";
  if (in.measured_optimizer_peak_bytes > 0) {
    o << "  measured optimizer step memory " << format_bytes(in.measured_optimizer_peak_bytes) << ": "
      << format_bytes(in.model.optimizer_temp_bytes)
      << " more than the model holds then (the optimizer's intermediates, outputs kept to the next step), held in every what-if\n";
  }
  if (in.window_only) {
    std::snprintf(line, sizeof line,
                  "Window       no step markers: compared over the %.3f ms span of complete unit ranges (of %.3f ms recorded);\n"
                  "             a window replay, not a full-step prediction\n",
                  to_ms(in.measured_step_ns), to_ms(in.profile_span_ns));
    o << line;
  }
}

void write_calibration_fields(JsonWriter& j, const SimInputs& in) {
  if (!in.from_profile || in.measured_step_ns <= 0) return;
  j.key("unobserved")
      .begin_object()
      .kv("steps", in.unobserved_steps)
      .kv("steps_left_out_for_model_calls", in.unobserved_steps_left_out)
      .kv("after_window_only", in.unobserved_after_window);
  if (in.unobserved_step_ns > 0) {
    j.kv("step_time_ms", to_ms(in.unobserved_step_ns))
        .kv("profiled_step_time_ms", to_ms(in.measured_step_ns))
        .kv("recording_slowdown_pct", in.recording_slowdown_pct());
  }
  j.kv("calibrated", in.calibrated);
  if (in.calibrated) {
    j.kv("host_time_scale", in.host_time_scale)
        .kv("replay_as_profiled_ms", to_ms(in.replay_as_profiled_ns))
        .kv("replay_calibrated_ms", to_ms(in.replay_calibrated_ns));
  }
  j.end_object();
}

namespace {

// "median of 3 step(s) outside the capture window; 3 that called the model more often (an
// evaluation) left out"
std::string unobserved_median_of(const SimInputs& in) {
  char text[240];
  std::snprintf(text, sizeof text, "median of %d step(s) %s the capture window", in.unobserved_steps,
                in.unobserved_after_window ? "after" : "outside");
  std::string s = text;
  if (in.unobserved_steps_left_out > 0)
    s += "; " + std::to_string(in.unobserved_steps_left_out) + " that called the model more often (an evaluation) left out";
  return s;
}

}  // namespace

std::string calibration_summary(const SimInputs& in) {
  if (!in.from_profile || in.measured_step_ns <= 0 || in.unobserved_step_ns <= 0) return {};
  char text[200];
  std::snprintf(text, sizeof text, "%.3f ms (", to_ms(in.unobserved_step_ns));
  std::string s = std::string(in.calibrated ? "calibrated to the job without the profiler: "
                                            : "not calibrated (as profiled); the job without the profiler: ") +
                  text + unobserved_median_of(in) + ")";
  std::snprintf(text, sizeof text, "; the profiled step %.3f ms was %+.1f%% from it", to_ms(in.measured_step_ns),
                in.recording_slowdown_pct());
  return s + text;
}

void print_calibration_text(std::ostream& o, const SimInputs& in) {
  if (!in.from_profile || in.measured_step_ns <= 0) return;
  char line[320];
  if (in.unobserved_step_ns <= 0) {
    o << "Unobserved   none in the profile: predictions are of the job as recorded (record --steps A:B times the "
         "steps it does not profile)\n";
    return;
  }
  std::snprintf(line, sizeof line, "Unobserved   %.3f ms (%s); the profiled step %.3f ms is %+.1f%% from it\n",
                to_ms(in.unobserved_step_ns), unobserved_median_of(in).c_str(), to_ms(in.measured_step_ns),
                in.recording_slowdown_pct());
  o << line;
  if (in.calibrated) {
    std::snprintf(line, sizeof line,
                  "Calibrated   host time x%.4f: the replay %.3f ms -> %.3f ms; predictions are of the job without the "
                  "profiler (--as-profiled: as recorded)\n",
                  in.host_time_scale, to_ms(in.replay_as_profiled_ns), to_ms(in.replay_calibrated_ns));
  } else {
    std::snprintf(line, sizeof line, "Calibrated   no (--as-profiled): predictions are of the job as recorded\n");
  }
  o << line;
}

namespace {

CollectiveCheck check_collectives(const SimInputs& in, const SimResult& replay) {
  CollectiveCheck c;
  c.checked = in.from_profile && (in.origin == OriginKind::Measured || in.origin == OriginKind::Imported) &&
              !in.window_only && !in.fsdp_collectives_per_step.empty();
  if (!c.checked) return c;
  c.replay = {replay.all_gathers, replay.reduce_scatters};
  c.fewest = c.most = in.fsdp_collectives_per_step.front();
  for (const auto& n : in.fsdp_collectives_per_step) {
    c.fewest = {std::min(c.fewest.all_gathers, n.all_gathers), std::min(c.fewest.reduce_scatters, n.reduce_scatters)};
    c.most = {std::max(c.most.all_gathers, n.all_gathers), std::max(c.most.reduce_scatters, n.reduce_scatters)};
  }
  // A CPU rank runs a collective in the step that issued it: every step must match. A GPU runs it
  // behind the host ranges that bound the steps, by as much as the host is ahead, so one near a
  // boundary may fall in the next step: the steps' mean (rounded) is compared, and steps that
  // differ are no finding of their own.
  const double steps = double(in.fsdp_collectives_per_step.size());
  double all_gathers = 0, reduce_scatters = 0;
  for (const auto& n : in.fsdp_collectives_per_step) all_gathers += n.all_gathers, reduce_scatters += n.reduce_scatters;
  c.mean = {static_cast<int>(std::lround(all_gathers / steps)), static_cast<int>(std::lround(reduce_scatters / steps))};
  const bool each_step = is_cpu_device(in.gpu_name);
  c.match = each_step ? c.fewest == c.most && c.replay == c.most : c.replay == c.mean;
  if (c.match) return c;
  char buf[480];
  if (!each_step || c.fewest == c.most)
    std::snprintf(buf, sizeof buf, "the replay issues %d all-gathers and %d reduce-scatters a step, the profile's steps %d and %d%s",
                  c.replay.all_gathers, c.replay.reduce_scatters, c.mean.all_gathers, c.mean.reduce_scatters,
                  c.fewest == c.most ? "" : " on average");
  else
    std::snprintf(buf, sizeof buf,
                  "the profile's steps differ among themselves (%d to %d all-gathers, %d to %d reduce-scatters; the replay "
                  "%d and %d): the configuration changed during the recording, and the replay stands for one of them",
                  c.fewest.all_gathers, c.most.all_gathers, c.fewest.reduce_scatters, c.most.reduce_scatters,
                  c.replay.all_gathers, c.replay.reduce_scatters);
  c.warning = buf;
  if (!in.model_parallel.empty() && in.model.recorded_model_parallel <= 1)
    c.warning += ": the run shards its parameters over more than FSDP's mesh (" + in.model_parallel +
                 ": tensor, context or expert parallelism beside FSDP), whose collectives the replay of a profile takes "
                 "for FSDP's; `simulate --model M.json` with the plan's \"parallelism\" models such a run";
  else if (in.steps_with_optimizer_between_backwards > 0)
    c.warning += ": an optimizer steps between two backward passes of one iteration (a GAN: the discriminator stepped "
                 "before the generator's backward through it), and the replay runs one backward pass of the units and "
                 "then the optimizer, so its step time and what-ifs do not stand for this loop";
  else if (!each_step || c.fewest == c.most)
    c.warning += ": the replay does not model this loop as it ran (docs/simulator.md lists what it models); its step time "
                 "and what-ifs are to be read with that";
  return c;
}

}  // namespace

void write_collective_check(JsonWriter& j, const CollectiveCheck& c) {
  if (!c.checked) return;
  auto counts = [&](const char* key, const StepCollectives& n) {
    j.key(key).begin_object().kv("all_gathers", n.all_gathers).kv("reduce_scatters", n.reduce_scatters).end_object();
  };
  j.key("replay_collectives").begin_object().kv("match", c.match);
  counts("replay_per_step", c.replay);
  counts("measured_fewest_per_step", c.fewest);
  counts("measured_most_per_step", c.most);
  counts("measured_mean_per_step", c.mean);  // rounded; what a GPU profile's replay is compared with
  if (!c.match) j.kv("warning", c.warning);
  j.end_object();
}

ReplayCheck check_replay(const SimInputs& in, const SimResult& replay, bool cluster_fitted) {
  ReplayCheck c;
  c.collectives = check_collectives(in, replay);
  const TimeNs replay_ns = replay.step_ns;
  c.replay_ns = replay_ns;
  c.measured_ns = in.reference_step_ns();
  c.comparable = in.from_profile && c.measured_ns > 0 && replay_ns > 0;
  if (!c.comparable) return c;
  const double measured = double(c.measured_ns);
  c.error_pct = 100.0 * (double(replay_ns) - measured) / measured;
  c.far = std::abs(c.error_pct) > kReplayWarnPct;
  if (!c.far) return c;
  char buf[320];
  auto share = [&](TimeNs t) { return 100.0 * double(t) / measured; };
  if (in.origin == OriginKind::Synthetic)
    c.reasons.emplace_back("the profile is synthetic (generated, not measured): its step time is not a measurement to reproduce");
  else if (in.origin == OriginKind::Simulated)
    c.reasons.emplace_back("the profile is itself a simulation, not a measurement");
  if (in.window_only) {
    std::snprintf(buf, sizeof buf,
                  "the profile has no step markers: the %.3f ms compared (of %.3f ms recorded) is a window, not a full step",
                  to_ms(in.measured_step_ns), to_ms(in.profile_span_ns));
    c.reasons.emplace_back(buf);
  }
  if (!cluster_fitted && in.fit_samples_available > 0) {
    std::snprintf(buf, sizeof buf, "the cluster is not fitted to this profile's %d measured collectives", in.fit_samples_available);
    c.reasons.emplace_back(buf);
  } else if (in.fit_samples_available == 0) {
    c.reasons.emplace_back("the profile has no all-gather / reduce-scatter to fit the cluster to, so FSDP's collectives take the preset's times");
  }
  if (share(in.measured_idle_ns) > kReplayWarnPct) {
    std::snprintf(buf, sizeof buf, "%.0f%% of the measured step is %s, replayed as measured, not modelled",
                  share(in.measured_idle_ns),
                  is_cpu_device(in.gpu_name) ? "training-thread idle (Python and hooks between operators)"
                                             : "GPU idle (the host was behind)");
    c.reasons.emplace_back(buf);
  }
  if (share(in.measured_other_comm_ns) > kReplayWarnPct) {
    std::snprintf(buf, sizeof buf, "%.0f%% of the measured step is %d collective(s) FSDP does not issue, replayed as measured",
                  share(in.measured_other_comm_ns), in.other_collectives);
    c.reasons.emplace_back(buf);
  }
  if (!in.window_only && in.steps_used > 0 && in.steps_used < 3) {
    std::snprintf(buf, sizeof buf, "the measured step time averages only %d step%s (warm-up and noise are not averaged out)",
                  in.steps_used, in.steps_used == 1 ? "" : "s");
    c.reasons.emplace_back(buf);
  }
  if (c.reasons.empty())
    c.reasons.emplace_back("none of the usual causes applies (synthetic input, unfitted cluster, idle or non-FSDP communication, "
                           "few steps, a partial window): see docs/accuracy.md for the simulator's known limits");
  std::snprintf(buf, sizeof buf, "the replay as profiled (%.3f ms) is %+.1f%% from the %s step (%.3f ms), more than %.0f%%: ",
                to_ms(replay_ns), c.error_pct, in.calibrated ? "unobserved" : "measured", to_ms(c.measured_ns), kReplayWarnPct);
  c.warning = buf;
  for (std::size_t i = 0; i < c.reasons.size(); ++i) c.warning += (i ? "; " : "") + c.reasons[i];
  return c;
}

}  // namespace ss::sim
