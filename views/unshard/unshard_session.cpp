#include "views/unshard/unshard_session.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "profiler/sim/device_table.h"
#include "profiler/sim/json_input.h"
#include "profiler/sim/plan_file.h"
#include "storage/errors.h"

namespace ss::unshard {

std::vector<TimeNs> exposed_all_gather_per_exec(const sim::SimResult& r, std::size_t exec_units) {
  std::vector<TimeNs> out(exec_units, 0);
  std::vector<const sim::SimOp*> compute;
  std::vector<std::vector<const sim::SimOp*>> gathers(exec_units);  // per exec unit, so the scan stays O(ops)
  for (const auto& op : r.ops) {
    if (op.lane == sim::Lane::Compute) compute.push_back(&op);
    else if (op.kind == sim::OpKind::AllGather && op.exec >= 0 && static_cast<std::size_t>(op.exec) < exec_units)
      gathers[static_cast<std::size_t>(op.exec)].push_back(&op);
  }
  auto by_start = [](const sim::SimOp* a, const sim::SimOp* b) { return a->start < b->start; };
  std::sort(compute.begin(), compute.end(), by_start);
  TimeNs prev_end = 0;
  for (const auto* op : compute) {
    const TimeNs gap_begin = prev_end;
    prev_end = std::max(prev_end, op->end);
    if (op->start <= gap_begin || op->exec < 0 || static_cast<std::size_t>(op->exec) >= exec_units) continue;
    // The wait is the all-gather's if one of this unit's gathers finished inside the gap.
    for (const auto* g : gathers[static_cast<std::size_t>(op->exec)])
      if (g->end > gap_begin && g->end <= op->start) {
        out[static_cast<std::size_t>(g->exec)] += op->start - std::max(gap_begin, g->start);
        break;
      }
  }
  return out;
}

std::vector<TimeNs> host_copy_per_exec(const sim::SimResult& r, std::size_t exec_units) {
  std::vector<TimeNs> out(exec_units, 0);
  for (const auto& op : r.ops)
    if ((op.kind == sim::OpKind::HostToDevice || op.kind == sim::OpKind::DeviceToHost) && op.exec >= 0 &&
        static_cast<std::size_t>(op.exec) < exec_units)
      out[static_cast<std::size_t>(op.exec)] += op.end - op.start;
  return out;
}

namespace {
[[noreturn]] void refuse(const std::string& what) { throw ProfileError(ProfileErrorKind::MalformedTable, "plan: " + what); }

// The state's per-unit checkpointing from a plan's map ("*" for every non-root unit, then names).
std::vector<std::string> checkpoint_per_unit(const sim::SimModel& m, const std::map<std::string, std::string>& plan,
                                             const std::string& where) {
  std::vector<std::string> out(m.units.size(), "none");
  if (auto it = plan.find("*"); it != plan.end())
    for (std::size_t u = 0; u < m.units.size(); ++u)
      if (!m.units[u].is_root) out[u] = it->second;
  for (const auto& [name, v] : plan) {
    if (name == "*") continue;
    const int u = m.find_unit(name);
    if (u < 0) {
      if (where.empty()) continue;  // the base plan: compile_step says what is wrong with it
      refuse(where + ": activation_checkpointing: this model has no FSDP unit '" + name + "'");
    }
    if (!m.units[static_cast<std::size_t>(u)].is_root) out[static_cast<std::size_t>(u)] = v;
  }
  return out;
}
}  // namespace

std::vector<ClusterPreset> load_cluster_presets(const sim::ClusterModel& base, const std::string& dir) {
  std::vector<ClusterPreset> out{{"profile (" + base.name + ")", base}};
  std::error_code ec;
  if (dir.empty() || !std::filesystem::is_directory(dir, ec)) return out;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    try {
      out.push_back({f.stem().string(), sim::load_cluster_file(f.string())});
    } catch (const ProfileError&) {
      // A broken preset file is not a reason to refuse the panel; it is simply not offered.
    }
  }
  return out;
}

int add_measured_preset(std::vector<ClusterPreset>& presets, int start, const std::string& path) {
  const sim::ClusterModel file = sim::load_cluster_file(path);
  const std::string name = std::filesystem::path(path).filename().string();
  if (file.collectives_given || presets.empty()) {
    presets.push_back({name, file, false});
    return static_cast<int>(presets.size()) - 1;
  }
  start = std::clamp(start, 0, static_cast<int>(presets.size()) - 1);
  ClusterPreset p = presets[static_cast<std::size_t>(start)];
  p.name += " + " + name;
  p.cluster.host_link_GBps = file.host_link_GBps;
  p.cluster.host_optimizer_params_per_s = file.host_optimizer_params_per_s;
  p.cluster.fsdp_unit_forward_us = file.fsdp_unit_forward_us;
  p.cluster.fsdp_unit_backward_us = file.fsdp_unit_backward_us;
  presets.insert(presets.begin() + start + 1, std::move(p));
  return start + 1;
}

UnshardSession::UnshardSession(sim::SimInputs inputs, std::vector<ClusterPreset> presets, int initial_preset)
    : in_(std::move(inputs)), presets_(std::move(presets)) {
  if (presets_.empty()) presets_.push_back({"profile (" + in_.cluster.name + ")", in_.cluster, in_.fitted});
  state_.preset = std::clamp(initial_preset, 0, static_cast<int>(presets_.size()) - 1);
  const std::size_t n = in_.model.units.size();
  state_.keep.assign(n, 0);
  for (std::size_t u = 0; u < n; ++u)
    if (in_.model.units[u].is_root) state_.keep[u] = 1;
  for (const auto& name : in_.plan.unsharded) {
    const int u = in_.model.find_unit(name);
    if (u >= 0) state_.keep[static_cast<std::size_t>(u)] = 1;
  }
  // The base plan's own bucket caps become the panel's default and overrides.
  for (const auto& [key, mb] : in_.plan.bucket_cap_mb) {
    if (key == "default") state_.bucket_cap_mb = mb;
    else
      try {
        state_.bucket_cap_overrides_mb[std::stoi(key)] = mb;
      } catch (const std::exception&) {
        // compile_step ignores keys that are not bucket indices; so does the panel.
      }
  }
  state_.checkpoint = checkpoint_per_unit(in_.model, in_.plan.checkpoint, "");
  state_.offload = in_.plan.offload;
  state_.offload_prefetch_depth = in_.plan.offload_prefetch_depth;
  state_.pipelined_optimizer = in_.plan.pipelined_optimizer;
  state_.parallel = in_.plan.parallel;
  state_.micro_batches = in_.plan.gradient_accumulation;
  state_.world_size = profile_world_ = in_.cluster.world_size;
  state_.gpus_per_node = profile_per_node_ = in_.cluster.gpus_per_node;
  // The device's memory; a device without a known capacity (a CPU run) starts at the measured
  // peak plus a quarter, so that "Plan automatically" has room to choose from without the budget
  // reading as unlimited.
  const auto dev = sim::find_device(in_.cluster.device);
  state_.budget_bytes = dev ? static_cast<std::int64_t>(dev->memory_GiB * 1024.0 * 1024.0 * 1024.0)
                      : in_.measured_peak_bytes > 0 ? in_.measured_peak_bytes + in_.measured_peak_bytes / 4
                                                    : std::numeric_limits<std::int64_t>::max();
  pred_ = predict(state_);
  ++revision_;
}

UnshardSession UnshardSession::from_profile(const std::string& path, const std::string& clusters_dir,
                                           std::shared_ptr<const Profile> loaded, const std::string& measured_cluster) {
  sim::SimInputRequest req;
  req.profile_path = path;
  req.loaded = std::move(loaded);
  req.fit = true;
  sim::SimInputs in = sim::load_sim_inputs(req);
  // The profile's configuration on the preset cluster first; the same fitted to the profile's own
  // collectives second and chosen, as `shardscope simulate IN` does, when it has any to fit to.
  const sim::ClusterModel fitted = in.cluster;
  const int samples = in.fit.samples[0] + in.fit.samples[1] + in.fit.samples[2];
  in.cluster = in.unfitted_cluster;
  in.fitted = false;
  auto presets = load_cluster_presets(in.cluster, clusters_dir);
  if (samples > 0) presets.insert(presets.begin() + 1, ClusterPreset{"profile, fitted to its collectives (--fit)", fitted, true});
  int start = samples > 0 ? 1 : 0;
  if (!measured_cluster.empty()) start = add_measured_preset(presets, start, measured_cluster);
  return UnshardSession(std::move(in), std::move(presets), start);
}

UnshardSession UnshardSession::from_model(const std::string& path, int world, const std::string& clusters_dir,
                                         const std::string& measured_cluster) {
  sim::SimInputRequest req;
  req.model_path = path;
  req.world_override = world;
  sim::SimInputs in = sim::load_sim_inputs(req);
  auto presets = load_cluster_presets(in.cluster, clusters_dir);
  presets.front().name = "default (" + in.cluster.name + ")";
  const int start = measured_cluster.empty() ? 0 : add_measured_preset(presets, 0, measured_cluster);
  return UnshardSession(std::move(in), std::move(presets), start);
}

const std::vector<std::string>& UnshardSession::checkpoint_choices(int u) const {
  static const std::vector<std::string> kNone;
  return u >= 0 && static_cast<std::size_t>(u) < pred_.checkpoint_choices.size() ? pred_.checkpoint_choices[static_cast<std::size_t>(u)]
                                                                                : kNone;
}

sim::ClusterModel UnshardSession::cluster_for(const UnshardState& s) const {
  sim::ClusterModel c = presets_[static_cast<std::size_t>(std::clamp<int>(s.preset, 0, static_cast<int>(presets_.size()) - 1))].cluster;
  c.world_size = s.world_size;
  c.gpus_per_node = s.gpus_per_node;
  return c;
}

sim::FsdpPlan UnshardSession::plan_for(const UnshardState& s) const {
  sim::FsdpPlan p = in_.plan;
  p.unsharded.clear();
  for (std::size_t u = 0; u < s.keep.size(); ++u)
    if (s.keep[u] && !in_.model.units[u].is_root) p.unsharded.push_back(in_.model.units[u].name);
  if (!s.buckets.empty()) p.buckets = s.buckets;
  p.bucket_cap_mb.clear();
  if (s.bucket_cap_mb > 0) p.bucket_cap_mb["default"] = s.bucket_cap_mb;
  for (const auto& [bucket, mb] : s.bucket_cap_overrides_mb) p.bucket_cap_mb[std::to_string(bucket)] = mb;
  p.world_size = 0;  // the cluster's, which carries the panel's world size
  p.checkpoint.clear();
  for (std::size_t u = 0; u < s.checkpoint.size() && u < in_.model.units.size(); ++u)
    if (s.checkpoint[u] != "none" && !in_.model.units[u].is_root) p.checkpoint[in_.model.units[u].name] = s.checkpoint[u];
  p.offload = s.offload;
  p.offload_prefetch_depth = s.offload_prefetch_depth;
  p.pipelined_optimizer = s.pipelined_optimizer;
  p.parallel = s.parallel;
  p.gradient_accumulation = s.micro_batches;
  return p;
}

const sim::SimResult& UnshardSession::baseline_for(int preset, int world, int per_node) const {
  const auto key = std::make_tuple(preset, world, per_node);
  auto it = baselines_.find(key);
  if (it != baselines_.end()) return it->second;
  UnshardState s;
  s.preset = preset;
  s.world_size = world;
  s.gpus_per_node = per_node;
  sim::FsdpPlan base = in_.plan;
  base.world_size = 0;  // the cluster's, as plan_for
  sim::SimResult r = sim::simulate(sim::compile_step(in_.model, base, cluster_for(s)));  // throws before caching
  if (baselines_.size() >= 256) baselines_.clear();  // a user spinning the world size box; references are not kept
  return baselines_.emplace(key, std::move(r)).first->second;
}

Prediction UnshardSession::predict(const UnshardState& s) const {
  Prediction p;
  const sim::ClusterModel c = cluster_for(s);
  p.step = sim::compile_step(in_.model, plan_for(s), c);
  p.result = sim::simulate(p.step);
  p.step_ns = p.result.step_ns;
  p.compute_ns = p.result.compute_busy_ns;
  p.exposed_comm_ns = p.result.exposed_comm_ns;
  p.peak_bytes = p.result.peak_bytes;
  p.budget_bytes = s.budget_bytes;
  if (auto dev = sim::find_device(c.device)) p.gpu_capacity_bytes = static_cast<std::int64_t>(dev->memory_GiB * 1024.0 * 1024.0 * 1024.0);
  p.fits_budget = p.peak_bytes <= p.budget_bytes;
  p.fits_gpu = p.gpu_capacity_bytes == 0 || p.peak_bytes <= p.gpu_capacity_bytes;
  p.measured_step_ns = in_.reference_step_ns();  // the unobserved step when calibrated to it (record --steps)
  const int preset = std::clamp<int>(s.preset, 0, static_cast<int>(presets_.size()) - 1);
  // The baseline is a comparison, not the prediction: when the base plan cannot run on this
  // configuration (its own parallelism does not divide the new world size), there is none.
  try {
    p.baseline = baseline_for(preset, s.world_size, s.gpus_per_node);
  } catch (const ProfileError&) {
    p.baseline = {};
  }
  p.baseline_step_ns = p.baseline.step_ns;
  p.baseline_peak_bytes = p.baseline.peak_bytes;
  p.preset_fitted = presets_[static_cast<std::size_t>(preset)].fitted;
  if (in_.from_profile && in_.measured_step_ns > 0)  // a model description has nothing to replay against
    p.replay = sim::check_replay(in_, baseline_for(preset, profile_world_, profile_per_node_), p.preset_fitted);
  // Per-exec figures shown on each SimModel unit (a bucket's on each member: they move together).
  auto per_unit = [&](const std::vector<TimeNs>& per_exec) {
    std::vector<TimeNs> out(in_.model.units.size(), 0);
    for (std::size_t u = 0; u < p.step.exec_of_unit.size() && u < out.size(); ++u)
      if (const int e = p.step.exec_of_unit[u]; e >= 0) out[u] = per_exec[static_cast<std::size_t>(e)];
    return out;
  };
  p.exposed_ag_ns = per_unit(exposed_all_gather_per_exec(p.result, p.step.units.size()));
  p.host_copy_ns = p.step.offload != sim::Offload::None ? per_unit(host_copy_per_exec(p.result, p.step.units.size()))
                                                        : std::vector<TimeNs>(in_.model.units.size(), 0);
  // Checkpointing choices: "none", "full" and the unit's named sub-modules, where checkpointing
  // would change the step (computed once per prediction: the unit tree asks on every repaint).
  p.checkpoint_choices.assign(in_.model.units.size(), {});
  for (std::size_t u = 0; u < p.checkpoint_choices.size(); ++u) {
    const int e = u < p.step.exec_of_unit.size() ? p.step.exec_of_unit[u] : -1;
    if (in_.model.units[u].is_root || e < 0 || !sim::checkpointable(p.step, e)) continue;
    std::vector<std::string>& out = p.checkpoint_choices[u];
    out = {"none", "full"};
    for (const auto& sg : in_.model.segments)
      if (sg.unit == static_cast<int>(u))
        for (const auto& part : sg.parts)
          if (std::find(out.begin(), out.end(), part.name) == out.end()) out.push_back(part.name);
  }
  bucket_indices(p, s);
  return p;
}

// compile_step makes the plan's explicit buckets first, then the auto-buckets in forward order
// (bucket index 0, 1, ...) from the non-root units with compute that no explicit bucket holds,
// then one exec unit per remaining unit. So an auto-bucketed unit's bucket index is its exec
// unit's index less the number of explicit buckets.
void UnshardSession::bucket_indices(Prediction& p, const UnshardState& s) const {
  const std::size_t n = in_.model.units.size();
  p.bucket_of_unit.assign(n, -1);
  p.bucket_count = 0;
  p.listed_bucket_of_unit.assign(n, -1);
  p.listed_buckets.clear();
  int explicit_buckets = 0;
  std::vector<char> in_explicit(n, 0);
  for (const auto& b : s.buckets.empty() ? in_.plan.buckets : s.buckets) {  // as plan_for has them
    if (!b.empty()) ++explicit_buckets;
    if (b.size() >= 2) p.listed_buckets.push_back(b);
    for (const auto& name : b) {
      const int u = in_.model.find_unit(name);
      if (u < 0) continue;
      in_explicit[static_cast<std::size_t>(u)] = 1;
      if (b.size() >= 2) p.listed_bucket_of_unit[static_cast<std::size_t>(u)] = static_cast<int>(p.listed_buckets.size()) - 1;
    }
  }
  const bool on = s.bucket_cap_mb > 0 || !s.bucket_cap_overrides_mb.empty();
  if (!on) return;
  std::vector<char> has_compute(n, 0);
  for (const auto& sg : in_.model.segments)
    if (sg.unit >= 0 && static_cast<std::size_t>(sg.unit) < n) has_compute[static_cast<std::size_t>(sg.unit)] = 1;
  for (std::size_t u = 0; u < n && u < p.step.exec_of_unit.size(); ++u) {
    if (in_.model.units[u].is_root || in_explicit[u] || !has_compute[u]) continue;
    p.bucket_of_unit[u] = p.step.exec_of_unit[u] - explicit_buckets;
    p.bucket_count = std::max(p.bucket_count, p.bucket_of_unit[u] + 1);
  }
}

void UnshardSession::apply(UnshardState next, const std::string& label) {
  if (next == state_) return;
  Prediction p = predict(next);  // throws before anything changes
  undo_.push_back({state_, label});
  redo_.clear();
  state_ = std::move(next);
  pred_ = std::move(p);
  ++revision_;
}

void UnshardSession::set_keep(int unit, bool keep) {
  if (unit < 0 || unit >= unit_count() || unit_fixed(unit)) return;
  UnshardState s = state_;
  s.keep[static_cast<std::size_t>(unit)] = keep ? 1 : 0;
  s.strategy = "manual";
  const std::string& n = this->unit(unit).name;
  apply(std::move(s), (keep ? "keep " : "reshard ") + (n.empty() ? std::string("(root)") : n));
}

void UnshardSession::set_world_size(int n) {
  UnshardState s = state_;
  s.world_size = n;
  apply(std::move(s), "world size " + std::to_string(n));
}

void UnshardSession::set_gpus_per_node(int n) {
  UnshardState s = state_;
  s.gpus_per_node = n;
  apply(std::move(s), "GPUs per node " + std::to_string(n));
}

void UnshardSession::set_bucket_cap_mb(double mb) {
  UnshardState s = state_;
  s.bucket_cap_mb = std::max(0.0, mb);
  apply(std::move(s), "default bucket cap");
}

void UnshardSession::set_bucket_cap_override(int bucket, double mb) {
  if (bucket < 0) return;
  UnshardState s = state_;
  const std::string name = "bucket #" + std::to_string(bucket) + " cap";
  if (mb > 0) {
    s.bucket_cap_overrides_mb[bucket] = mb;
    apply(std::move(s), name);
  } else {
    s.bucket_cap_overrides_mb.erase(bucket);
    apply(std::move(s), name + " override removed");
  }
}

void UnshardSession::clear_bucket_cap_overrides() {
  UnshardState s = state_;
  s.bucket_cap_overrides_mb.clear();
  apply(std::move(s), "bucket cap overrides removed");
}

double UnshardSession::bucket_cap_of(int bucket) const {
  if (!bucketing_on()) return 0;
  const auto it = state_.bucket_cap_overrides_mb.find(bucket);
  if (it != state_.bucket_cap_overrides_mb.end()) return it->second;
  return state_.bucket_cap_mb > 0 ? state_.bucket_cap_mb : kInductorBucketCapMb;
}

void UnshardSession::set_budget_bytes(std::int64_t b) {
  UnshardState s = state_;
  s.budget_bytes = b;
  apply(std::move(s), "memory budget");
}

void UnshardSession::set_preset(int i) {
  if (i < 0 || i >= static_cast<int>(presets_.size())) return;
  UnshardState s = state_;
  s.preset = i;
  apply(std::move(s), "cluster " + presets_[static_cast<std::size_t>(i)].name);
}

void UnshardSession::set_checkpoint(int unit, const std::string& mode) {
  if (unit < 0 || unit >= unit_count() || unit_fixed(unit)) return;
  if (mode.empty()) refuse("activation_checkpointing: empty mode (\"none\", \"full\" or a sub-module name)");
  UnshardState s = state_;
  s.checkpoint[static_cast<std::size_t>(unit)] = mode;
  const std::string& n = this->unit(unit).name;
  apply(std::move(s), "checkpoint " + n + " " + mode);
}

void UnshardSession::set_checkpoint_all(const std::string& mode) {
  UnshardState s = state_;
  for (int u = 0; u < unit_count(); ++u) {
    const auto& choices = checkpoint_choices(u);
    if (std::find(choices.begin(), choices.end(), mode) != choices.end()) s.checkpoint[static_cast<std::size_t>(u)] = mode;
  }
  apply(std::move(s), "checkpoint every unit " + mode);
}

void UnshardSession::set_offload(const std::string& mode) {
  if (!sim::valid_offload(mode)) refuse("offload: '" + mode + "' (expected \"none\", \"optimizer\" or \"cpu\")");
  UnshardState s = state_;
  s.offload = mode;
  apply(std::move(s), "offload " + mode);
}

void UnshardSession::set_offload_prefetch_depth(int k) {
  if (k < 1 || k > sim::kMaxOffloadPrefetchDepth) refuse("offload_prefetch_depth: " + std::to_string(k) + " (expected 1 to 1024)");
  UnshardState s = state_;
  s.offload_prefetch_depth = k;
  apply(std::move(s), "offload prefetch depth " + std::to_string(k));
}

void UnshardSession::set_pipelined_optimizer(bool on) {
  UnshardState s = state_;
  s.pipelined_optimizer = on;
  apply(std::move(s), on ? "pipelined CPU optimizer" : "CPU optimizer after backward");
}

void UnshardSession::set_parallelism(const sim::Parallelism& par) {
  // compile_step divides by these degrees: checked here against the plan file's limits.
  for (const auto& [name, v] : {std::pair<const char*, int>{"tp", par.tp}, {"cp", par.cp}, {"pp", par.pp}, {"pp_virtual", par.pp_virtual}, {"ep", par.ep}})
    if (v < 1 || v > sim::kMaxParallelDegree) refuse(std::string("parallelism.") + name + ": " + std::to_string(v) + " (expected a degree >= 1)");
  if (!sim::valid_cp_kind(par.cp_kind)) refuse("parallelism.cp_kind: '" + par.cp_kind + "' (expected \"ulysses\" or \"ring\")");
  if (!sim::valid_pp_schedule(par.pp_schedule))
    refuse("parallelism.pp_schedule: '" + par.pp_schedule + "' (expected \"1f1b\", \"gpipe\" or \"interleaved\")");
  UnshardState s = state_;
  s.parallel = par;
  std::string label = "parallelism tp " + std::to_string(par.tp) + (par.sequence_parallel ? "+sp" : "") + ", cp " + std::to_string(par.cp);
  if (par.cp > 1) label += " " + par.cp_kind;
  label += ", pp " + std::to_string(par.pp);
  if (par.pp > 1) label += " " + par.pp_schedule + (par.pp_virtual > 1 ? " x" + std::to_string(par.pp_virtual) : "");
  label += ", ep " + std::to_string(par.ep);
  apply(std::move(s), label);
}

void UnshardSession::set_micro_batches(int n) {
  if (n < 1 || n > sim::kMaxMicroBatches) refuse("gradient_accumulation: " + std::to_string(n) + " micro-batches (expected 1 to 4096)");
  UnshardState s = state_;
  s.micro_batches = n;
  apply(std::move(s), std::to_string(n) + " micro-batches");
}

void UnshardSession::apply_plan_file_json(const std::string& json, const std::string& where) {
  const sim::FsdpPlan plan = sim::parse_plan_json(json, where);
  UnshardState s = state_;
  std::fill(s.keep.begin(), s.keep.end(), 0);
  for (std::size_t u = 0; u < s.keep.size(); ++u)
    if (in_.model.units[u].is_root) s.keep[u] = 1;
  for (const auto& name : plan.unsharded) {
    const int u = in_.model.find_unit(name);
    if (u < 0) throw ProfileError(ProfileErrorKind::MalformedTable, where + ": unsharded: this profile has no FSDP unit '" + name + "'");
    s.keep[static_cast<std::size_t>(u)] = 1;
  }
  for (const auto& b : plan.buckets)
    for (const auto& name : b)
      if (in_.model.find_unit(name) < 0)
        throw ProfileError(ProfileErrorKind::MalformedTable, where + ": buckets: this profile has no FSDP unit '" + name + "'");
  s.buckets = plan.buckets;
  s.bucket_cap_mb = 0;
  s.bucket_cap_overrides_mb.clear();
  for (const auto& [key, mb] : plan.bucket_cap_mb) {
    if (key == "default") {
      s.bucket_cap_mb = mb;
      continue;
    }
    int bucket = -1;
    try {
      bucket = std::stoi(key);
    } catch (const std::exception&) {
    }
    if (bucket < 0 || std::to_string(bucket) != key)
      throw ProfileError(ProfileErrorKind::MalformedTable, where + ": bucket_cap_mb." + key + ": expected \"default\" or a bucket index");
    s.bucket_cap_overrides_mb[bucket] = mb;
  }
  if (plan.world_size > 0) s.world_size = plan.world_size;
  s.checkpoint = checkpoint_per_unit(in_.model, plan.checkpoint, where);
  s.offload = plan.offload;
  s.offload_prefetch_depth = plan.offload_prefetch_depth;
  s.pipelined_optimizer = plan.pipelined_optimizer;
  s.parallel = plan.parallel;
  s.micro_batches = plan.gradient_accumulation;
  simdjson::dom::parser parser;
  const auto root = sim::as_object(sim::parse_json(parser, json, where), where, "");
  simdjson::dom::element predicted;
  if (!root["predicted"].get(predicted)) {
    const auto o = sim::as_object(predicted, where, "predicted");
    if (auto v = sim::get_string(o, "strategy", where, "predicted")) s.strategy = *v;
    // `plan` without --budget writes the largest int64 ("no budget"): the panel keeps its own then.
    if (auto v = sim::get_int(o, "budget_bytes", where, "predicted"); v && *v > 0 && *v < std::numeric_limits<std::int64_t>::max())
      s.budget_bytes = *v;
  }
  apply(std::move(s), "plan from " + where);
}

bool UnshardSession::undo() {
  if (undo_.empty()) return false;
  Entry e = std::move(undo_.back());
  undo_.pop_back();
  redo_.push_back({state_, e.label});
  state_ = std::move(e.state);
  pred_ = predict(state_);
  ++revision_;
  return true;
}

bool UnshardSession::redo() {
  if (redo_.empty()) return false;
  Entry e = std::move(redo_.back());
  redo_.pop_back();
  undo_.push_back({state_, e.label});
  state_ = std::move(e.state);
  pred_ = predict(state_);
  ++revision_;
  return true;
}

sim::PlanOutcome UnshardSession::plan_automatically(sim::Strategy strategy) {
  // Plan from scratch on the current configuration: only the root (and the base plan's own
  // choices) kept, every other unit a candidate.
  UnshardState from = state_;
  std::fill(from.keep.begin(), from.keep.end(), 0);
  sim::FsdpPlan base_plan = plan_for(from);
  base_plan.unsharded = in_.plan.unsharded;
  const sim::ClusterModel c = cluster_for(from);
  const sim::CompiledStep base = sim::compile_step(in_.model, base_plan, c);
  sim::PlanRequest req;
  req.strategy = strategy;
  req.budget_bytes = state_.budget_bytes;
  sim::PlanOutcome o = sim::plan_unshard(in_.model, base, c, req);
  UnshardState next = from;
  for (std::size_t u = 0; u < next.keep.size(); ++u)
    if (in_.model.units[u].is_root) next.keep[u] = 1;
  for (const auto& names : {in_.plan.unsharded, o.unsharded})
    for (const auto& n : names) {
      const int u = in_.model.find_unit(n);
      if (u >= 0) next.keep[static_cast<std::size_t>(u)] = 1;
    }
  next.strategy = strategy == sim::Strategy::Greedy ? "greedy" : strategy == sim::Strategy::Exact ? "exact" : "cost";
  apply(std::move(next), "plan automatically (" + std::to_string(o.unsharded.size()) + " units)");
  return o;
}

sim::BucketOutcome UnshardSession::plan_buckets_automatically() {
  sim::BucketOutcome o = sim::plan_buckets(in_.model, plan(), cluster(), state_.budget_bytes);
  UnshardState next = state_;
  next.buckets = o.buckets;
  next.bucket_cap_mb = 0;  // resolved into the lists
  next.bucket_cap_overrides_mb.clear();
  apply(std::move(next), "plan buckets (" + std::to_string(o.buckets.size()) + " of two or more units)");
  return o;
}

std::string UnshardSession::plan_file_json() const {
  sim::PlanOutcome o;
  o.result = pred_.result;
  o.baseline = pred_.baseline;
  o.fits = pred_.fits_budget;
  return sim::plan_file_json(plan_for_export(), o, state_.strategy, state_.budget_bytes, in_.model.second_model_roots());
}

sim::FsdpPlan UnshardSession::plan_for_export() const {
  sim::FsdpPlan p = plan();
  p.fsdp2_buckets = sim::formed_buckets(in_.model, pred_.step, p);
  return p;
}

void UnshardSession::export_plan(const std::string& path) const { sim::write_file_atomically(path, plan_file_json()); }

}  // namespace ss::unshard
