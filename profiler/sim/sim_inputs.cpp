#include "profiler/sim/sim_inputs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "profiler/sim/device_table.h"
#include "profiler/sim/model_description.h"
#include "profiler/sim/profile_extract.h"
#include "profiler/sim/step_simulator.h"
#include "storage/cpu_device.h"
#include "storage/errors.h"
#include "storage/interval_union.h"
#include "storage/profile_reader.h"
#include "storage/value_bounds.h"

namespace ss::sim {
namespace {

// On a CPU run, allocations that are gloo's transport, not the job's tensors: made on a comm lane
// (gloo's worker threads) or inside a c10d op on the training thread (its staging copies). The
// job's own memory counter (FSDPMemTracker) never sees them, and when they fall on a step's peak
// depends on thread timing (scripts/memory_vs_tracker.py reports the same kinds). On a GPU, NCCL
// allocates nothing through the job's allocator inside a collective, and what is made on a
// collective's stream is the job's (FSDP's buffers): nothing is left out there.
struct TransportAllocations {
  std::vector<TimeInterval> c10d_ops;  // merged, sorted
  std::vector<std::int64_t> comm_streams;

  TransportAllocations(sql::Db& db, int rank, bool cpu) {
    if (!cpu) return;
    sql::Stmt ops(db.get(),
                  "SELECT r.start_ns, r.start_ns + r.duration_ns FROM ranges r JOIN strings s ON s.id = r.name_id "
                  "WHERE r.rank = ?1 AND s.value LIKE 'c10d::%' ORDER BY r.start_ns");
    ops.bind(1, rank);
    while (ops.step()) {
      const TimeInterval iv{ops.col_int(0), ops.col_int(1)};
      if (!c10d_ops.empty() && iv.first <= c10d_ops.back().second)
        c10d_ops.back().second = std::max(c10d_ops.back().second, iv.second);
      else
        c10d_ops.push_back(iv);
    }
    sql::Stmt comm(db.get(), "SELECT id FROM streams WHERE rank = ?1 AND kind = ?2");
    comm.bind(1, rank);
    comm.bind(2, static_cast<std::int64_t>(StreamKind::Nccl));
    while (comm.step()) comm_streams.push_back(comm.col_int(0));
  }

  bool operator()(TimeNs t, std::optional<std::int64_t> stream) const {
    if (stream && std::find(comm_streams.begin(), comm_streams.end(), *stream) != comm_streams.end()) return true;
    auto it = std::upper_bound(c10d_ops.begin(), c10d_ops.end(), t, [](TimeNs v, const TimeInterval& iv) { return v < iv.first; });
    return it != c10d_ops.begin() && t <= std::prev(it)->second;
  }
};

// The peak allocated bytes of a step on a rank, gloo's transport left out on CPU runs (above),
// averaged over the steps used (the representative rank's, by number) on every rank that has
// memory events; 0 without any. Over ranks too, because one rank's per-step peak moves with thread
// timing: on CPU FSDP2 runs, how many gradient buffers are alive at the peak depends on when gloo's
// reduce-scatters finish, and rank 0's mean of three steps ranged 88.9-98.0 MiB over three runs of
// one job where every rank's ranged 91.2-92.8 MiB (docs/accuracy.md). Without the transport, an
// mlp's per-step peak was the same in every step, rank and run (230.2 MiB).
struct MeasuredPeaks {
  std::int64_t step = 0;       // the mean of the per-step peaks
  std::int64_t optimizer = 0;  // the mean of the per-step peaks inside the optimizer's ranges (0: none)
  // The means of the per-step peaks in its forward phases and in its backward phases (to the
  // optimizer phase; backward_phases) (0: a step without both).
  std::int64_t forward = 0, backward = 0;
};

// Each step's backward phases on a rank, in time order (none for a step without a backward module
// range). One pass a step: from its first backward module range on (max(): to the optimizer
// phase). Several (gradient accumulation): each from the first backward module range after a
// pass's forward to the next pass's first top-level forward module range (the model's call), the
// last one on. Module ranges, as the model's phases: the loss's backward, before them, counts with
// the forward (SimSegment temporaries). From any backward range (the loss's operators), a llama
// accumulating two passes peaked in the second loss's backward, counted as backward there and as
// forward in the model: its plans came out −4.8 and −4.5 %.
std::vector<std::vector<TimeInterval>> backward_phases(const sql::Db& db, int rank, const std::vector<TimeInterval>& steps,
                                                       int passes) {
  constexpr TimeNs kOn = std::numeric_limits<TimeNs>::max();
  std::vector<std::vector<TimeInterval>> out(steps.size());
  sql::Stmt st(db.get(), "SELECT start_ns, phase FROM ranges WHERE rank = ?1 AND kind = ?4 AND (phase = ?2 OR (phase = ?3 "
                         "AND depth = 0)) ORDER BY start_ns");
  st.bind(1, rank);
  st.bind(2, static_cast<std::int64_t>(RangePhase::Backward));
  st.bind(3, static_cast<std::int64_t>(RangePhase::Forward));
  st.bind(4, static_cast<std::int64_t>(RangeKind::Module));
  while (st.step()) {
    const auto k = interval_holding(steps, st.col_int(0));
    if (k < 0) continue;
    auto& phases = out[static_cast<std::size_t>(k)];
    const bool backward = st.col_int(1) == static_cast<std::int64_t>(RangePhase::Backward);
    const bool in_backward = !phases.empty() && phases.back().second == kOn;
    if (backward && !in_backward && (phases.empty() || passes > 1)) phases.push_back({st.col_int(0), kOn});
    else if (!backward && in_backward && passes > 1) phases.back().second = st.col_int(0);
  }
  // A step whose passes are not told apart this way (no top-level forward range between them)
  // has no phases: the unexplained memory then stays one constant (measured_step_peaks).
  if (passes > 1)
    for (auto& phases : out)
      if (phases.size() != static_cast<std::size_t>(passes)) phases.clear();
  return out;
}

// Each step's optimizer phase on a rank: its optimizer ranges that start after the step's last
// backward range (a loop may call zero_grad at the step's start: that range is not the step's
// optimizer phase), from the first one's start to the last one's end; {0, -1} for a step without
// one. One pass over the rank's backward and optimizer ranges.
std::vector<TimeInterval> optimizer_phases(const sql::Db& db, int rank, const std::vector<TimeInterval>& steps) {
  std::vector<TimeNs> backward_end(steps.size(), std::numeric_limits<TimeNs>::min());
  std::vector<TimeInterval> out(steps.size(), TimeInterval{0, -1});
  sql::Stmt st(db.get(), "SELECT start_ns, start_ns + duration_ns, phase FROM ranges WHERE rank = ?1 AND phase IN (?2, ?3) "
                         "ORDER BY phase = ?3, start_ns");  // backward ranges first
  st.bind(1, rank);
  st.bind(2, static_cast<std::int64_t>(RangePhase::Backward));
  st.bind(3, static_cast<std::int64_t>(RangePhase::Optimizer));
  while (st.step()) {
    const auto k = interval_holding(steps, st.col_int(0));
    if (k < 0) continue;
    const auto u = static_cast<std::size_t>(k);
    if (st.col_int(2) == static_cast<std::int64_t>(RangePhase::Backward)) {
      backward_end[u] = std::max(backward_end[u], st.col_int(1));
      continue;
    }
    if (st.col_int(0) < backward_end[u]) continue;
    TimeInterval& o = out[u];
    o = o.first > o.second ? TimeInterval{st.col_int(0), st.col_int(1)}
                           : TimeInterval{std::min(o.first, st.col_int(0)), std::max(o.second, st.col_int(1))};
  }
  return out;
}

MeasuredPeaks measured_step_peaks(const std::string& path, const ProfileInput& pi, int passes) {
  if (pi.step_windows.empty()) return {};
  sql::Db db = open_profile_readonly(path);
  // The numbers of the steps used, then each rank's windows for those numbers.
  std::map<int, std::vector<TimeInterval>> windows;
  {
    std::vector<std::int64_t> numbers;
    sql::Stmt rep(db.get(), "SELECT number, start_ns, start_ns + duration_ns FROM steps WHERE rank = ?1");
    rep.bind(1, pi.rank);
    while (rep.step())
      if (std::find(pi.step_windows.begin(), pi.step_windows.end(), std::pair<TimeNs, TimeNs>{rep.col_int(1), rep.col_int(2)}) !=
          pi.step_windows.end())
        numbers.push_back(rep.col_int(0));
    sql::Stmt all(db.get(), "SELECT rank, number, start_ns, start_ns + duration_ns FROM steps ORDER BY rank, start_ns");
    while (all.step())
      if (std::find(numbers.begin(), numbers.end(), all.col_int(1)) != numbers.end())
        windows[static_cast<int>(all.col_int(0))].push_back({all.col_int(2), all.col_int(3)});
  }
  double sum = 0, opt_sum = 0, fwd_sum = 0, bwd_sum = 0;
  int counted = 0, opt_counted = 0, phases_counted = 0;
  for (const auto& [rank, steps] : windows) {
    const TransportAllocations transport(db, rank, is_cpu_device(pi.gpu_name));
    std::set<std::int64_t> transport_live;  // addresses of transport allocations not yet freed
    sql::Stmt st(db.get(), "SELECT time_ns, bytes, address, stream_id FROM memory_events WHERE rank = ?1 ORDER BY time_ns, bytes");
    st.bind(1, rank);
    std::vector<std::int64_t> peaks(steps.size(), 0);
    const std::vector<TimeInterval> opt = optimizer_phases(db, rank, steps);
    std::vector<std::int64_t> opt_peaks(steps.size(), -1);  // -1: its optimizer phase not reached yet
    const std::vector<std::vector<TimeInterval>> bwd = backward_phases(db, rank, steps, passes);
    std::vector<std::int64_t> fwd_peaks(steps.size(), 0), bwd_peaks(steps.size(), -1);  // -1: not reached yet
    // Where a step's phase turns (to backward: true), in time order: what is live then counts in
    // the peak of the phase it turns to.
    struct Turn {
      TimeNs t;
      std::size_t step;
      bool to_backward;
    };
    std::vector<Turn> turns;
    for (std::size_t k = 0; k < steps.size(); ++k)
      for (const auto& [a, b] : bwd[k]) {
        turns.push_back({a, k, true});
        if (b != std::numeric_limits<TimeNs>::max()) turns.push_back({b, k, false});
      }
    auto in_backward = [&](std::size_t k, TimeNs t) {
      return std::any_of(bwd[k].begin(), bwd[k].end(), [t](const TimeInterval& iv) { return iv.first <= t && t < iv.second; });
    };
    std::size_t turned = 0;
    std::int64_t level = 0;
    auto turn = [&](const Turn& x) { auto& p = x.to_backward ? bwd_peaks[x.step] : fwd_peaks[x.step]; p = std::max(p, level); };
    std::size_t opt_opened = 0;
    std::size_t opened = 0;  // steps whose start has passed: what is live then counts in their peak
    bool any = false;
    while (st.step()) {
      const TimeNs t = st.col_int(0);
      const std::int64_t bytes = st.col_int(1);
      any = true;
      if (!st.col_null(2)) {
        const std::int64_t address = st.col_int(2);
        if (bytes > 0 && transport(t, st.col_null(3) ? std::nullopt : std::optional<std::int64_t>(st.col_int(3)))) {
          transport_live.insert(address);
          continue;
        }
        if (bytes < 0 && transport_live.erase(address)) continue;
      }
      for (; opened < steps.size() && steps[opened].first <= t; ++opened) peaks[opened] = fwd_peaks[opened] = level;
      for (; turned < turns.size() && turns[turned].t <= t; ++turned) turn(turns[turned]);
      // What is live when a step's optimizer starts counts in its optimizer peak (steps in time order).
      for (; opt_opened < opt.size() && (opt[opt_opened].first > opt[opt_opened].second || opt[opt_opened].first <= t); ++opt_opened)
        if (opt[opt_opened].first <= opt[opt_opened].second) opt_peaks[opt_opened] = level;
      add_memory_bytes(level, bytes, path);
      if (const auto k = interval_holding(steps, t); k >= 0) {
        const auto u = static_cast<std::size_t>(k);
        peaks[u] = std::max(peaks[u], level);
        if (opt[u].first <= t && t <= opt[u].second) opt_peaks[u] = std::max(opt_peaks[u], level);
        if (!in_backward(u, t)) fwd_peaks[u] = std::max(fwd_peaks[u], level);
        else if (opt[u].first > opt[u].second || t < opt[u].first) bwd_peaks[u] = std::max(bwd_peaks[u], level);
      }
    }
    if (!any) continue;
    for (; opened < steps.size(); ++opened) peaks[opened] = fwd_peaks[opened] = level;
    for (; turned < turns.size(); ++turned) turn(turns[turned]);
    for (auto v : peaks) sum += double(v);
    counted += static_cast<int>(peaks.size());
    for (std::size_t k = 0; k < steps.size(); ++k) {
      if (bwd_peaks[k] < 0) continue;  // no backward in this step
      fwd_sum += double(fwd_peaks[k]);
      bwd_sum += double(bwd_peaks[k]);
      ++phases_counted;
    }
    for (std::size_t k = 0; k < opt.size(); ++k) {
      if (opt[k].first > opt[k].second) continue;  // no optimizer range in this step
      opt_sum += double(opt_peaks[k] < 0 ? level : opt_peaks[k]);
      ++opt_counted;
    }
  }
  MeasuredPeaks m;
  m.step = counted ? static_cast<std::int64_t>(sum / double(counted)) : 0;
  m.optimizer = opt_counted ? static_cast<std::int64_t>(opt_sum / double(opt_counted)) : 0;
  if (phases_counted == counted && counted > 0) {  // every step has both phases
    m.forward = static_cast<std::int64_t>(fwd_sum / double(phases_counted));
    m.backward = static_cast<std::int64_t>(bwd_sum / double(phases_counted));
  }
  return m;
}

// Every byte count of the model that lives only part of the step: saved and recomputed
// activations, temporaries. Not a unit's input (SimSegment::input_bytes): the hooks measure that
// tensor itself, and a pipeline stage sends it whole (scaled, the tiny CPU trainer's sends came
// out at 6,608 B for the 8,192 B its stage sent).
SimModel with_transients_scaled(SimModel m, double f) {
  auto scaled = [f](std::int64_t& b) { b = static_cast<std::int64_t>(std::llround(double(b) * f)); };
  for (auto& seg : m.segments) {
    scaled(seg.saved_activation_bytes);
    scaled(seg.loss_saved_bytes);
    scaled(seg.caller_held_bytes);
    scaled(seg.backward_held_bytes);
    scaled(seg.recompute_activation_bytes);
    scaled(seg.fwd_temp_bytes);
    scaled(seg.bwd_temp_bytes);
    scaled(seg.bwd_incoming_bytes);
    for (auto& part : seg.parts) scaled(part.saved_bytes);
  }
  return m;
}

// The model's peaks in its passes' backward (each from its start to its end) and outside them
// before the last one ends (the forwards, and between a backward and the next pass's forward).
std::pair<std::int64_t, std::int64_t> phase_peaks(const SimResult& r) {
  std::int64_t level = 0, fwd = 0, bwd = 0;
  if (r.backward_passes.empty()) return {0, 0};
  std::size_t pass = 0;
  for (const auto& e : r.memory) {  // sorted by time
    level += e.delta;
    while (pass + 1 < r.backward_passes.size() && e.time > r.backward_passes[pass].second) ++pass;
    const auto [start, end] = r.backward_passes[pass];
    if (start <= e.time && e.time <= end) bwd = std::max(bwd, level);
    else if (e.time < r.backward_passes.back().first) fwd = std::max(fwd, level);
  }
  return {fwd, bwd};
}

// What the model does not explain is not the same in the two phases: on the user loop the job
// held 166 KB more of it in backward (where its peak was) than in forward, so a plan that moved
// the peak into the forward (blocks kept unsharded) came out 1.7-1.9 % high, every time; the
// closed loop of a llama prefetching two layers ahead, +1.3 %. Each phase's unexplained bytes (its measured peak less the
// model's) are held in that phase (SimModel::other_backward_bytes), topped up to the measured
// step peak. Every pass's forward and backward alike with gradient accumulation: held as one
// constant there, an mlp accumulating two passes without sync, whose job holds 8 MiB more of it in
// backward (a prefetched block's all-gather buffer beside the block), came out 2.9 % high keeping
// its last two blocks unsharded (the peak moved to the second pass's forward). No pipeline.
void split_other_by_phase(SimInputs& in, const SimResult& replay, const MeasuredPeaks& measured) {
  if (measured.forward <= 0 || measured.backward <= 0 || in.recorded_plan.parallel.pp > 1 || in.model.forward_only) return;
  const auto [fwd, bwd] = phase_peaks(replay);  // of the model without the constant
  const std::int64_t in_forward = std::max<std::int64_t>(0, measured.forward - fwd);
  const std::int64_t in_backward = std::max<std::int64_t>(0, measured.backward - bwd);
  SimModel split = in.model;
  split.other_memory_bytes += in_forward - in.memory_calibration_bytes;
  split.other_backward_bytes = in_backward - in_forward;
  const std::int64_t top_up = in.measured_peak_bytes - simulate(compile_step(split, in.recorded_plan, in.cluster)).peak_bytes;
  if (top_up < 0) return;  // a phase's own peaks over the step's (cannot be): the constant stays
  split.other_memory_bytes += top_up;
  in.model = std::move(split);
  in.memory_calibration_forward_bytes = in_forward + top_up;
  in.memory_calibration_backward_bytes = in_backward + top_up;
}

// The replay's peak made the measured one: what the model leaves out is added (a constant, or by
// phase where the profile tells), or what it over-explains is taken from its transient bytes.
void calibrate_transients(SimInputs& in, const MeasuredPeaks& measured) {
  auto peak_of = [&](const SimModel& m) { return simulate(compile_step(m, in.recorded_plan, in.cluster)).peak_bytes; };
  const SimResult replay = simulate(compile_step(in.model, in.recorded_plan, in.cluster));
  in.memory_calibration_bytes = in.measured_peak_bytes - replay.peak_bytes;
  if (in.memory_calibration_bytes >= 0) {
    // What the model does not explain (inputs, allocator slack), held in every what-if.
    in.model.other_memory_bytes += in.memory_calibration_bytes;
    split_other_by_phase(in, replay, measured);
    return;
  }
  // The model explains more than was measured: its transient bytes (taken at their largest per
  // unit, and coinciding in the replay where the job's did not quite) are scaled down until the
  // replay's peak is the measured one. The peak only grows with the scale, so bisection finds it;
  // the largest scale whose peak does not exceed the measured one is kept. A constant cannot do
  // this: it would be a negative "other" that a plan with less memory could take below zero.
  double lo = 0, hi = 1;
  if (peak_of(with_transients_scaled(in.model, 0)) > in.measured_peak_bytes) {
    in.transient_memory_scale = 1;  // the persistent state alone is larger: nothing transient to take
    return;
  }
  for (int i = 0; i < 40 && hi - lo > 1e-9; ++i) {
    const double mid = 0.5 * (lo + hi);
    (peak_of(with_transients_scaled(in.model, mid)) > in.measured_peak_bytes ? hi : lo) = mid;
  }
  in.transient_memory_scale = lo;
  in.model = with_transients_scaled(in.model, lo);
}

// The device memory the optimizer step holds beyond what the (calibrated) model keeps then: its
// intermediates (a foreach AdamW's: about one fp32 copy of the rank's parameters), the outputs the
// training loop keeps until its next forward (the logits), the allocator's rounding of the state.
// The model's optimizer phase then replays at the measured one. Why: with activation
// checkpointing the step's peak moves from the loss to the optimizer; on an H200 the model, without
// this, predicted the checkpointing plan's peak 5.6 % low (4,337 MB at the optimizer against
// 5,868 MB measured there: docs/gpu-runs.md, fourth loan).
void fit_optimizer_memory(SimInputs& in, std::int64_t measured_optimizer_peak) {
  if (measured_optimizer_peak <= 0 || in.model.forward_only) return;
  const SimResult r = simulate(compile_step(in.model, in.recorded_plan, in.cluster));
  TimeNs start = -1, end = -1;
  for (const auto& op : r.ops)
    if (op.kind == OpKind::Optimizer) start = op.start, end = op.end;
  if (start < 0) return;
  // What the model holds from the optimizer's start on (every change at its start made, as the
  // transient added there comes after them) to its end.
  std::int64_t level = 0, at_optimizer = 0;
  bool started = false;
  for (const auto& e : r.memory) {  // sorted by time
    if (!started && e.time > start) at_optimizer = level, started = true;
    if (e.time > end) break;
    level += e.delta;
    if (started) at_optimizer = std::max(at_optimizer, level);
  }
  if (!started) at_optimizer = level;
  in.measured_optimizer_peak_bytes = measured_optimizer_peak;
  in.model.optimizer_temp_bytes = std::max<std::int64_t>(0, measured_optimizer_peak - at_optimizer);
}

void calibrate_memory(SimInputs& in, const ProfileInput& pi, const std::string& path) {
  const MeasuredPeaks measured = measured_step_peaks(path, pi, std::max(1, in.recorded_plan.gradient_accumulation));
  in.measured_peak_bytes = measured.step;
  if (in.measured_peak_bytes <= 0) return;
  calibrate_transients(in, measured);
  fit_optimizer_memory(in, std::min(measured.optimizer, measured.step));
}

// The representative rank's unobserved steps (record --steps A:B; the optional table may be
// absent): their median wall time and count, of those that called the model the fewest times
// (keep_fewest_model_calls). Step 0 (the job's warm-up) is left out. On a GPU rank, where at least
// kMinStepsAfterWindow of them come after the window, only those: before a window that starts
// later than step 0 it runs with CUPTI's memory records and the allocator history on (from CUDA's
// start), and on an H200 those steps were +19 / +24 % slower than the job without `record`, while
// the steps after it (CUPTI detached, the history stopped) ran as the job does (docs/gpu-runs.md,
// fourth loan). A CPU rank runs nothing of ShardScope's outside the window but the step count and
// the model's call count, so every unobserved step is a sample (the CPU closed loops' three steps
// after a 3:7 window alone moved the unobserved step by up to -4 %, docs/accuracy.md).
constexpr int kMinStepsAfterWindow = 3;

struct UnobservedStep {
  TimeNs median_ns = 0;
  int steps = 0;
  bool after_window = false;
  int left_out = 0;  // steps that called the model more often (an evaluation), not in the median
};

// An unobserved step's wall time and how many times the job called its model in it (-1: not
// counted, a profile written before unobserved_steps.model_calls).
struct UnobservedRow {
  TimeNs duration = 0;
  std::int64_t model_calls = -1;
};

// The steps that called the model the fewest times: an evaluation or validation loop between
// optimizer steps adds calls (record runs no profiler outside the window, but it counts the root
// module's calls), and such a step is not the training step the replay stands for, as in the
// profiled window (profile_extract.cpp, forward_only_steps_left_out). Returns how many it left out.
int keep_fewest_model_calls(std::vector<UnobservedRow>& rows) {
  std::int64_t fewest = -1;
  for (const auto& r : rows)
    if (r.model_calls >= 0 && (fewest < 0 || r.model_calls < fewest)) fewest = r.model_calls;
  if (fewest < 0) return 0;
  const std::size_t before = rows.size();
  std::erase_if(rows, [fewest](const UnobservedRow& r) { return r.model_calls > fewest; });
  return static_cast<int>(before - rows.size());
}

UnobservedStep unobserved_step(const std::string& path, int rank, bool prefer_after_window) {
  sql::Db db = open_profile_readonly(path);
  sql::Stmt has(db.get(), "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'unobserved_steps'");
  if (!has.step() || has.col_int(0) == 0) return {};
  sql::Stmt counted(db.get(), "SELECT count(*) FROM pragma_table_info('unobserved_steps') WHERE name = 'model_calls'");
  const std::string calls = counted.step() && counted.col_int(0) > 0 ? "model_calls" : "NULL";
  sql::Stmt last(db.get(), "SELECT max(number) FROM steps WHERE rank = ?1");
  last.bind(1, rank);
  const std::int64_t last_profiled = last.step() ? last.col_int_or(0, -1) : -1;
  auto rows_after = [&](std::int64_t after) {
    sql::Stmt st(db.get(), "SELECT duration_ns, " + calls + " FROM unobserved_steps WHERE rank = ?1 AND number > ?2");
    st.bind(1, rank);
    st.bind(2, after);
    std::vector<UnobservedRow> rows;
    while (st.step()) rows.push_back({st.col_int(0), st.col_int_or(1, -1)});
    return rows;
  };
  UnobservedStep u;
  std::vector<UnobservedRow> d;
  if (prefer_after_window && last_profiled >= 0) {
    d = rows_after(last_profiled);
    u.left_out = keep_fewest_model_calls(d);
  }
  u.after_window = static_cast<int>(d.size()) >= kMinStepsAfterWindow;
  if (!u.after_window) {
    d = rows_after(0);
    u.left_out = keep_fewest_model_calls(d);
  }
  if (d.empty()) return {};
  std::sort(d.begin(), d.end(), [](const UnobservedRow& a, const UnobservedRow& b) { return a.duration < b.duration; });
  const std::size_t n = d.size();
  u.median_ns = n % 2 ? d[n / 2].duration : (d[n / 2 - 1].duration + d[n / 2].duration) / 2;
  u.steps = static_cast<int>(n);
  return u;
}

// The host's time in the model: on a CPU run the compute itself (the CPU is the device), the
// host gaps, the optimizer and FSDP's host work; on a GPU run the idle gaps (the GPU waiting for
// the host), where a profiler's cost shows. Visits each such duration with how many times a step
// spends it: the segments and the units' host work once per micro-batch, the optimizer once.
template <typename F>
void for_each_host_time(SimModel& m, bool cpu, int micro_batches, F&& f) {
  const double passes = double(std::max(1, micro_batches));
  for (auto& s : m.segments) {
    if (cpu) {
      f(s.fwd_ns, passes);
      f(s.bwd_ns, passes);
      for (auto& part : s.parts) f(part.fwd_ns, passes);
    }
    f(s.fwd_extra.idle_ns, passes);
    f(s.bwd_extra.idle_ns, passes);
  }
  if (cpu) {
    f(m.optimizer_ns, 1.0);
    for (auto& u : m.units) f(u.bwd_unshard_host_ns, passes);
  }
  f(m.optimizer_extra.idle_ns, 1.0);
}

// Calibrates the replay to the unobserved step: the profiled step's extra time is the
// profiler's work on the host, taken out of the model's host time in proportion (scale
// (host - extra) / host, kept within [0.05, 20]).
void calibrate_to_unobserved(SimInputs& in, bool cpu) {
  const ClusterModel& c = in.cluster;
  const int passes = in.recorded_plan.gradient_accumulation;
  in.replay_as_profiled_ns = simulate(compile_step(in.model, in.recorded_plan, c)).step_ns;
  double host = 0;
  for_each_host_time(in.model, cpu, passes, [&](TimeNs& t, double times) { host += double(t) * times; });
  if (host <= 0) return;
  const double extra = double(in.measured_step_ns) - double(in.unobserved_step_ns);
  in.host_time_scale = std::clamp((host - extra) / host, 0.05, 20.0);
  const double f = in.host_time_scale;
  for_each_host_time(in.model, cpu, passes, [&](TimeNs& t, double) { t = static_cast<TimeNs>(std::llround(double(t) * f)); });
  in.calibrated = true;
  in.replay_calibrated_ns = simulate(compile_step(in.model, in.recorded_plan, c)).step_ns;
}

}  // namespace

SimInputs load_sim_inputs(const SimInputRequest& req) {
  SimInputs in;
  if (!req.cluster_path.empty()) in.cluster = load_cluster_file(req.cluster_path);
  if (!req.plan_path.empty()) in.plan = load_plan_file(req.plan_path);
  if (!req.profile_path.empty()) {
    std::optional<Profile> read;
    if (!req.loaded) {
      LoadOptions lo;
      lo.memory = false;
      read = load_profile(req.profile_path, lo);
    }
    ProfileInput pi = extract_profile(req.loaded ? *req.loaded : *read);
    add_activations_from_profile(pi, req.profile_path);
    add_trainable_from_profile(pi, req.profile_path);
    add_kept_grads_from_profile(pi, req.profile_path);
    add_temporaries_from_profile(pi, req.profile_path);
    add_backward_net_from_profile(pi, req.profile_path);
    add_gathers_from_profile(pi, req.profile_path);
    add_rerun_share_from_profile(pi, req.profile_path);
    for (const auto& sg : pi.model.segments) {
      in.measured_output_held_bytes += sg.caller_held_bytes;
      in.measured_output_held_through_backward_bytes += sg.backward_held_bytes;
    }
    in.model = std::move(pi.model);
    in.from_profile = true;
    in.origin = pi.origin;
    in.measured_step_ns = pi.measured_step_ns;
    in.window_only = pi.window_only;
    in.profile_span_ns = pi.profile_span_ns;
    in.measured_compute_ns = pi.measured_compute_ns;
    in.measured_other_comm_ns = pi.measured_other_comm_ns;
    in.measured_idle_ns = pi.measured_idle_ns;
    in.other_collectives = pi.other_collectives;
    // The replay's baseline is the run as recorded (as for each unit's reshard policy): HSDP's
    // replicate degree and the micro-batches per step (gradient accumulation, and whether every
    // one reduce-scatters) and the units' explicit prefetch lists, each unless the plan sets it.
    in.recorded_plan.hsdp_replicate = pi.recorded_hsdp_replicate;
    in.recorded_plan.gradient_accumulation = pi.micro_batches;
    in.recorded_plan.sync_every_microbatch = pi.sync_every_microbatch;
    in.recorded_plan.reshard_after_backward = pi.reshard_after_backward;
    in.recorded_plan.forward_prefetch = pi.forward_prefetch;
    in.recorded_plan.backward_prefetch = pi.backward_prefetch;
    const auto plan_keeps = [&](const char* key) { return req.plan_path.empty() || !plan_file_sets(req.plan_path, key); };
    if (plan_keeps("hsdp_replicate")) in.plan.hsdp_replicate = in.recorded_plan.hsdp_replicate;
    if (plan_keeps("gradient_accumulation")) in.plan.gradient_accumulation = in.recorded_plan.gradient_accumulation;
    if (plan_keeps("sync_every_microbatch")) in.plan.sync_every_microbatch = in.recorded_plan.sync_every_microbatch;
    if (plan_keeps("reshard_after_backward")) in.plan.reshard_after_backward = in.recorded_plan.reshard_after_backward;
    if (plan_keeps("forward_prefetch")) in.plan.forward_prefetch = in.recorded_plan.forward_prefetch;
    if (plan_keeps("backward_prefetch")) in.plan.backward_prefetch = in.recorded_plan.backward_prefetch;
    in.steps_used = pi.steps_used;
    in.forward_only_steps_left_out = pi.forward_only_steps_left_out;
    in.long_steps_left_out = pi.long_steps_left_out;
    in.frozen_units = pi.frozen_units;
    in.repeat_call_units = pi.repeat_call_units;
    in.long_steps_ns = pi.long_steps_ns;
    in.fsdp_collectives_per_step = pi.fsdp_collectives_per_step;
    in.steps_with_optimizer_between_backwards = pi.steps_with_optimizer_between_backwards;
    in.model_parallel = pi.model_parallel;
    in.pipeline = pi.pipeline;
    in.units_on_other_stages = pi.units_on_other_stages;
    in.rank = pi.rank;
    in.profile_world = pi.world_size;
    in.gpu_name = pi.gpu_name;
    in.source = req.profile_path;
    if (req.cluster_path.empty() || !in.cluster.world_size_given)
      in.cluster.world_size = pi.world_size;  // replay at the profile's own configuration
    const bool own_device = req.cluster_path.empty() || !in.cluster.device_given;
    if (own_device)
      if (auto d = find_device(pi.gpu_name)) in.cluster.device = d->name;
    // A CPU run (the profile's device is the CPU, collectives over gloo): its collectives share the
    // cores with compute, whatever cluster the costs come from.
    if (is_cpu_device(pi.gpu_name)) {
      in.cluster.comm_serialized = true;
      if (own_device) in.cluster.device = std::string(kCpuDeviceName);
      if (req.cluster_path.empty()) in.cluster.name = "cpu (gloo)";
      if (req.cluster_path.empty() || !in.cluster.gpus_per_node_given) in.cluster.gpus_per_node = std::max(1, pi.world_size);  // one host
    }
    in.unfitted_cluster = in.cluster;
    ClusterModel fitted = in.cluster;
    const FitReport rep = fit_cluster(fitted, pi.collectives);
    for (int c = 0; c < kCollCount; ++c) in.fit_samples_available += rep.samples[c];
    const bool own_collectives = !req.cluster_path.empty() && in.cluster.collectives_given;
    if (req.fit || (req.fit_if_available && !own_collectives && in.fit_samples_available > 0)) {
      in.cluster = fitted;
      in.fit = rep;
      in.fitted = true;
    }
    const UnobservedStep u = unobserved_step(req.profile_path, pi.rank, !is_cpu_device(pi.gpu_name));
    in.unobserved_step_ns = u.median_ns;
    in.unobserved_steps = u.steps;
    in.unobserved_after_window = u.after_window;
    in.unobserved_steps_left_out = u.left_out;
    if (req.calibrate_to_unobserved && in.unobserved_step_ns > 0 && in.measured_step_ns > 0 && !in.window_only)
      calibrate_to_unobserved(in, is_cpu_device(pi.gpu_name));
    calibrate_memory(in, pi, req.profile_path);  // on the timeline the predictions use
  } else if (!req.model_path.empty()) {
    if (req.fit) throw ProfileError(ProfileErrorKind::MalformedTable, "--fit needs a profile with measured collectives");
    ModelDescription d = load_model_file(req.model_path);
    in.description = d;
    // The description's checkpointing is a plan knob, never baked into the segments (where a
    // plan's "none" could not undo it): "*" for the units the plan does not name. Without it
    // (`plan --search`, which tries every level), the model has none.
    if (d.activation_checkpointing != "none" && req.description_checkpointing)
      in.plan.checkpoint.try_emplace("*", d.activation_checkpointing);
    d.activation_checkpointing = "none";
    in.model = build_sim_model(d, req.cluster_path.empty() ? "" : in.cluster.device);
    in.source = req.model_path;
    auto dev = find_device(req.cluster_path.empty() ? d.device : in.cluster.device);
    in.gpu_name = dev ? dev->full_name : d.device;
    if (req.cluster_path.empty() && dev) in.cluster.device = dev->name;
  } else {
    throw ProfileError(ProfileErrorKind::Io, "nothing to simulate: give a profile or --model M.json");
  }
  if (req.world_override > 0) in.cluster.world_size = req.world_override;
  return in;
}

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp-shardscope";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw ProfileError(ProfileErrorKind::Io, path + ": cannot open for writing");
    out << text;
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw ProfileError(ProfileErrorKind::Io, path + ": write failed");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw ProfileError(ProfileErrorKind::Io, path + ": cannot rename the temporary file into place");
  }
}

}  // namespace ss::sim
