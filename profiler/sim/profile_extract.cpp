#include "profiler/sim/profile_extract.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "profiler/sim/device_table.h"
#include "profiler/sim/repeated_calls.h"
#include "profiler/sim/sim_inputs.h"
#include "storage/collective_match.h"
#include "storage/cpu_device.h"
#include "storage/errors.h"
#include "storage/interval_union.h"
#include "storage/profile_reader.h"
#include "storage/sqlite_handle.h"
#include "storage/value_bounds.h"

namespace ss::sim {
namespace {

// A step far longer than the others is not the training step the replay stands for: a checkpoint
// save between two optimizer steps (DCP's planning collectives and file writes: 361 and 157 ms
// steps among 57-77 ms ones on the user loop, which made the measured step 120 ms and the replay
// of a 62 ms job twice its length), a long pause of the host. With three steps or more, those over
// kLongStepFactor x the median (the lower one) are left out; the unobserved reference is a median
// too. Two steps have no median that tells one of them apart; a wall-time drift of the machine
// moves the whole window, not single steps.
void leave_out_long_steps(std::vector<StepRow>& steps, ProfileInput& in) {
  if (in.window_only || steps.size() < 3) return;
  std::vector<TimeNs> d;
  for (const auto& st : steps) d.push_back(st.end - st.start);
  std::sort(d.begin(), d.end());
  const double limit = kLongStepFactor * double(d[(d.size() - 1) / 2]);
  std::vector<StepRow> kept;
  double long_total = 0;
  for (const auto& st : steps)
    if (double(st.end - st.start) <= limit) kept.push_back(st);
    else long_total += double(st.end - st.start);
  if (kept.size() == steps.size()) return;
  in.long_steps_left_out = static_cast<int>(steps.size() - kept.size());
  in.long_steps_ns = static_cast<TimeNs>(long_total / in.long_steps_left_out);
  steps = std::move(kept);
}

// HSDP in the recorded collectives: every reduce-scatter over g < world ranks is followed by an
// all-reduce of its 1/g output over the other world / g ranks (the replicas of that shard). A
// TP all-reduce of activations in a group of the same size does not match a reduce-scatter's
// bytes; all of them must match, so a dp x tp run is not taken for HSDP.
template <class InStep>
int recorded_hsdp_replicate(const Profile& p, int rank, int world, const FsdpGroups& ours, InStep in_step) {
  std::map<std::int64_t, long> scattered;  // reduce-scatter output bytes -> count, per shard group size
  int shard = 0;
  long rs = 0;
  std::multiset<std::int64_t> reduced;  // all-reduce bytes over world / shard ranks
  for (const auto& c : p.collectives) {
    if (c.rank != rank || !in_step(c.start) || !ours.holds(c)) continue;
    if (c.type == CollectiveType::ReduceScatter) {
      if (c.group_size <= 1 || c.group_size >= world || world % c.group_size != 0 || (shard && c.group_size != shard)) return 1;
      shard = c.group_size;
      ++scattered[c.bytes / shard];
      ++rs;
    }
  }
  if (rs == 0) return 1;
  const int replicate = world / shard;
  for (const auto& c : p.collectives)
    if (c.rank == rank && in_step(c.start) && c.type == CollectiveType::AllReduce && c.group_size == replicate)
      reduced.insert(c.bytes);
  for (auto& [bytes, n] : scattered)
    for (; n > 0; --n) {
      auto it = reduced.find(bytes);
      if (it == reduced.end()) return 1;
      reduced.erase(it);
    }
  return replicate;
}

// Bytes per parameter that one kind of FSDP collective carried, from this rank's collectives in
// the steps compared: the largest one carries the largest unit (padding aside). Only in steps:
// a weight gathered at initialisation (torchtitan's, a DTensor's full_tensor()) is in the master
// dtype, and taking it made a bf16 run's replay gather fp32. 0: no such collective, or no dtype fits.
template <class InStep>
int recorded_dtype_bytes(const Profile& p, int rank, CollectiveType type, std::int64_t max_unit_params, const FsdpGroups& ours,
                         InStep in_step) {
  std::int64_t largest = 0;
  for (const auto& c : p.collectives)
    if (c.rank == rank && c.type == type && in_step(c.start) && ours.holds(c)) largest = std::max(largest, c.bytes);
  if (largest <= 0 || max_unit_params <= 0) return 0;
  const double ratio = static_cast<double>(largest) / static_cast<double>(max_unit_params);
  for (int b : {1, 2, 4, 8})
    if (ratio > b * 0.9 && ratio < b * 1.1) return b;
  return 0;
}

// meta rank<R>.fsdp_dtype_bytes = "<gathered> <reduced>" (hooks.py, fsdp2_dtype_bytes): the bytes per
// element FSDP2's policy gathers and reduces in; {0, 0} when absent or unreadable. Where no FSDP
// collective shows them (FSDP over one rank beside tensor parallelism: none is issued) they stand
// in; a CPU run of fp32 parameters had been replayed gathering bf16 (its unsharded units half).
std::pair<int, int> recorded_fsdp_dtypes(const Profile& p, int rank) {
  const auto it = p.meta.find("rank" + std::to_string(rank) + ".fsdp_dtype_bytes");
  if (it == p.meta.end()) return {0, 0};
  std::istringstream words(it->second);
  int gathered = 0, reduced = 0;
  const auto ok = [](int b) { return b == 1 || b == 2 || b == 4 || b == 8; };
  if (!(words >> gathered >> reduced) || !ok(gathered) || !ok(reduced)) return {0, 0};
  return {gathered, reduced};
}

// meta rank<R>.<phase>_prefetch.<fqn> = "<unit> <unit> ..." (hooks.py, fsdp2_prefetch_lists): the
// units a unit prefetches explicitly in that phase, in the order it issues them. A list naming
// what is not a unit of this model is dropped whole (the replay would prefetch part of it).
std::map<std::string, std::vector<std::string>> recorded_prefetch(const Profile& p, int rank, const std::string& phase,
                                                                  const SimModel& sm) {
  std::map<std::string, std::vector<std::string>> lists;
  const std::string prefix = "rank" + std::to_string(rank) + "." + phase + "_prefetch.";
  for (auto it = p.meta.lower_bound(prefix); it != p.meta.end() && it->first.rfind(prefix, 0) == 0; ++it) {
    const std::string from = it->first.substr(prefix.size());
    std::vector<std::string> targets;
    std::istringstream words(it->second);
    bool ok = sm.find_unit(from) >= 0;
    for (std::string w; ok && words >> w;) {
      ok = sm.find_unit(w) >= 0;
      targets.push_back(w);
    }
    if (ok && !targets.empty()) lists[from] = std::move(targets);
  }
  return lists;
}

// meta rank<R>.param_groups.<fqn> = "<elements>@<mesh size> ..." (hooks.py, fsdp2_group_sizes):
// an FSDP2 unit whose parameters sit on several meshes, each group's parameters unsharded on this
// rank and the size of the mesh FSDP shards them over. The largest mesh is the unit's own (the
// data-parallel one); a group on a mesh k times smaller holds 1/k of its parameters on each of the
// k-way expert-parallel ranks (torchtitan: experts over dp_shard / ep ranks). Kept only when the
// groups add up to the unit's parameters; anything else is left as one group on the unit's mesh.
void add_apart_groups(const Profile& p, int rank, SimModel& sm, bool model_parallel) {
  const std::string prefix = "rank" + std::to_string(rank) + ".param_groups.";
  for (auto it = p.meta.lower_bound(prefix); it != p.meta.end() && it->first.rfind(prefix, 0) == 0; ++it) {
    const int u = sm.find_unit(it->first.substr(prefix.size()));
    if (u < 0) continue;
    std::vector<std::pair<std::int64_t, int>> groups;  // (elements on this rank, mesh size)
    std::istringstream words(it->second);
    bool ok = true;
    for (std::string w; ok && words >> w;) {
      const auto at = w.find('@');
      std::int64_t n = -1;
      int k = 0;
      ok = at != std::string::npos && std::from_chars(w.data(), w.data() + at, n).ec == std::errc() &&
           std::from_chars(w.data() + at + 1, w.data() + w.size(), k).ec == std::errc() && n >= 0 &&
           n < (std::int64_t{1} << 50) && k >= 1;
      if (ok) groups.emplace_back(n, k);
    }
    if (!ok || groups.empty() || (groups.size() < 2 && !model_parallel)) continue;
    const int main_mesh = std::max_element(groups.begin(), groups.end(), [](auto& a, auto& b) { return a.second < b.second; })->second;
    std::vector<SimUnit::ApartGroup> apart;
    std::int64_t total = 0;
    bool main_seen = false;
    for (const auto& [n, k] : groups) {
      if (k == main_mesh && !main_seen) {
        main_seen = true, total += n;
        continue;
      }
      ok = ok && main_mesh % k == 0;
      const int ep = main_mesh / k;
      apart.push_back({n * ep, ep, k});
      total += n * ep;
    }
    SimUnit& unit = sm.units[static_cast<std::size_t>(u)];
    // Beside tensor parallelism the unit holds what FSDP gathers on this rank: its TP shard (the
    // modules table counts a DTensor whole). Two TP ranks' units are each half the size.
    if (ok && model_parallel) unit.param_count = total;
    if (ok && total == unit.param_count) unit.apart_groups = std::move(apart);
  }
}

// meta rank<R>.unit_input.<fqn> = bytes (hooks.py, _write_unit_input): what a unit's forward
// receives that needs a gradient, the activation a block is handed. Full checkpointing keeps it
// and a pipeline stage sends it (SimSegment::input_bytes); without it (profiles recorded before
// 2026-12-06) a checkpointed unit kept nothing and a pipeline what-if sent 0 bytes.
void add_unit_inputs(const Profile& p, int rank, SimModel& sm) {
  const std::string prefix = "rank" + std::to_string(rank) + ".unit_input.";
  for (auto it = p.meta.lower_bound(prefix); it != p.meta.end() && it->first.rfind(prefix, 0) == 0; ++it) {
    const std::string fqn = it->first.substr(prefix.size());
    const int u = sm.find_unit(fqn);
    if (u < 0 || sm.units[static_cast<std::size_t>(u)].is_root || sm.units[static_cast<std::size_t>(u)].name != fqn) continue;
    std::int64_t bytes = -1;
    const std::string& v = it->second;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), bytes);
    if (ec != std::errc() || end != v.data() + v.size() || bytes < 0 || bytes >= (std::int64_t{1} << 50)) continue;
    for (auto& sg : sm.segments)
      if (sg.unit == u) sg.input_bytes = bytes;
  }
}

// Gradient accumulation with the parameters kept unsharded between passes (FSDP2's
// set_reshard_after_backward(False) on all but the last; FSDP1's SHARD_GRAD_OP under no_sync()):
// the passes after a step's first gather (almost) nothing in their forward. false when the later
// passes' forward stretches hold on average under half the all-gathers of the first passes'
// (a user's loop: 5 against 0; a unit kept unsharded or resharded differs by one or two).
bool gathers_after_first_pass(const Profile& p, int rank, const FsdpGroups& ours, const std::vector<TimeInterval>& first,
                              const std::vector<TimeInterval>& later) {
  if (first.empty() || later.empty()) return true;
  auto gathers_in = [&](const std::vector<TimeInterval>& windows) {
    long n = 0;
    for (const auto& c : p.collectives)
      if (c.rank == rank && c.type == CollectiveType::AllGather && ours.holds(c) && interval_holding(windows, c.start) >= 0) ++n;
    return double(n) / double(windows.size());
  };
  const double at_first = gathers_in(first);
  return at_first == 0 || gathers_in(later) >= 0.5 * at_first;
}

// Gradient accumulation as recorded: whether the passes before a step's last one reduce-scatter
// too, or only the last (FSDP2's set_requires_gradient_sync(False) on the others, FSDP1's
// no_sync()). A GPU's collectives may run after their pass's host ranges end, so it is a count: the
// earlier passes hold at least half as many reduce-scatters each as the last ones. None at all
// (a profile without collectives): every pass, the simulator's default.
bool reduces_every_pass(const Profile& p, int rank, const FsdpGroups& ours, const std::vector<TimeInterval>& passes,
                        const std::vector<TimeInterval>& steps) {
  std::vector<bool> last(passes.size(), false);
  for (std::size_t k = 0; k < passes.size(); ++k)
    last[k] = std::any_of(steps.begin(), steps.end(), [&](const TimeInterval& s) { return s.second == passes[k].second; });
  double in_last = 0, in_others = 0;
  for (const auto& c : p.collectives) {
    if (c.rank != rank || c.type != CollectiveType::ReduceScatter || !ours.holds(c)) continue;
    const auto k = interval_holding(passes, c.start);
    if (k >= 0) (last[static_cast<std::size_t>(k)] ? in_last : in_others) += 1;
  }
  const double n_last = double(std::count(last.begin(), last.end(), true)), n_others = double(passes.size()) - n_last;
  if (in_last + in_others == 0 || n_last == 0 || n_others == 0) return true;
  return in_others / n_others >= 0.5 * in_last / n_last;
}

// SimUnit::reduce_split from each unit's reductions per pass (bytes, in order), keyed by (unit,
// pass): where every pass that reduces the unit makes the same number k > 1 of them, and they are
// parts of one reduction (of different sizes: the same bytes again are the unit reduced again, a
// GAN's discriminator after each of its two backward passes, check_replay's case).
void set_reduce_splits(std::map<std::pair<int, std::ptrdiff_t>, std::vector<double>>& reductions, SimModel& sm) {
  std::map<int, std::vector<std::vector<double>>> by_unit;
  for (auto& [key, list] : reductions) by_unit[key.first].push_back(std::move(list));
  for (auto& [u, passes] : by_unit) {
    const std::size_t k = passes.front().size();
    if (k < 2 || std::any_of(passes.begin(), passes.end(), [&](const auto& l) { return l.size() != k; })) continue;
    std::vector<double> share(k, 0.0);
    double total = 0;
    for (const auto& l : passes)
      for (std::size_t j = 0; j < k; ++j) share[j] += l[j], total += l[j];
    if (std::all_of(share.begin(), share.end(), [&](double v) { return v == share.front(); })) continue;
    for (auto& v : share) v = total > 0 ? v / total : 1.0 / double(k);
    sm.units[static_cast<std::size_t>(u)].reduce_split = std::move(share);
  }
}

// A unit whose gradients FSDP2 reduces in more than one collective a pass (SimUnit::reduce_split):
// each of FSDP's "FSDP::post_backward_reduce (<unit>)" ranges (CPU traces) that holds a
// reduce-scatter is one reduction. torchtitan's chunked loss computes the output head's gradients
// in its own backward, before the norm's: the (norm, lm_head) unit reduces twice a pass, 2,097,152
// B then 1,024 B, which the replay had made one (16 reduce-scatters a step for the job's 18). Set
// where every pass of the steps used that reduces the unit makes the same number of reductions.
void add_split_reductions(const Profile& p, const RankModel& rk, const std::map<int, int>& unit_index, ProfileInput& in) {
  if (in.pass_windows.empty()) return;
  std::vector<TimeInterval> scatters;  // the rank's reduce-scatters: start, bytes
  for (const auto& c : p.collectives)
    if (c.rank == in.rank && c.type == CollectiveType::ReduceScatter && in.fsdp_groups.holds(c)) scatters.emplace_back(c.start, c.bytes);
  std::sort(scatters.begin(), scatters.end());
  // Per unit and pass: the bytes of each reduction, in order.
  std::map<std::pair<int, std::ptrdiff_t>, std::vector<double>> reductions;
  for (std::int32_t ti : rk.range_tracks)
    for (const auto& r : p.range_tracks[static_cast<std::size_t>(ti)].events) {
      if (r.kind != RangeKind::Fsdp || r.module < 0 || p.strings[r.name].rfind("FSDP::post_backward_reduce (", 0) != 0) continue;
      const auto unit = unit_index.find(r.module);
      const auto pass = interval_holding(in.pass_windows, r.start);
      if (unit == unit_index.end() || pass < 0) continue;
      double bytes = 0;
      bool any = false;
      for (auto c = std::lower_bound(scatters.begin(), scatters.end(), TimeInterval{r.start, 0}); c != scatters.end() && c->first <= r.end; ++c)
        bytes += double(c->second), any = true;
      // The name is FSDP's, relative to its model: a frozen teacher's unit is the trained namesake's.
      int u = unit->second;
      if (in.model.units[static_cast<std::size_t>(u)].frozen)
        if (const int trained = trained_namesake(in.model, static_cast<std::size_t>(u)); trained >= 0) u = trained;
      if (any) reductions[{u, pass}].push_back(bytes);
    }
  set_reduce_splits(reductions, in.model);
}

// The root unit of the model a unit is in: a second model's ("FSDPNet", which record names by its
// class) for the units under it ("FSDPNet.layers.0"), else the first model's (""); -1 if none.
int model_root_of(const SimModel& sm, int unit) {
  const std::string& name = sm.units[static_cast<std::size_t>(unit)].name;
  const std::string top = name.substr(0, name.find('.'));
  int first = -1;
  for (std::size_t v = 0; v < sm.units.size(); ++v) {
    const SimUnit& r = sm.units[v];
    if (!top.empty() && r.name == top && r.class_name == top) return static_cast<int>(v);
    if (r.is_root) first = static_cast<int>(v);
  }
  return first;
}

// The ranks each FSDP shard's parameters are split over beside FSDP's own (meta
// rank<R>.model_parallel_ranks, hooks.py: tensor parallelism's, not expert parallelism's, which
// are FSDP's ranks); 1 when absent or unreadable.
int model_parallel_ranks(const Profile& p, int rank) {
  const auto it = p.meta.find("rank" + std::to_string(rank) + ".model_parallel_ranks");
  int k = 0;
  if (it == p.meta.end() || std::from_chars(it->second.data(), it->second.data() + it->second.size(), k).ec != std::errc())
    return 1;
  return std::clamp(k, 1, 1'000'000);
}

// FSDP's process group on `rank` by the name the hooks wrote (meta rank<R>.fsdp_group), as the
// profile's process_groups table has it. Unknown without the meta, or where the profile cannot
// be read again (one held only in memory). fsdp_world: the ranks FSDP shards over.
FsdpGroups fsdp_groups_of(const Profile& p, int rank, int fsdp_world) {
  FsdpGroups g;
  const auto it = p.meta.find("rank" + std::to_string(rank) + ".fsdp_group");
  if (it == p.meta.end() || p.path.empty()) return g;
  try {
    sql::Db db = open_profile_readonly(p.path);
    sql::Stmt st(db.get(), "SELECT id FROM process_groups WHERE name = ?1");
    st.bind(1, it->second);
    while (st.step()) g.ids.insert(static_cast<std::int32_t>(st.col_int(0)));
  } catch (const std::exception&) {
    return g;
  }
  // FSDP over more than one rank issues collectives on its group: none of this rank's on it is a
  // profile whose collectives name no group (the replay would then double FSDP's as measured).
  g.known = fsdp_world <= 1 || std::any_of(p.collectives.begin(), p.collectives.end(), [&](const CollectiveEvent& c) {
              return c.rank == rank && g.ids.count(c.process_group) > 0;
            });
  return g;
}

[[noreturn]] void unusable(const Profile& p, const std::string& why) {
  throw ProfileError(ProfileErrorKind::MalformedTable, p.path + ": cannot simulate this profile: " + why);
}

using Interval = std::pair<TimeNs, TimeNs>;

// A kernel that waits for a collective (cudaStreamWaitEvent) starts a few microseconds after it
// ends (launch latency, ~5 us on H100); compute resuming within this of an FSDP collective's end
// was waiting for it, compute resuming later was waiting for the host.
constexpr TimeNs kResumeSlackNs = 10'000;
// On a CPU run (gloo) the training thread wakes from a collective's wait through the interpreter:
// measured resume delays are 30 us to 0.7 ms (median 0.3 ms, 2 ranks on 2 cores).
constexpr TimeNs kCpuResumeSlackNs = 1'000'000;

// Sorted, disjoint union of intervals (busy_in needs it: a long interval must not hide behind a
// shorter one that starts later).
std::vector<Interval> merged(std::vector<Interval> iv) { return interval_union(std::move(iv)); }

// What one stretch of a step holds (profile_extract.cpp, split()), summed over steps.
struct Split {
  double compute = 0, other = 0, idle = 0;  // ns
  double count = 0, bytes = 0;              // non-FSDP collectives starting in the stretch
  Split& operator+=(const Split& o) {
    compute += o.compute, other += o.other, idle += o.idle, count += o.count, bytes += o.bytes;
    return *this;
  }
  Split scaled(double f) const { return {compute * f, other * f, idle * f, count * f, bytes * f}; }
  Split minus(const Split& o) const { return {compute - o.compute, other - o.other, idle - o.idle, count - o.count, bytes - o.bytes}; }
};

// The root's parameters after its last layer (norm, output head: what a pipeline's last stage
// holds of it, SimUnit::tail_params), from its modules' forward ranges. The root's own modules
// are the non-unit ones outside every other unit; each with parameters (the nearest such module
// under the root with no unit below it) is head or tail by its first forward in a step: before
// the first unit's or after the last unit's. -1 (split by forward time) when a module has no
// range, runs between the units, or the modules do not add up to the root's parameters. Before,
// a profile's root was always split by forward time: on the tiny CPU trainer the embedding's
// lookup and hooks outweighed the head, and stage 0 held 22,712 of the root's 32,832 parameters
// for the 16,384 of its embedding.
std::int64_t root_tail_params(const Profile& p, const RankModel& rk, const std::vector<StepRow>& steps, const std::vector<int>& unit_of,
                              int root_module, std::int64_t root_params, TimeNs first_unit, TimeNs last_unit, int param_dtype_bytes) {
  const std::size_t nm = p.modules.size();
  if (root_module < 0 || first_unit > last_unit) return -1;
  // Whether a module's subtree holds another unit (parents come before children).
  std::vector<char> unit_below(nm, 0);
  for (std::size_t i = nm; i-- > 0;) {
    if (unit_of[i] != root_module) unit_below[i] = 1;
    const int parent = p.modules[i].parent;
    if (parent >= 0 && unit_below[i]) unit_below[static_cast<std::size_t>(parent)] = 1;
  }
  std::vector<int> owned;  // the root's modules with parameters and no unit below
  std::vector<std::int32_t> walk(p.modules[static_cast<std::size_t>(root_module)].children.begin(),
                                 p.modules[static_cast<std::size_t>(root_module)].children.end());
  while (!walk.empty()) {
    const std::size_t c = static_cast<std::size_t>(walk.back());
    walk.pop_back();
    if (unit_of[c] != root_module) continue;
    if (unit_below[c]) walk.insert(walk.end(), p.modules[c].children.begin(), p.modules[c].children.end());
    else if (p.modules[c].param_count > 0 || p.modules[c].param_bytes > 0) owned.push_back(static_cast<int>(c));
  }
  if (owned.empty()) return -1;
  std::sort(owned.begin(), owned.end());
  // In parameters when the profile has counts, as the root's own (extract_profile), else bytes.
  bool counted = false;
  for (int c : owned) counted |= p.modules[static_cast<std::size_t>(c)].param_count > 0;
  std::map<int, TimeNs> first;  // owned module -> first forward start after its step's start
  for (std::int32_t ti : rk.range_tracks)
    for (const auto& r : p.range_tracks[static_cast<std::size_t>(ti)].events) {
      if (r.kind != RangeKind::Module || r.phase != RangePhase::Forward || !std::binary_search(owned.begin(), owned.end(), r.module))
        continue;
      for (const auto& st : steps)
        if (r.start >= st.start && r.end <= st.end) {
          auto [it, fresh] = first.emplace(r.module, r.start - st.start);
          if (!fresh) it->second = std::min(it->second, r.start - st.start);
        }
    }
  std::int64_t total = 0, tail = 0;
  for (int c : owned) {
    const auto it = first.find(c);
    if (it == first.end() || (it->second > first_unit && it->second < last_unit)) return -1;
    const ModuleNode& m = p.modules[static_cast<std::size_t>(c)];
    const std::int64_t n = counted ? m.param_count : m.param_bytes / std::max(1, param_dtype_bytes);
    total += n;
    if (it->second > last_unit) tail += n;
  }
  return total == root_params ? tail : -1;
}

// modules.reshard_policy -> SimUnit::recorded_reshard ("true" or unknown: 1, "false": 0, "k": k).
int recorded_reshard(const std::string& policy) {
  if (policy == "false") return 0;
  int k = 0;
  const auto [end, ec] = std::from_chars(policy.data(), policy.data() + policy.size(), k);
  return ec == std::errc() && end == policy.data() + policy.size() && k >= 2 ? k : 1;
}

}  // namespace

ProfileInput extract_profile(const Profile& p) {
  if (p.ranks.empty()) unusable(p, "it has no ranks");
  ProfileInput in;
  in.origin = p.origin.kind;
  const RankModel& rk = p.ranks.front();
  in.rank = rk.info.rank;
  in.world_size = rk.info.world_size > 0 ? rk.info.world_size : static_cast<int>(p.ranks.size());
  in.gpu_name = rk.info.gpu_name;

  // FSDP units: each module belongs to its nearest unit ancestor (itself included).
  const std::size_t nm = p.modules.size();
  std::vector<int> unit_of(nm, -1);
  // A grouped unit (fully_shard([norm, output])) is stored as its first member, the unit, and the
  // other members, which point at it (fsdp_unit_id) without being its children: each such member
  // is a "group root" whose modules, parameters and ranges are the unit's.
  std::vector<bool> group_root(nm, false);
  auto grouped_into = [&](const ModuleNode& m) {
    return !m.is_fsdp_unit && m.fsdp_unit >= 0 && static_cast<std::size_t>(m.fsdp_unit) < nm &&
           p.modules[static_cast<std::size_t>(m.fsdp_unit)].is_fsdp_unit;
  };
  for (std::size_t i = 0; i < nm; ++i) {  // parents come before children
    const auto& m = p.modules[i];
    const int inherited = m.parent >= 0 ? unit_of[static_cast<std::size_t>(m.parent)] : -1;
    if (m.is_fsdp_unit) unit_of[i] = static_cast<int>(i);
    else if (grouped_into(m) && m.fsdp_unit != inherited) unit_of[i] = m.fsdp_unit, group_root[i] = true;
    else unit_of[i] = inherited;
  }
  std::map<int, int> unit_index;  // module index -> SimModel unit
  SimModel& sm = in.model;
  sm.name = p.path;
  // A pipelined model: each rank holds its stages' units only, and the modules table is every
  // rank's. The units that ran on this rank (a module range of theirs) are its model.
  if (auto pl = p.meta.find("rank" + std::to_string(in.rank) + ".pipeline"); pl != p.meta.end()) in.pipeline = pl->second;
  std::vector<bool> ran_here(nm, in.pipeline.empty());
  if (!in.pipeline.empty())
    for (std::int32_t ti : rk.range_tracks)
      for (const auto& r : p.range_tracks[static_cast<std::size_t>(ti)].events)
        if (r.kind == RangeKind::Module && r.module >= 0 && static_cast<std::size_t>(r.module) < nm &&
            unit_of[static_cast<std::size_t>(r.module)] >= 0)
          ran_here[static_cast<std::size_t>(unit_of[static_cast<std::size_t>(r.module)])] = true;
  for (std::size_t i = 0; i < nm; ++i) {
    if (!p.modules[i].is_fsdp_unit) continue;
    if (!ran_here[i]) {
      ++in.units_on_other_stages;
      continue;
    }
    const auto& m = p.modules[i];
    // Own parameters: the unit's minus nested units', or the sum over its direct non-unit children
    // when the unit row itself carries none (a root often does not). Counted in parameters when
    // the profile has counts: the bytes are those of the stored tensors (fp32 master weights under
    // mixed precision), not of the bf16 copies that are gathered. Otherwise bytes / param dtype.
    bool counted = false;
    for (std::int32_t c : m.children) counted |= p.modules[static_cast<std::size_t>(c)].param_count > 0;
    counted |= m.param_count > 0;
    const auto params_of = [&](const ModuleNode& x) { return counted ? x.param_count : x.param_bytes / sm.param_dtype_bytes; };
    // Nested units anywhere below (layers.3 under the non-unit ModuleList `layers`), not only
    // direct children: each nearest one is subtracted once.
    std::int64_t nested = 0, children = 0;
    std::vector<std::int32_t> walk(m.children.begin(), m.children.end());
    // A grouped unit's other member is another unit's, like a nested unit.
    const auto elsewhere = [&](std::int32_t c) { return p.modules[static_cast<std::size_t>(c)].is_fsdp_unit || group_root[static_cast<std::size_t>(c)]; };
    // A second model's root (record names it by its class, "FSDPNet", under the first model's ""):
    // its parameters are not in the first model's count (a teacher's root had come out with none
    // of its own: its embeddings and head lost from memory).
    const auto second_root = [&](std::int32_t c) {
      const auto& cm = p.modules[static_cast<std::size_t>(c)];
      return m.parent < 0 && m.fqn.empty() && cm.is_fsdp_unit && cm.fqn == cm.class_name && cm.fqn.find('.') == std::string::npos;
    };
    for (std::int32_t c : m.children) {
      const auto& cm = p.modules[static_cast<std::size_t>(c)];
      if (!elsewhere(c)) children += params_of(cm);
    }
    while (!walk.empty()) {
      const std::int32_t c = walk.back();
      const auto& cm = p.modules[static_cast<std::size_t>(c)];
      walk.pop_back();
      if (second_root(c)) continue;
      if (elsewhere(c)) {
        nested += params_of(cm);
        continue;
      }
      walk.insert(walk.end(), cm.children.begin(), cm.children.end());
    }
    std::int64_t own = std::max(params_of(m) - nested, counted ? std::int64_t{0} : children - nested);
    std::vector<std::string> members;
    for (std::size_t g = 0; g < nm; ++g)  // the other members of a grouped unit
      if (group_root[g] && unit_of[g] == static_cast<int>(i)) own += params_of(p.modules[g]), members.push_back(p.modules[g].fqn);
    // The root unit is the model itself; top-level units under a non-unit model are not roots.
    const bool root = m.parent < 0;
    // Greedy planning tries a unit's non-unit parent (layers.3 for layers.3.attention) as a whole.
    std::string group = m.fqn;
    if (!root && !p.modules[static_cast<std::size_t>(m.parent)].is_fsdp_unit && p.modules[static_cast<std::size_t>(m.parent)].parent >= 0)
      group = p.modules[static_cast<std::size_t>(m.parent)].fqn;
    unit_index[static_cast<int>(i)] = static_cast<int>(sm.units.size());
    sm.units.push_back({m.fqn, group, m.class_name, own, root});
    sm.units.back().recorded_reshard = recorded_reshard(m.reshard_policy);
    sm.units.back().group_members = std::move(members);
  }
  if (auto mp = p.meta.find("rank" + std::to_string(in.rank) + ".model_parallel"); mp != p.meta.end()) in.model_parallel = mp->second;
  // Tensor parallelism beside FSDP, modelled where the profile tells FSDP's collectives apart.
  if (const int degree = model_parallel_ranks(p, in.rank); degree > 1 && in.world_size % degree == 0) {
    in.fsdp_groups = fsdp_groups_of(p, in.rank, in.world_size / degree);
    if (in.fsdp_groups.known) in.model_parallel_ranks = degree;
  }
  sm.recorded_model_parallel = in.model_parallel_ranks;
  add_apart_groups(p, in.rank, sm, in.model_parallel_ranks > 1);
  in.forward_prefetch = recorded_prefetch(p, in.rank, "forward", sm);
  in.backward_prefetch = recorded_prefetch(p, in.rank, "backward", sm);
  if (sm.units.empty())
    throw NoFsdpUnitsError(ProfileErrorKind::MalformedTable,
                           p.path + ": cannot simulate this profile: no module is marked as an FSDP unit (modules.is_fsdp_unit)");

  // GPU activity of this rank. Compute: non-collective kernels on the compute streams, or on any
  // stream when none is marked (an nsys export marks a stream NCCL as soon as it runs one NCCL
  // kernel, and sequence-parallel all-to-all runs on the compute stream itself).
  std::vector<Interval> compute, any_kernel, c10d_calls;
  bool any_marked = false;
  const bool cpu_run = is_cpu_device(rk.info.gpu_name);
  for (std::int32_t ti : rk.stream_tracks) any_marked |= p.stream_tracks[static_cast<std::size_t>(ti)].kind == StreamKind::Compute;
  for (std::int32_t ti : rk.stream_tracks) {
    const auto& t = p.stream_tracks[static_cast<std::size_t>(ti)];
    for (const auto& k : t.events) {
      any_kernel.emplace_back(k.start, k.end);
      if (k.category != KernelCategory::Collective && (!any_marked || t.kind == StreamKind::Compute)) compute.emplace_back(k.start, k.end);
      if (cpu_run && k.category != KernelCategory::Collective && p.strings[k.name].rfind("c10d::", 0) == 0) c10d_calls.emplace_back(k.start, k.end);
    }
  }
  std::sort(c10d_calls.begin(), c10d_calls.end());
  // Collectives FSDP issues: all-gather, reduce-scatter, and under HSDP the all-reduce of each
  // reduce-scatter's output over the replicas. The simulator models those; every other collective
  // is replayed as measured: the all-reduce of clip_grad_norm_'s norms, of a logged loss, a TP
  // all-reduce (taking every all-reduce for FSDP's dropped them from the replay: a user's loop
  // with both, -8 % on CPU).
  const int fsdp_world = in.world_size / in.model_parallel_ranks;  // the ranks FSDP's groups span
  const int hsdp_replicate = recorded_hsdp_replicate(p, in.rank, fsdp_world, in.fsdp_groups, [](TimeNs) { return true; });
  std::set<std::int64_t> hsdp_reduced;  // bytes of a reduce-scatter's output, reduced over the replicas
  for (const auto& c : p.collectives)
    if (hsdp_replicate > 1 && c.rank == in.rank && c.type == CollectiveType::ReduceScatter && c.group_size > 0)
      hsdp_reduced.insert(c.bytes / c.group_size);
  // The optimizer's own collectives are not FSDP's: Muon gathers each matrix whole for its
  // Newton-Schulz iteration (torch.optim.Muon on DTensor parameters: 60 all-gathers a step in a
  // 3-block model beside FSDP's 9), replayed as measured with the optimizer step. Told on a CPU
  // trace, where a collective starts when the training thread issues it (a GPU's may run after
  // the host entered the optimizer's range: the last reduce-scatters), and only outside FSDP's
  // own ranges and the modules' (an optimizer range may run on over the next forward: a user
  // loop's, 49 ms, held that forward's gathers).
  std::vector<Interval> optimizer_ranges, fsdp_or_module_ranges;
  if (is_cpu_device(rk.info.gpu_name))
    for (const auto& tr : rk.range_tracks)
      for (const auto& r : p.range_tracks[static_cast<std::size_t>(tr)].events) {
        if (r.phase == RangePhase::Optimizer) optimizer_ranges.emplace_back(r.start, r.end);
        else if (r.kind == RangeKind::Fsdp || r.kind == RangeKind::Module) fsdp_or_module_ranges.emplace_back(r.start, r.end);
      }
  optimizer_ranges = interval_union(std::move(optimizer_ranges));
  fsdp_or_module_ranges = interval_union(std::move(fsdp_or_module_ranges));
  auto is_fsdp = [&](const CollectiveEvent& c) {
    if (interval_holding(optimizer_ranges, c.start) >= 0 && interval_holding(fsdp_or_module_ranges, c.start) < 0) return false;
    // Beside tensor parallelism, sequence parallelism's are not (FsdpGroups).
    if (c.type == CollectiveType::AllGather || c.type == CollectiveType::ReduceScatter) return in.fsdp_groups.holds(c);
    return c.type == CollectiveType::AllReduce && c.group_size == hsdp_replicate && hsdp_reduced.count(c.bytes) > 0;
  };
  struct Other { TimeNs start, end; std::int64_t bytes; };
  std::vector<Other> other;  // sorted by start (p.collectives is sorted by rank, start)
  std::vector<Interval> compute_or_other = compute;
  bool other_sizes_known = true;
  std::vector<TimeNs> fsdp_ends;
  std::vector<Interval> fsdp_busy, point_to_point;
  for (const auto& c : p.collectives) {
    if (c.rank != in.rank || c.end <= c.start) continue;
    any_kernel.emplace_back(c.start, c.end);
    if (is_fsdp(c)) {
      fsdp_ends.push_back(c.end);
      fsdp_busy.emplace_back(c.start, c.end);
      continue;
    }
    other.push_back({c.start, c.end, c.bytes});
    (is_point_to_point(c.type) ? point_to_point : compute_or_other).emplace_back(c.start, c.end);
    other_sizes_known = other_sizes_known && c.bytes > 0;
  }
  // A pipeline's send or receive is posted ahead (isend / irecv) and is in flight until its peer
  // takes part: while an FSDP collective runs too, the rank is waiting for FSDP's (which the
  // simulator models), not for the transfer. Counted as the transfer's, that time was replayed
  // twice, as measured and as the modelled FSDP collective (torchtitan dp 2 x pp 2 on CPU: 62 to
  // 129 ms a step of FSDP's collectives under sends / receives, replay +15.2 %).
  fsdp_busy = merged(std::move(fsdp_busy));
  for (const auto& x : point_to_point)
    for (const auto& part : interval_difference(x, fsdp_busy)) compute_or_other.push_back(part);
  compute = merged(std::move(compute));
  compute_or_other = merged(std::move(compute_or_other));
  // On a CPU run the training thread often stays inside the c10d call that issued an FSDP
  // collective while gloo's worker runs it (a fifth of gloo's time in the bundled llama sample;
  // up to 4.6 ms of a 5.2 ms backward gather with each rank pinned to one core). That stretch is
  // the collective's time, not compute: counted as compute, it was host work of the unit whose
  // hook issued the collective and no part of the fit's sample, so the fit came out below the
  // job's own time per collective (a pinned run: 1.96 ms an all-gather, now 3.24, where the job's
  // issue-to-wait took 3.61; docs/accuracy.md) and a plan that drops a gather took the stretch out
  // as the unit's host work too.
  if (!c10d_calls.empty()) {
    std::vector<Interval> issuing;  // a call's overlap with the FSDP collective that started in it
    for (const auto& c : p.collectives) {
      if (c.rank != in.rank || c.end <= c.start || !is_fsdp(c)) continue;
      auto it = std::upper_bound(c10d_calls.begin(), c10d_calls.end(), Interval{c.start, std::numeric_limits<TimeNs>::max()});
      if (it == c10d_calls.begin()) continue;
      --it;
      if (it->second > c.start) issuing.emplace_back(c.start, std::min(c.end, it->second));
    }
    issuing = merged(std::move(issuing));
    auto less_issuing = [&](std::vector<Interval>& set) {
      std::vector<Interval> out;
      for (const auto& iv : set)
        for (const auto& part : interval_difference(iv, issuing)) out.push_back(part);
      set = std::move(out);
    };
    less_issuing(compute);
    less_issuing(compute_or_other);
  }
  any_kernel = merged(std::move(any_kernel));
  std::sort(fsdp_ends.begin(), fsdp_ends.end());
  // A profile without GPU activity (CPU-only ranges): a range's span is its compute.
  const bool gpu_seen = !any_kernel.empty();

  // GPU idle: the gaps between compute / non-FSDP collectives. A gap after which compute resumes
  // within kResumeSlackNs of an FSDP collective's end is the compute stream waiting for that
  // collective, which the simulator models itself: only the part of it where no kernel at all runs
  // is idle. Any other gap is host time (the GPU waits for the CPU to launch), idle as a whole,
  // even when a prefetched all-gather happens to run during it.
  std::vector<Interval> idle;
  const TimeNs resume_slack = is_cpu_device(rk.info.gpu_name) ? kCpuResumeSlackNs : kResumeSlackNs;
  auto add_gap = [&](TimeNs g0, TimeNs g1) {
    if (g1 <= g0) return;
    auto e = std::upper_bound(fsdp_ends.begin(), fsdp_ends.end(), g1);
    const bool waited = e != fsdp_ends.begin() && *std::prev(e) >= g0 && g1 - *std::prev(e) <= resume_slack;
    if (!waited) {
      idle.emplace_back(g0, g1);
      return;
    }
    TimeNs t = g0;
    auto k = std::lower_bound(any_kernel.begin(), any_kernel.end(), Interval{g0, g0});
    if (k != any_kernel.begin()) --k;
    for (; k != any_kernel.end() && k->first < g1; ++k) {
      if (k->second <= t) continue;
      if (k->first > t) idle.emplace_back(t, k->first);
      t = std::max(t, k->second);
    }
    if (t < g1) idle.emplace_back(t, g1);
  };
  if (gpu_seen) {
    TimeNs t = p.time_begin, end = p.time_end;  // a step may start before the first event
    for (const auto& st : rk.steps) t = std::min(t, st.start), end = std::max(end, st.end);
    for (const auto& iv : compute_or_other) add_gap(t, iv.first), t = std::max(t, iv.second);
    add_gap(t, end);
  }

  // One stretch [a, b] of the GPU timeline: compute busy, non-FSDP collectives while no compute
  // runs (their exposed part), and idle (nothing runs). What is left is time when only FSDP's
  // collectives run: the exposed FSDP communication that the simulator models itself.
  auto split = [&](TimeNs a, TimeNs b) {
    Split sp;
    if (b <= a) return sp;
    if (!gpu_seen) {
      sp.compute = double(b - a);
      return sp;
    }
    const TimeNs c = busy_in(compute, a, b);
    sp.compute = double(c);
    sp.other = double(busy_in(compute_or_other, a, b) - c);
    sp.idle = double(busy_in(idle, a, b));
    auto it = std::lower_bound(other.begin(), other.end(), a, [](const Other& o, TimeNs t) { return o.start < t; });
    for (; it != other.end() && it->start < b; ++it) sp.count += 1, sp.bytes += double(it->bytes);
    return sp;
  };

  // Module ranges of this rank whose module is a unit.
  std::vector<UnitRange> ranges;
  for (std::int32_t ti : rk.range_tracks) {
    for (const auto& r : p.range_tracks[static_cast<std::size_t>(ti)].events) {
      if (r.kind != RangeKind::Module || r.module < 0) continue;
      const bool member = static_cast<std::size_t>(r.module) < nm && group_root[static_cast<std::size_t>(r.module)];
      auto it = unit_index.find(member ? unit_of[static_cast<std::size_t>(r.module)] : r.module);
      if (it == unit_index.end()) continue;
      if (r.phase != RangePhase::Forward && r.phase != RangePhase::Backward) continue;
      ranges.push_back({r.start, r.end, it->second, r.phase, !member});
    }
  }
  std::sort(ranges.begin(), ranges.end(), [](const UnitRange& a, const UnitRange& b) { return a.start < b.start; });
  if (ranges.empty()) unusable(p, "it has no forward/backward module ranges for its FSDP units");

  // CPU runs: the host work of each unit's backward unshard -- FSDP::all_gather and
  // ::all_gather_copy_out in backward on the training thread (copy-in, copy-out, the hooks'
  // Python) -- is the unit's, not the segment's where it happens to run: keeping the unit
  // unsharded removes it with the all-gather (measured: ~6 ms per unit of a 4-layer model, as much
  // as the gloo all-gather itself). On a GPU those ranges are CPU time ahead of the GPU and say
  // nothing about GPU time, so this applies to CPU profiles only.
  struct HostRange { TimeNs start, end; int unit; };
  std::vector<HostRange> unshard_host;
  if (is_cpu_device(rk.info.gpu_name)) {
    for (std::int32_t ti : rk.range_tracks)
      for (const auto& r : p.range_tracks[static_cast<std::size_t>(ti)].events) {
        if (r.kind != RangeKind::Fsdp || r.phase != RangePhase::Backward || r.module < 0) continue;
        if (p.strings[r.name].substr(0, 16) != "FSDP::all_gather") continue;
        auto it = unit_index.find(r.module);
        if (it != unit_index.end()) unshard_host.push_back({r.start, r.end, it->second});
      }
    std::sort(unshard_host.begin(), unshard_host.end(), [](const HostRange& a, const HostRange& b) { return a.start < b.start; });
  }
  std::vector<double> unshard_host_ns(sm.units.size(), 0.0);
  // split(a, b) less the unshard host work inside it, which goes to its unit instead.
  auto split_less_host = [&](TimeNs a, TimeNs b) {
    Split s = split(a, b);
    // Unshard ranges do not overlap one another: sorted by start, they are sorted by end too.
    auto first = std::partition_point(unshard_host.begin(), unshard_host.end(), [a](const HostRange& h) { return h.end <= a; });
    for (auto hi = first; hi != unshard_host.end(); ++hi) {
      const HostRange& h = *hi;
      if (h.start >= b) break;
      const TimeNs x = std::max(a, h.start), y = std::min(b, h.end);
      if (y <= x) continue;
      const Split ov = split(x, y);
      Split host;
      host.compute = ov.compute, host.idle = ov.idle;
      s = s.minus(host);
      unshard_host_ns[static_cast<std::size_t>(h.unit)] += ov.compute + ov.idle;
    }
    return s;
  };
  auto is_root_unit = [&](int u) { return sm.units[static_cast<std::size_t>(u)].is_root; };

  // Steps: skip the first (warm-up) when there are several. Without step markers (a window cut
  // from a run) the step is the span of the complete unit ranges (the importers only pair a pre-
  // with a post-hook, so every module range is complete): a unit cut by the window's edges is in
  // neither the measured reference nor the simulation.
  std::vector<StepRow> steps = rk.steps;
  in.profile_span_ns = p.time_end - p.time_begin;
  if (steps.empty()) {
    TimeNs lo = std::numeric_limits<TimeNs>::max(), hi = std::numeric_limits<TimeNs>::min();
    for (const auto& r : ranges) {
      if (is_root_unit(r.unit)) continue;
      lo = std::min(lo, r.start), hi = std::max(hi, r.end);
    }
    if (lo > hi) unusable(p, "it has no step markers and no complete module range of a non-root FSDP unit");
    steps.push_back({rk.info.rank, 0, lo, hi});
    in.window_only = true;
  }
  if (steps.size() > 1) steps.erase(steps.begin());
  // A step holding a forward pass of the model without its backward -- an evaluation under
  // no_grad between optimizer steps, a validation loop -- is not the training step the replay
  // stands for: its gathers are not replayed and its compute would be taken for the units'
  // forward. Such steps are left out when others remain. The root's ranges tell them: every
  // forward of it that a backward goes through has a backward range of its own (a model called
  // twice before one backward has two), one run under no_grad has none. A loop whose every step
  // runs such forwards (RLHF's rollouts before the training forward) has its training steps at
  // the fewest of them, and a step with more (an evaluation besides) is left out the same way, as
  // the unobserved steps with more calls of the model are (sim_inputs.cpp).
  if (!in.window_only) {
    bool root_backward_seen = false;
    for (const auto& r : ranges) root_backward_seen |= is_root_unit(r.unit) && r.phase == RangePhase::Backward;
    auto forwards_without_backward = [&](const StepRow& st) {
      int balance = 0;
      for (const auto& r : ranges)
        if (is_root_unit(r.unit) && r.start >= st.start && r.end <= st.end) balance += r.phase == RangePhase::Forward ? 1 : -1;
      return balance;
    };
    std::vector<int> balance;
    for (const auto& st : steps) balance.push_back(forwards_without_backward(st));
    const int training_balance = balance.empty() ? 0 : std::max(0, *std::min_element(balance.begin(), balance.end()));
    std::vector<StepRow> training;
    for (std::size_t i = 0; i < steps.size(); ++i)
      if (!root_backward_seen || balance[i] <= training_balance) training.push_back(steps[i]);
    if (!training.empty() && training.size() < steps.size()) {
      in.forward_only_steps_left_out = static_cast<int>(steps.size() - training.size());
      steps = std::move(training);
    }
  }
  leave_out_long_steps(steps, in);
  in.steps_used = static_cast<int>(steps.size());

  const int nu = static_cast<int>(sm.units.size());
  std::vector<Split> fwd(static_cast<std::size_t>(nu)), bwd(static_cast<std::size_t>(nu));
  std::vector<TimeNs> first_fwd(static_cast<std::size_t>(nu), std::numeric_limits<TimeNs>::max());
  Split head_f, tail, head_b, opt, whole;
  double step_total = 0;
  int root = -1;
  for (int u = 0; u < nu; ++u)
    if (sm.units[static_cast<std::size_t>(u)].is_root) root = u;
  for (std::size_t i = 0; i < nm; ++i)
    if (unit_of[i] >= 0) in.unit_of_module.emplace_back(p.modules[i].id, unit_index[unit_of[i]]);
  for (const auto& st : steps) in.step_windows.emplace_back(st.start, st.end);
  // Root ranges (its backward ends with each backward pass: the boundary between micro-batches).
  std::vector<TimeNs> root_bwd_ends;
  for (const auto& r : ranges)
    if (is_root_unit(r.unit) && r.phase == RangePhase::Backward) root_bwd_ends.push_back(r.end);
  std::sort(root_bwd_ends.begin(), root_bwd_ends.end());
  int total_micro = 0;  // forward-backward passes over the steps used (gradient accumulation: several a step)
  // Each pass's forward stretch (its start to its first backward range), the steps' first passes
  // apart from the others: whether the later ones gather in forward (reshard_after_backward).
  std::vector<Interval> first_pass_forward, later_pass_forward;
  for (const auto& st : steps) {
    step_total += double(st.end - st.start);
    whole += split(st.start, st.end);
    // The unit ranges of the step (the root's spans the others), and its micro-batches: each
    // begins with a forward range of the step's first unit that follows a backward range. A unit
    // called twice in one forward, or a head run again inside the loss's backward (torchtitan's
    // chunked loss), begins none.
    std::vector<const UnitRange*> in_step;
    for (const auto& r : ranges)
      if (r.start >= st.start && r.end <= st.end && !is_root_unit(r.unit)) in_step.push_back(&r);
    const auto first = std::find_if(in_step.begin(), in_step.end(), [](const UnitRange* r) { return r->phase == RangePhase::Forward; });
    if (first == in_step.end()) continue;
    std::vector<std::size_t> micro_begin{0};
    bool backward_seen = false;
    for (std::size_t k = 0; k < in_step.size(); ++k) {
      const UnitRange& r = *in_step[k];
      if (r.phase == RangePhase::Backward) backward_seen = true;
      else if (backward_seen && r.unit == (*first)->unit) micro_begin.push_back(k), backward_seen = false;
    }
    micro_begin.push_back(in_step.size());
    const std::size_t micros = micro_begin.size() - 1;
    total_micro += static_cast<int>(micros);
    for (const auto* r : in_step)
      if (r->phase == RangePhase::Forward)
        first_fwd[static_cast<std::size_t>(r->unit)] = std::min(first_fwd[static_cast<std::size_t>(r->unit)], r->start - st.start);
    // Each unit range also owns the gap until the next range of the same pass starts (its last
    // kernels, launch gaps before the next unit's hooks), so that the ranges of a pass tile it and
    // every nanosecond of the step is replayed exactly once. The simulator replays a segment's
    // measured collectives and idle after its compute, before the next unit's pre-hook: the same
    // place. Nested or overlapping unit ranges count only what the earlier ones did not.
    TimeNs cursor = st.start;
    std::vector<Interval> gaps;  // between ranges of different phases: the passes' head, tail and loss
    for (std::size_t k = 0; k < in_step.size(); ++k) {
      const UnitRange& r = *in_step[k];
      const bool next_same = k + 1 < in_step.size() && in_step[k + 1]->phase == r.phase;
      if (k > 0 && r.start > cursor) gaps.emplace_back(cursor, r.start);
      const TimeNs a = std::max(cursor, r.start);
      const TimeNs b = std::max(a, next_same ? std::max(r.end, in_step[k + 1]->start) : r.end);
      (r.phase == RangePhase::Forward ? fwd : bwd)[static_cast<std::size_t>(r.unit)] +=
          r.phase == RangePhase::Forward ? split(a, b) : split_less_host(a, b);
      cursor = b;
    }
    // Optimizer: its range when present, else what follows the last backward range.
    TimeNs last_bwd_hi = st.start;
    for (const auto* r : in_step)
      if (r->phase == RangePhase::Backward) last_bwd_hi = std::max(last_bwd_hi, r->end);
    TimeNs opt_start = last_bwd_hi;
    bool optimizer_between_backwards = false;
    for (const auto& tr : rk.range_tracks)
      for (const auto& r : p.range_tracks[static_cast<std::size_t>(tr)].events) {
        if (r.phase != RangePhase::Optimizer || r.start < st.start || r.start >= st.end) continue;
        opt_start = std::max(last_bwd_hi, r.start);
        // An optimizer step (not a zero_grad) after one backward range and before another: two
        // backward passes with a step between them (check_replay names it).
        if (r.end <= last_bwd_hi && p.strings[r.name].find("zero_grad") == std::string_view::npos)
          optimizer_between_backwards |= std::any_of(in_step.begin(), in_step.end(), [&](const UnitRange* b) {
            return b->phase == RangePhase::Backward && b->end <= r.start;
          });
      }
    in.steps_with_optimizer_between_backwards += optimizer_between_backwards;
    // Per micro-batch: the root's head (from the previous backward's end, or the step's start, to
    // the first unit's forward), its tail (forward to backward: output head, loss) and its
    // backward after the units' (to the root's backward end, or to the optimizer on the last).
    TimeNs from = st.start;
    std::vector<Interval> stretches;  // the passes' heads, tails and backward ends, as split below
    for (std::size_t m = 0; m < micros; ++m) {
      TimeNs fwd_lo = std::numeric_limits<TimeNs>::max(), fwd_hi = from, bwd_lo = std::numeric_limits<TimeNs>::max(), bwd_hi = from;
      for (std::size_t k = micro_begin[m]; k < micro_begin[m + 1]; ++k) {
        const UnitRange& r = *in_step[k];
        if (r.phase == RangePhase::Forward) fwd_lo = std::min(fwd_lo, r.start), fwd_hi = std::max(fwd_hi, r.end);
        else bwd_lo = std::min(bwd_lo, r.start), bwd_hi = std::max(bwd_hi, r.end);
      }
      if (bwd_lo == std::numeric_limits<TimeNs>::max()) bwd_lo = bwd_hi = fwd_hi;
      (m == 0 ? first_pass_forward : later_pass_forward).emplace_back(from, bwd_lo);
      TimeNs to = opt_start;
      if (m + 1 < micros) {
        const TimeNs next = in_step[micro_begin[m + 1]]->start;
        const auto e = std::upper_bound(root_bwd_ends.begin(), root_bwd_ends.end(), next);
        to = e != root_bwd_ends.begin() && *std::prev(e) >= bwd_hi ? *std::prev(e) : bwd_hi;
      }
      in.pass_windows.emplace_back(from, m + 1 < micros ? to : st.end);
      head_f += split(from, fwd_lo);
      tail += split_less_host(fwd_hi, bwd_lo);
      head_b += split_less_host(bwd_hi, to);
      for (const Interval& iv : {Interval{from, fwd_lo}, Interval{fwd_hi, bwd_lo}, Interval{bwd_hi, to}})
        if (iv.second > iv.first) stretches.push_back(iv);
      from = to;
    }
    // What lies between a forward and a backward range outside those stretches is the loss's, run
    // between the output head's forwards and backwards: torchtitan's chunked loss runs the head's
    // forward and backward once a chunk, so the last forward ends after the first backward starts
    // (the tail above is empty) and each chunk's loss (with tensor parallelism, its all-reduces:
    // 47 of 564 ms a step on 2 ranks) lay in no stretch. The root's tail, like a loss.
    stretches.emplace_back(opt_start, st.end);  // the optimizer's (below)
    stretches = merged(std::move(stretches));
    for (const Interval& gap : gaps)
      for (const Interval& piece : interval_difference(gap, stretches)) tail += split_less_host(piece.first, piece.second);
    opt += split(opt_start, st.end);
  }
  // FSDP's own all-gather ranges of a phase in the steps used (CPU traces have them; NVTX does
  // not), per unit and pass, each given to the unit `owner` says. Counted per parameter group
  // (FSDP2 names a unit's groups "FSDP::all_gather (layers.0) [pg=4]", "... [pg=2]"): a unit whose
  // experts are gathered over a mesh of their own gathers once per group, which is one gather of
  // the unit (counted together, a 4-rank MoE replayed every block's forward gather twice, and
  // torchtitan's 2-rank MoE a second backward of every block).
  auto gathers_per_pass = [&](RangePhase phase, const std::function<int(int, TimeNs)>& owner) {
    std::vector<std::map<std::string, int>> n(sm.units.size());
    for (std::int32_t ti : rk.range_tracks)
      for (const auto& r : p.range_tracks[static_cast<std::size_t>(ti)].events) {
        if (r.kind != RangeKind::Fsdp || r.phase != phase || r.module < 0) continue;
        const std::string_view name = p.strings[r.name];
        if (name.rfind("FSDP::all_gather (", 0) != 0) continue;
        if (phase == RangePhase::Forward) in.fsdp_gather_ranges = true;
        auto it = unit_index.find(r.module);
        if (it == unit_index.end() || !std::any_of(steps.begin(), steps.end(), [&](const StepRow& st) { return r.start >= st.start && r.start < st.end; }))
          continue;
        const std::size_t close = name.rfind(')');
        ++n[static_cast<std::size_t>(owner(it->second, r.start))][std::string(close == std::string_view::npos ? std::string_view{} : name.substr(close + 1))];
      }
    std::vector<long> out(sm.units.size(), 0);
    for (std::size_t u = 0; u < n.size(); ++u) {
      int most = 0;
      for (const auto& [group, count] : n[u]) most = std::max(most, count);
      out[u] = std::lround(double(most) / double(std::max(1, total_micro)));
    }
    return out;
  };
  // Forward all-gathers per unit and pass: more than one on a unit is the trainer gathering it
  // again, or the unit called again (SimUnit::extra_fwd_gathers, repeat_fwd_calls).
  std::vector<long> fwd_gathers_per_pass;
  {
    // FSDP names a unit by its path in its own root: with two models (a student and its teacher,
    // the second root named "<Class>.") "layers.0" is either. A gather inside the forward range
    // of a unit whose name ends in ".<that name>", and not inside the named unit's own, is that
    // unit's (its gather had counted as the teacher block's second).
    std::vector<std::vector<Interval>> fwd_ranges(sm.units.size());
    for (const auto& r : ranges)
      if (r.phase == RangePhase::Forward) fwd_ranges[static_cast<std::size_t>(r.unit)].emplace_back(r.start, r.end);
    auto inside = [&](int u, TimeNs t) {
      for (const auto& iv : fwd_ranges[static_cast<std::size_t>(u)])
        if (t >= iv.first && t < iv.second) return true;
      return false;
    };
    fwd_gathers_per_pass = gathers_per_pass(RangePhase::Forward, [&](int u, TimeNs t) {
      if (inside(u, t)) return u;
      const std::string suffix = "." + sm.units[static_cast<std::size_t>(u)].name;
      for (int v = 0; v < static_cast<int>(sm.units.size()); ++v) {
        const std::string& n = sm.units[static_cast<std::size_t>(v)].name;
        if (v != u && n.size() > suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0 && inside(v, t))
          return v;
      }
      return u;
    });
  }

  const double ns_steps = double(std::max<std::size_t>(1, steps.size()));
  in.measured_step_ns = static_cast<TimeNs>(step_total / ns_steps);
  auto avg = [&](double v) { return static_cast<TimeNs>(v / ns_steps); };
  // The simulator runs the segments once per micro-batch: they hold a forward-backward pass's mean.
  const double ns_passes = double(std::max(1, total_micro));
  in.micro_batches = std::max(1, static_cast<int>(std::lround(ns_passes / ns_steps)));
  in.measured_compute_ns = avg(whole.compute);
  in.measured_other_comm_ns = avg(whole.other);
  in.measured_idle_ns = avg(whole.idle);
  in.other_collectives = static_cast<int>(whole.count);
  if (root < 0) {  // no root unit: add an empty one so head/tail compute has an owner
    sm.units.push_back({"", "", "root", 0, true});
    root = nu;
  }
  // Segments: root head, units by first forward range, root tail.
  std::vector<int> order;
  for (int u = 0; u < nu; ++u)
    if (u != root && first_fwd[static_cast<std::size_t>(u)] != std::numeric_limits<TimeNs>::max()) order.push_back(u);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return first_fwd[static_cast<std::size_t>(a)] < first_fwd[static_cast<std::size_t>(b)]; });
  if (order.empty()) unusable(p, "no forward module range of an FSDP unit lies inside a step");
  auto extra = [&](const Split& sp, double n) {
    MeasuredExtra x;
    x.other_comm_ns = static_cast<TimeNs>(sp.other / n);
    x.other_comm_count = static_cast<int>(std::lround(sp.count / n));
    x.other_comm_bytes = static_cast<std::int64_t>(sp.bytes / n);
    x.idle_ns = static_cast<TimeNs>(sp.idle / n);
    return x;
  };
  auto per_pass = [&](double v) { return static_cast<TimeNs>(v / ns_passes); };
  auto segment = [&](int u, const Split& f, const Split& b) {
    SimSegment sg{u, per_pass(f.compute), per_pass(b.compute), 0, 0};
    sg.fwd_extra = extra(f, ns_passes);
    sg.bwd_extra = extra(b, ns_passes);
    return sg;
  };
  sm.segments.push_back(segment(root, head_f, head_b));
  for (int u : order) sm.segments.push_back(segment(u, fwd[static_cast<std::size_t>(u)], bwd[static_cast<std::size_t>(u)]));
  // The stretch between forward and backward (output head, loss) splits 1:2 like its FLOPs. Its
  // measured collectives and idle all go to the forward half: the simulator issues the backward
  // all-gathers when the forward is done, and in the trace that stretch precedes the first
  // backward hook.
  Split tail_f = tail.scaled(1.0 / 3.0);
  tail_f.other = tail.other, tail_f.idle = tail.idle, tail_f.count = tail.count, tail_f.bytes = tail.bytes;
  sm.segments.push_back(segment(root, tail_f, tail.minus(tail_f)));
  add_unit_inputs(p, in.rank, sm);
  for (const auto& [module, u] : unit_index) {
    if (u != root) continue;
    TimeNs lo = std::numeric_limits<TimeNs>::max(), hi = std::numeric_limits<TimeNs>::min();
    for (int v : order) lo = std::min(lo, first_fwd[static_cast<std::size_t>(v)]), hi = std::max(hi, first_fwd[static_cast<std::size_t>(v)]);
    SimUnit& ru = sm.units[static_cast<std::size_t>(root)];
    ru.tail_params = root_tail_params(p, rk, steps, unit_of, module, ru.param_count, lo, hi, sm.param_dtype_bytes);
  }
  sm.optimizer_ns = avg(opt.compute);
  sm.optimizer_extra = extra(opt, ns_steps);
  sm.optimizer_reference_world = fsdp_world;
  // Beside tensor parallelism most of them are its, over its own group, which a larger world does
  // not widen: replayed as measured.
  sm.other_comm_world = other_sizes_known && !other.empty() && in.model_parallel_ranks == 1 ? in.world_size : 0;
  // A window of forward passes only (no step markers, no backward range): nothing of a backward
  // pass or an optimizer step was measured, so none is simulated.
  bool any_backward = false;
  for (const auto& r : ranges) any_backward |= r.phase == RangePhase::Backward;
  sm.forward_only = in.window_only && !any_backward;
  // Units no backward goes through in the steps used, where others have one: a frozen model run
  // under no_grad beside the trained one (a teacher, RLHF's reference model; its root may be the
  // profile's root, named first when the teacher runs first). Replayed as trained they were
  // gathered again in backward and reduce-scattered, with gradients and optimizer state (a
  // student beside its teacher: 21 all-gathers and 9 reduce-scatters for the job's 13 and 5,
  // +24 %). The module ranges tell, not FSDP's own: those name a unit by its path in its own root
  // ("layers.0"), which two models share.
  if (any_backward && !in.window_only) {
    std::vector<char> fwd_seen(sm.units.size(), 0), bwd_seen(sm.units.size(), 0);
    for (const auto& r : ranges)
      for (const auto& st : steps)
        if (r.start >= st.start && r.end <= st.end) {
          (r.phase == RangePhase::Backward ? bwd_seen : fwd_seen)[static_cast<std::size_t>(r.unit)] = 1;
          break;
        }
    for (std::size_t u = 0; u < sm.units.size(); ++u)
      if (fwd_seen[u] && !bwd_seen[u]) {
        sm.units[u].frozen = true;
        ++in.frozen_units;
      }
    for (std::size_t u = 0; u < sm.units.size(); ++u)
      if (sm.units[u].frozen) {
        const int r = model_root_of(sm, static_cast<int>(u));
        sm.units[u].frozen_in_trained_model = r >= 0 && !sm.units[static_cast<std::size_t>(r)].frozen;
      }
    // FSDP's backward unshard ranges name the trained model's units by their path in their root,
    // which the frozen model's units have as ours ("layers.0" for "FSDPNet.layers.0", "" for
    // "FSDPNet"): their host work is the trained unit's.
    for (std::size_t f = 0; f < sm.units.size(); ++f) {
      if (!sm.units[f].frozen || unshard_host_ns[f] <= 0) continue;
      const int v = trained_namesake(sm, f);
      if (v < 0) continue;
      unshard_host_ns[static_cast<std::size_t>(v)] += unshard_host_ns[f];
      unshard_host_ns[f] = 0;
    }
  }
  {
    // Backward all-gathers per unit and pass, those named for a frozen unit its trained
    // namesake's: more than the modelled one on a unit is its second backward (it was called twice).
    const std::vector<long> bwd_gathers_per_pass = gathers_per_pass(RangePhase::Backward, [&](int u, TimeNs) {
      const int trained = sm.units[static_cast<std::size_t>(u)].frozen ? trained_namesake(sm, static_cast<std::size_t>(u)) : -1;
      return trained >= 0 ? trained : u;
    });
    fwd_gathers_per_pass.resize(sm.units.size(), 0);
    in.repeat_call_units = add_repeated_calls(sm, ranges, in.step_windows, total_micro, in.fsdp_gather_ranges,
                                              fwd_gathers_per_pass, bwd_gathers_per_pass);
  }
  add_split_reductions(p, rk, unit_index, in);
  sm.hbm_bytes_per_ns = 0;  // measured compute already contains FSDP's copy-in / copy-out kernels
  for (std::size_t u = 0; u < unshard_host_ns.size() && u < sm.units.size(); ++u) {
    SimUnit& unit = sm.units[u];
    // Per backward gather: a unit gone through by several backwards gathers in each after the
    // first, and in the first too unless kept unsharded (charged per pass, the replay's chains
    // had paid the host work of both gathers twice: a two-forward loop +8 %).
    const int gathers = unit.extra_bwd_gathers + (!unit.is_root && unit.recorded_reshard != 0 ? 1 : 0);
    unit.bwd_unshard_host_ns = per_pass(unshard_host_ns[u]) / std::max(1, gathers);
  }

  // Fit samples from the steps compared only: the warm-up step's collectives (first connection,
  // allocator growth) are slower than the steady state the replay stands for. On a CPU profile a
  // sample is the time the collective held the training thread: the part of it under which the
  // thread computed (gloo's worker progressing on the other core while this rank ran operators)
  // is already in the segments' compute, and comm_serialized holds the compute lane for a
  // collective's whole modelled time, so counting that part again overshot every replay (llama
  // +1.3 to +4.4 %). The 10-36 % of gloo's time per step once found under operators was the
  // issuing c10d call, the collective's own (above). A collective wholly under compute is a 0
  // sample, not a dropped one. Nor is its part inside the thread's idle (a host gap that compute
  // resumed from long after it ended, replayed as measured): counted there and in the fit, CPU
  // replays came out +0.5 to +2.5 % long.
  auto in_used_step = [&](TimeNs t) { return in.step_windows.empty() || interval_holding(in.step_windows, t) >= 0; };
  for (const auto& c : p.collectives) {
    if (c.rank != in.rank || c.end <= c.start || !in_used_step(c.start)) continue;
    Coll t;
    if (c.type == CollectiveType::AllGather) t = Coll::AllGather;
    else if (c.type == CollectiveType::ReduceScatter) t = Coll::ReduceScatter;
    else if (c.type == CollectiveType::AllReduce) t = Coll::AllReduce;
    else continue;
    // Not sequence parallelism's beside FSDP's: the fit stands for the collectives the replay
    // models, and their small, fast samples had fitted a gloo faster than FSDP's own gathers (a
    // dp 2 x tp 2 SP run's replay -13 %).
    if (t != Coll::AllReduce && !in.fsdp_groups.holds(c)) continue;
    const TimeNs hidden = is_cpu_device(rk.info.gpu_name) ? busy_in(compute, c.start, c.end) + busy_in(idle, c.start, c.end) : 0;
    // Timed over the communicator it ran on (an HSDP shard or replicate group, a TP group).
    const int n = c.group_size > 0 && c.group_size <= in.world_size ? c.group_size : in.world_size;
    in.collectives.push_back({t, c.bytes, n, c.end - c.start - hidden});
  }
  in.recorded_hsdp_replicate = recorded_hsdp_replicate(p, in.rank, fsdp_world, in.fsdp_groups, in_used_step);
  // FSDP's all-gathers and reduce-scatters of each step used, as the rank issued them: what the
  // replay at the recorded plan makes when it models the loop (check_replay compares).
  if (!in.window_only) {
    in.fsdp_collectives_per_step.assign(in.step_windows.size(), StepCollectives{});
    for (const auto& c : p.collectives) {  // one pass: a profile may hold many steps
      if (c.rank != in.rank || c.end <= c.start || !is_fsdp(c)) continue;
      const auto k = interval_holding(in.step_windows, c.start);
      if (k < 0 || c.start >= in.step_windows[static_cast<std::size_t>(k)].second) continue;
      StepCollectives& n = in.fsdp_collectives_per_step[static_cast<std::size_t>(k)];
      n.all_gathers += c.type == CollectiveType::AllGather;
      n.reduce_scatters += c.type == CollectiveType::ReduceScatter;
    }
  }
  if (in.micro_batches > 1) {
    in.sync_every_microbatch = reduces_every_pass(p, in.rank, in.fsdp_groups, in.pass_windows, in.step_windows);
    in.reshard_after_backward = gathers_after_first_pass(p, in.rank, in.fsdp_groups, first_pass_forward, later_pass_forward);
  }
  // Mixed precision as the run had it: under FSDP2's MixedPrecisionPolicy the all-gathers carry
  // bf16 (2 bytes, the default) and the reduce-scatters fp32 or bf16 (reduce_dtype); a CPU run
  // without it moves fp32 (4) both ways.
  // The most one collective carries: a unit's parameters on its own mesh, or one of its groups
  // on a mesh of their own, which FSDP2 gathers apart (torchtitan's experts at dp_shard / ep > 1
  // ranks: 6.3 MB and 0.79 MB for one block; taken together, a 4-rank fp32 run read as bf16 and
  // its replay held half of every gathered block). A mesh of one rank gathers nothing.
  std::int64_t max_unit = 0;
  for (const auto& u : sm.units) {
    std::int64_t own = u.param_count;
    for (const auto& g : u.apart_groups) {
      own -= g.params;
      if (g.recorded_mesh > 1) max_unit = std::max(max_unit, g.params / g.ep);
    }
    max_unit = std::max(max_unit, own);
  }
  const auto [hooks_gather, hooks_reduce] = recorded_fsdp_dtypes(p, in.rank);
  if (const int b = recorded_dtype_bytes(p, in.rank, CollectiveType::AllGather, max_unit, in.fsdp_groups, in_used_step)) sm.param_dtype_bytes = b;
  else if (hooks_gather > 0) sm.param_dtype_bytes = hooks_gather;
  if (const int b = recorded_dtype_bytes(p, in.rank, CollectiveType::ReduceScatter, max_unit, in.fsdp_groups, in_used_step)) sm.reduce_dtype_bytes = b;
  else if (hooks_reduce > 0) sm.reduce_dtype_bytes = hooks_reduce;
  return in;
}

namespace {
int root_unit(const SimModel& m) {
  for (std::size_t u = 0; u < m.units.size(); ++u)
    if (m.units[u].is_root) return static_cast<int>(u);
  return -1;
}
}  // namespace

namespace {
// Where each used step's backward starts, as FSDP sees it: its first backward module range (the
// root's pre-backward), else its first backward range of any kind (the step's end without one).
// The loss's backward runs before the first module range, outside every module, and what it
// allocates lives with the forward's last activations: in the job that is the step's peak (on the
// CPU llama run: both 3.97 MiB temporaries of the cross-entropy's backward, freed before the
// root's pre-backward prefetches the last layer and allocates its gradients), so it counts with
// the root's forward temporaries; counted with the backward's, the model stacked it on those.
// One scan of the rank's backward ranges, then a binary search per step (a query per step
// scanned the unindexed ranges table once per step: minutes on a profile with 20k steps).
std::vector<TimeNs> backward_starts(sql::Db& db, const ProfileInput& in) {
  std::vector<TimeNs> bwd_starts;
  for (const bool modules_only : {true, false}) {
    sql::Stmt st(db.get(), modules_only ? "SELECT start_ns FROM ranges WHERE rank = ?1 AND phase = ?2 AND kind = ?3"
                                        : "SELECT start_ns FROM ranges WHERE rank = ?1 AND phase = ?2");
    st.bind(1, in.rank);
    st.bind(2, static_cast<int>(RangePhase::Backward));
    if (modules_only) st.bind(3, static_cast<int>(RangeKind::Module));
    while (st.step()) bwd_starts.push_back(st.col_int(0));
    if (!bwd_starts.empty()) break;
  }
  std::sort(bwd_starts.begin(), bwd_starts.end());
  std::vector<TimeNs> bwd_start;
  for (const auto& [a, b] : in.pass_windows) {
    const auto it = std::lower_bound(bwd_starts.begin(), bwd_starts.end(), a);
    bwd_start.push_back(it != bwd_starts.end() && *it <= b ? *it : b);
  }
  return bwd_start;
}

// For each pass, the start of the last forward call of every unit called more than once a pass
// (SimUnit::repeat_fwd_calls; its own module's ranges before the pass's backward), 0 for others.
std::vector<std::vector<TimeNs>> last_forward_calls(sql::Db& db, const ProfileInput& in, const std::vector<TimeNs>& bwd_start) {
  std::vector<std::vector<TimeNs>> last(in.pass_windows.size(), std::vector<TimeNs>(in.model.units.size(), 0));
  std::map<RowId, int> unit_of(in.unit_of_module.begin(), in.unit_of_module.end());
  sql::Stmt st(db.get(), "SELECT r.start_ns, r.module_id FROM ranges r JOIN modules m ON m.id = r.module_id "
                         "WHERE r.rank = ?1 AND r.phase = ?2 AND r.kind = ?3 AND m.is_fsdp_unit = 1");
  st.bind(1, in.rank);
  st.bind(2, static_cast<int>(RangePhase::Forward));
  st.bind(3, static_cast<int>(RangeKind::Module));
  while (st.step()) {
    const TimeNs t = st.col_int(0);
    const auto k = interval_holding(in.pass_windows, t);
    auto it = unit_of.find(st.col_int(1));
    if (k < 0 || it == unit_of.end() || t >= bwd_start[static_cast<std::size_t>(k)]) continue;
    if (in.model.units[static_cast<std::size_t>(it->second)].repeat_fwd_calls == 0) continue;
    TimeNs& l = last[static_cast<std::size_t>(k)][static_cast<std::size_t>(it->second)];
    l = std::max(l, t);
  }
  return last;
}
}  // namespace

void add_trainable_from_profile(ProfileInput& in, const std::string& path) {
  // Each unit's reduce-scatters in the steps used, by the module that issued them: a unit that
  // reduces less than its parameters trains only some of them (LoRA's adapters beside frozen base
  // weights), one that reduces nothing none of them (a LoRA root holding only frozen embeddings).
  // Replayed as wholly trained, a LoRA user loop reduced 568,832 B a block for the job's 40,960,
  // and the root too, and held gradients and AdamW state for every weight: its peak +70 %, not
  // calibrated. Only where every reduce-scatter of those steps has its unit (else nothing is set).
  if (in.step_windows.empty()) return;
  sql::Db db = open_profile_readonly(path);
  std::map<RowId, int> unit_of(in.unit_of_module.begin(), in.unit_of_module.end());
  // On a CPU trace FSDP's reduce range names the unit it reduces, better than the module open
  // around it: the root's ("FSDP::post_backward_reduce", no name) runs in its post-backward
  // callback, inside the last module range still open (layers.1.norm's, with the model's bottom
  // frozen), whose unit it had been counted for; the model's root trained nothing then.
  struct Reduce { TimeNs start, end; int unit; };
  std::vector<Reduce> reduces;
  {
    sql::Stmt r(db.get(), "SELECT r.start_ns, r.start_ns + r.duration_ns, s.value, r.module_id FROM ranges r JOIN strings s "
                          "ON s.id = r.name_id WHERE r.rank = ?1 AND r.kind = ?2 AND s.value LIKE 'FSDP::post_backward_reduce%' "
                          "AND r.module_id IS NOT NULL ORDER BY r.start_ns");
    r.bind(1, in.rank);
    r.bind(2, static_cast<int>(RangeKind::Fsdp));
    while (r.step()) {
      const auto it = unit_of.find(r.col_int(3));
      if (it == unit_of.end()) continue;
      const bool named = r.col_text(2).find('(') != std::string::npos;
      const int u = named ? it->second : model_root_of(in.model, it->second);
      if (u >= 0) reduces.push_back({r.col_int(0), r.col_int(1), u});
    }
  }
  auto reducing_unit = [&](TimeNs t) {
    auto it = std::upper_bound(reduces.begin(), reduces.end(), t, [](TimeNs v, const Reduce& x) { return v < x.start; });
    return it != reduces.begin() && t <= std::prev(it)->end ? std::prev(it)->unit : -1;
  };
  std::vector<double> bytes(in.model.units.size(), 0);
  int seen = 0;
  sql::Stmt st(db.get(), "SELECT k.module_id, c.start_ns, c.bytes, c.process_group_id FROM collectives c "
                         "LEFT JOIN kernels k ON k.id = c.kernel_id WHERE c.rank = ?1 AND c.type = ?2");
  st.bind(1, in.rank);
  st.bind(2, static_cast<int>(CollectiveType::ReduceScatter));
  while (st.step()) {
    if (interval_holding(in.step_windows, st.col_int(1)) < 0 || !in.fsdp_groups.holds_group(st.col_int_or(3, -1))) continue;
    ++seen;
    int u = reducing_unit(st.col_int(1));
    if (u < 0) {
      auto it = st.col_null(0) ? unit_of.end() : unit_of.find(st.col_int(0));
      if (it == unit_of.end()) return;
      u = it->second;
    }
    // FSDP names a unit by its path in its own model, and the trace's module is found by that
    // name: a frozen teacher's "layers.0" is the student's FSDPNet.layers.0 (LoRA beside a
    // teacher had reduced every unit whole, its root too: 5 reduce-scatters for the job's 4).
    if (in.model.units[static_cast<std::size_t>(u)].frozen)
      if (const int trained = trained_namesake(in.model, static_cast<std::size_t>(u)); trained >= 0) u = trained;
    bytes[static_cast<std::size_t>(u)] += double(st.col_int(2));
  }
  if (seen == 0) return;
  // A frozen unit reduces nothing: reduce-scatters still filed under one (no trained unit has its
  // name) are of a unit nothing tells: nothing is known.
  for (std::size_t u = 0; u < bytes.size(); ++u)
    if (bytes[u] > 0 && in.model.units[u].frozen) return;
  const double passes = double(in.step_windows.size()) * (in.sync_every_microbatch ? std::max(1, in.micro_batches) : 1);
  for (std::size_t u = 0; u < bytes.size(); ++u) {
    SimUnit& unit = in.model.units[u];
    if (unit.frozen || unit.param_count <= 0 || !unit.apart_groups.empty()) continue;
    const double reduced = bytes[u] / passes / double(std::max(1, in.model.reduce_dtype_bytes));
    if (reduced < 0.98 * double(unit.param_count)) unit.trainable_params = std::llround(reduced);
  }
}

void add_gathers_from_profile(ProfileInput& in, const std::string& path) {
  if (in.fsdp_gather_ranges || in.pass_windows.empty()) return;
  // No FSDP2 ranges (SimpleFSDP gathers each parameter where a module uses it; FSDP1 names its
  // ranges without the unit; NVTX on a GPU has none): the all-gathers
  // issued inside each unit's modules, per step, beyond the modelled ones (one in forward, one
  // more in backward for a resharded unit). Phases are not told apart: a chunked loss runs the
  // output head's forwards between backward passes.
  sql::Db db = open_profile_readonly(path);
  std::map<RowId, int> unit_of(in.unit_of_module.begin(), in.unit_of_module.end());
  std::vector<double> gathers(in.model.units.size(), 0);
  sql::Stmt st(db.get(), "SELECT k.module_id, c.start_ns, c.process_group_id FROM collectives c JOIN kernels k ON k.id = c.kernel_id "
                         "WHERE c.rank = ?1 AND c.type = ?2 AND k.module_id IS NOT NULL");
  st.bind(1, in.rank);
  st.bind(2, static_cast<int>(CollectiveType::AllGather));
  while (st.step()) {
    const auto held = interval_holding(in.pass_windows, st.col_int(1));
    auto it = unit_of.find(st.col_int(0));
    if (held < 0 || it == unit_of.end() || !in.fsdp_groups.holds_group(st.col_int_or(2, -1))) continue;
    gathers[static_cast<std::size_t>(it->second)] += 1;
  }
  // A prefetch is issued inside another unit's modules (FSDP2's explicit prefetch, FSDP1's
  // backward prefetch: layers.2's gather under layers.3's range, layers.3's under the root's
  // `norm`), which moves a gather from one unit to another and leaves the step's total as
  // modelled. Only the step's gathers beyond the modelled total are re-gathers: they go to the
  // units counted over their share, the largest excess first.
  const double n = double(in.pass_windows.size());
  std::vector<long> excess(gathers.size(), 0);
  long beyond = 0;
  for (std::size_t u = 0; u < gathers.size(); ++u) {
    const SimUnit& unit = in.model.units[u];
    // A unit that reshards gathers at each of its forward calls (SimUnit::repeat_fwd_calls).
    const long modelled = unit.param_count == 0 ? 0 : unit.is_root || unit.recorded_reshard == 0 ? 1 : 2 + unit.repeat_fwd_calls;
    const long per_step = std::lround(gathers[u] / n);
    excess[u] = per_step - modelled;
    beyond += excess[u];
  }
  std::vector<std::size_t> order(gathers.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return excess[a] > excess[b]; });
  for (std::size_t u : order) {
    const long extra = std::clamp(excess[u], 0L, std::max(beyond, 0L));
    in.model.units[u].extra_fwd_gathers = static_cast<int>(extra);
    beyond -= extra;
  }
}

std::int64_t add_temporaries_from_profile(ProfileInput& in, const std::string& path) {
  if (in.pass_windows.empty()) return 0;
  sql::Db db = open_profile_readonly(path);
  // Each step's backward starts at its first backward module range.
  const std::vector<TimeNs> bwd_start = backward_starts(db, in);
  // A unit called more than once a pass: the forward temporaries of its last call, the training
  // one. No_grad rollouts before it free as they go what a training call saves: counted, their
  // largest (a block's fc1 and gelu outputs, 256 KiB) stacked on the training call's activations.
  const std::vector<std::vector<TimeNs>> last_call = last_forward_calls(db, in, bwd_start);
  std::map<RowId, int> unit_of(in.unit_of_module.begin(), in.unit_of_module.end());
  const std::size_t nu = in.model.units.size();
  const int root = root_unit(in.model);
  // live[unit * 2 + phase], per step: the running bytes and their maximum.
  std::vector<double> sum_max(nu * 2, 0);
  std::vector<std::int64_t> live(nu * 2, 0), most(nu * 2, 0);
  std::map<std::int64_t, std::pair<std::size_t, std::int64_t>> open;  // address -> (slot, bytes)
  std::size_t step = SIZE_MAX;
  auto close_step = [&]() {
    for (std::size_t k = 0; k < most.size(); ++k) sum_max[k] += double(most[k]);
    std::fill(live.begin(), live.end(), 0);
    std::fill(most.begin(), most.end(), 0);
    open.clear();
  };
  sql::Stmt st(db.get(), "SELECT time_ns, address, bytes, module_id FROM memory_events WHERE rank = ?1 AND category = ?2 ORDER BY time_ns, bytes");
  st.bind(1, in.rank);
  st.bind(2, static_cast<int>(MemoryCategory::Temporary));
  while (st.step()) {
    const TimeNs t = st.col_int(0);
    const auto held = interval_holding(in.pass_windows, t);
    if (held < 0) continue;
    const auto k = static_cast<std::size_t>(held);
    if (k != step) {
      if (step != SIZE_MAX) close_step();
      step = k;
    }
    const std::int64_t addr = st.col_int_or(1, 0), bytes = st.col_int(2);
    if (bytes > 0) {
      auto it = st.col_null(3) ? unit_of.end() : unit_of.find(st.col_int(3));
      if (it == unit_of.end() && !(st.col_null(3) && root >= 0)) continue;  // outside modules: the root's caller
      const int unit = it == unit_of.end() ? root : it->second;
      if (t < last_call[k][static_cast<std::size_t>(unit)]) continue;  // an earlier call's (only before the backward)
      const std::size_t slot = static_cast<std::size_t>(unit) * 2 + (t >= bwd_start[k] ? 1 : 0);
      open[addr] = {slot, bytes};
      add_memory_bytes(live[slot], bytes, path);
      most[slot] = std::max(most[slot], live[slot]);
    } else if (auto it = open.find(addr); it != open.end()) {
      live[it->second.first] -= it->second.second;
      open.erase(it);
    }
  }
  if (step != SIZE_MAX) close_step();
  const double n = double(in.pass_windows.size());
  std::int64_t largest = 0;
  for (std::size_t u = 0; u < nu; ++u) {
    SimSegment* last = nullptr;
    for (auto& seg : in.model.segments)
      if (static_cast<std::size_t>(seg.unit) == u) last = &seg;
    if (!last) continue;
    last->fwd_temp_bytes = static_cast<std::int64_t>(sum_max[u * 2] / n);
    last->bwd_temp_bytes = static_cast<std::int64_t>(sum_max[u * 2 + 1] / n);
    largest = std::max({largest, last->fwd_temp_bytes, last->bwd_temp_bytes});
  }
  return largest;
}

bool add_kept_grads_from_profile(ProfileInput& in, const std::string& path) {
  if (in.step_windows.empty() || in.model.forward_only) return false;
  double sharded_grads = 0;  // the model's, per rank, at the recorded shard group
  const int shard = std::max(1, in.world_size / in.model_parallel_ranks / std::max(1, in.recorded_hsdp_replicate));
  for (const auto& u : in.model.units)  // of the trained parameters (add_trainable_from_profile runs first)
    sharded_grads += double(u.param_count) * u.trainable_fraction() * in.model.master_dtype_bytes / shard;
  if (sharded_grads <= 0) return false;
  sql::Db db = open_profile_readonly(path);
  // Where each step's forward starts: after the trainer's zero_grad, wherever in the step it is
  // (torchtitan calls it first thing in train_step, inside the step's window); and where its
  // backward starts.
  std::vector<TimeNs> starts, backwards;
  for (const RangePhase phase : {RangePhase::Forward, RangePhase::Backward}) {
    std::vector<TimeNs> ranges;
    sql::Stmt r(db.get(), "SELECT start_ns FROM ranges WHERE rank = ?1 AND kind = ?2 AND phase = ?3");
    r.bind(1, in.rank);
    r.bind(2, static_cast<int>(RangeKind::Module));
    r.bind(3, static_cast<int>(phase));
    while (r.step()) ranges.push_back(r.col_int(0));
    std::sort(ranges.begin(), ranges.end());
    for (const auto& [a, b] : in.step_windows) {
      const auto it = std::lower_bound(ranges.begin(), ranges.end(), a);
      if (it != ranges.end() && *it <= b) (phase == RangePhase::Forward ? starts : backwards).push_back(*it);
      else if (phase == RangePhase::Forward) return false;  // a step without a forward: nothing to say
    }
  }
  // The gradient memory live at each of those instants (one pass over the events).
  std::vector<std::pair<TimeNs, bool>> at;  // (instant, a backward's)
  for (TimeNs t : starts) at.emplace_back(t, false);
  for (TimeNs t : backwards) at.emplace_back(t, true);
  std::sort(at.begin(), at.end());
  sql::Stmt st(db.get(), "SELECT time_ns, bytes FROM memory_events WHERE rank = ?1 AND category = ?2 ORDER BY time_ns");
  st.bind(1, in.rank);
  st.bind(2, static_cast<int>(MemoryCategory::Gradient));
  double live = 0, least = std::numeric_limits<double>::infinity(), most_at_backward = 0;
  std::size_t next = 0;
  auto reach = [&](TimeNs t) {
    for (; next < at.size() && at[next].first <= t; ++next) {
      if (at[next].second) most_at_backward = std::max(most_at_backward, live);
      else least = std::min(least, live);
    }
  };
  while (st.step()) {
    reach(st.col_int(0));
    live += double(st.col_int(1));
  }
  reach(std::numeric_limits<TimeNs>::max());
  // 90 %: with set_to_none=True a CPU trace still shows some gradient bytes live at a forward (up to
  // half the model's, from frees it files under another category: the MoE runs of docs/accuracy.md).
  in.model.grads_kept = least >= 0.9 * sharded_grads;
  // Kept at the forward but gone by the backward (at most half of them live at any step's first
  // backward range): zero_grad() between the two, right before loss.backward(). Held the whole
  // step, a user loop's backward came out with every sharded gradient twice over its reductions,
  // the replay's peak moved there and the calibrated forward peak of a plan was 4.6 % low.
  in.model.grads_freed_before_backward =
      in.model.grads_kept && backwards.size() == in.step_windows.size() && most_at_backward <= 0.5 * sharded_grads;
  return in.model.grads_kept;
}

sql::Stmt activation_events_in_order(sql::Db& db, int rank) {
  sql::Stmt st(db.get(), "SELECT time_ns, address, bytes, module_id FROM memory_events WHERE rank = ?1 AND category = ?2 "
                         "AND address IS NOT NULL ORDER BY time_ns, id");
  st.bind(1, rank);
  st.bind(2, static_cast<int>(MemoryCategory::Activation));
  return st;
}

sql::Stmt module_and_fsdp_ranges(sql::Db& db, int rank, RangePhase a, RangePhase b) {
  sql::Stmt r(db.get(),
              "SELECT r.module_id, r.kind, r.phase, r.start_ns, r.start_ns + r.duration_ns, s.value FROM ranges r "
              "JOIN strings s ON s.id = r.name_id WHERE r.rank = ?1 AND r.module_id IS NOT NULL AND r.kind IN (?2, ?3) "
              "AND r.phase IN (?4, ?5)");
  r.bind(1, rank);
  r.bind(2, static_cast<int>(RangeKind::Module));
  r.bind(3, static_cast<int>(RangeKind::Fsdp));
  r.bind(4, static_cast<int>(a));
  r.bind(5, static_cast<int>(b));
  return r;
}

namespace {

// What the root's tail made in a pass that outlives the pass's backward, per pass: the model's
// output that the training loop still holds (`logits = model(x)`: the variable keeps the logits
// until the next pass's forward returns and reassigns it). Measured on llama (CPU): 4,161,536 B of
// logits made in the output head, freed in the next step 14 ms after its own logits were made;
// a loop that drops its output (`model(x).pow(2).mean()`, torchtitan's `del pred`) holds none.
// The replay freed them with the tail's saved tensors, at the start of backward: a checkpointed
// llama peaked mid-backward 2.1 % under its job.
// Bytes per pass: held to a later pass, held only past the backward (freed later in the same
// pass: `del out` after loss.backward()), and of both those made outside every module (not the
// loss's, though made where it is).
struct CallerHeld {
  std::int64_t to_next_pass = 0, through_backward = 0, outside_modules = 0;
};
CallerHeld caller_held_from_profile(sql::Db& db, const ProfileInput& in, int root, const std::vector<TimeNs>& tail_from) {
  if (root < 0 || in.model.forward_only) return {};
  std::map<RowId, int> unit_of(in.unit_of_module.begin(), in.unit_of_module.end());
  std::vector<TimeNs> bwd_end(in.pass_windows.size(), std::numeric_limits<TimeNs>::min());
  {
    sql::Stmt r(db.get(), "SELECT start_ns + duration_ns FROM ranges WHERE rank = ?1 AND phase = ?2");
    r.bind(1, in.rank);
    r.bind(2, static_cast<int>(RangePhase::Backward));
    while (r.step())
      if (const auto k = interval_holding(in.pass_windows, r.col_int(0)); k >= 0)
        bwd_end[static_cast<std::size_t>(k)] = std::max(bwd_end[static_cast<std::size_t>(k)], r.col_int(0));
  }
  struct Made { std::size_t pass; std::int64_t bytes; bool outside; };
  std::map<std::int64_t, Made> open;  // address -> the tail's allocation
  double next = 0, through = 0, outside = 0;
  auto hold = [&](const Made& m, bool to_next) {
    (to_next ? next : through) += double(m.bytes);
    outside += m.outside ? double(m.bytes) : 0;
  };
  sql::Stmt st = activation_events_in_order(db, in.rank);
  while (st.step()) {
    const TimeNs t = st.col_int(0);
    const std::int64_t addr = st.col_int(1), bytes = st.col_int(2);
    const auto k = interval_holding(in.pass_windows, t);
    if (bytes <= 0) {
      auto it = open.find(addr);
      if (it == open.end()) continue;
      // Freed after its pass's backward: held by the caller, to a later pass or within this one.
      if (k != static_cast<std::ptrdiff_t>(it->second.pass)) hold(it->second, true);
      else if (t > bwd_end[it->second.pass]) hold(it->second, false);
      open.erase(it);
      continue;
    }
    open.erase(addr);
    if (k < 0 || t < tail_from[static_cast<std::size_t>(k)] || t > bwd_end[static_cast<std::size_t>(k)]) continue;
    const auto u = st.col_null(3) ? unit_of.end() : unit_of.find(st.col_int(3));
    if ((u == unit_of.end() && !st.col_null(3)) || (u != unit_of.end() && u->second != root)) continue;
    open[addr] = {static_cast<std::size_t>(k), bytes, st.col_null(3)};
  }
  for (const auto& [addr, m] : open) hold(m, true);  // never freed in the profile
  const double n = double(std::max<std::size_t>(1, in.pass_windows.size()));
  return {static_cast<std::int64_t>(next / n), static_cast<std::int64_t>(through / n), static_cast<std::int64_t>(outside / n)};
}

}  // namespace

std::int64_t add_activations_from_profile(ProfileInput& in, const std::string& path) {
  sql::Db db = open_profile_readonly(path);
  std::map<RowId, int> unit_of(in.unit_of_module.begin(), in.unit_of_module.end());
  // Activation checkpointing as recorded: what a unit's recompute (its forward rerun in backward)
  // allocates lives only from that rerun to the unit's backward, not from the forward on.
  std::vector<std::pair<TimeNs, TimeNs>> recompute;
  std::vector<std::pair<TimeInterval, int>> rerun_of_unit;  // each recompute range and its unit
  {
    sql::Stmt r(db.get(), "SELECT start_ns, start_ns + duration_ns, module_id FROM ranges WHERE rank = ?1 AND phase = ?2");
    r.bind(1, in.rank);
    r.bind(2, static_cast<int>(RangePhase::Recompute));
    while (r.step()) {
      recompute.emplace_back(r.col_int(0), r.col_int(1));
      if (auto it = r.col_null(2) ? unit_of.end() : unit_of.find(r.col_int(2)); it != unit_of.end())
        rerun_of_unit.push_back({{r.col_int(0), r.col_int(1)}, it->second});
    }
    recompute = interval_union(std::move(recompute));
    // A unit's rerun nests its sub-modules' ranges: one interval per unit's rerun, by start.
    std::sort(rerun_of_unit.begin(), rerun_of_unit.end());
    std::vector<std::pair<TimeInterval, int>> merged;
    for (const auto& run : rerun_of_unit) {
      if (!merged.empty() && merged.back().second == run.second && run.first.first <= merged.back().first.second)
        merged.back().first.second = std::max(merged.back().first.second, run.first.second);
      else
        merged.push_back(run);
    }
    rerun_of_unit = std::move(merged);
  }
  auto rerunning_unit = [&](TimeNs t) {
    auto it = std::upper_bound(rerun_of_unit.begin(), rerun_of_unit.end(), t,
                               [](TimeNs v, const auto& r) { return v < r.first.first; });
    if (it == rerun_of_unit.begin() || t > std::prev(it)->first.second) return -1;
    return std::prev(it)->second;
  };
  std::vector<double> rerun(in.model.units.size(), 0);
  const int root = root_unit(in.model);
  // The root's tail (norm, output head, loss: after the last other unit's forward) is the first
  // segment backward runs, and what it saved is freed there, not with the head's at the end of
  // the backward: in each step, when the last non-root unit's forward ended. A unit's forward is
  // its first range in the step (the outermost: the earliest start): torchtitan's chunked loss
  // calls the output head again for each chunk inside the loss's backward, and the head's last
  // range ends there, which left the loss's 1.35 MB (made after the head's first forward) held
  // by the replay from the step's start to its end.
  const SimSegment* root_tail = nullptr;
  int root_segments = 0;
  for (const auto& seg : in.model.segments)
    if (seg.unit == root) ++root_segments, root_tail = &seg;
  std::vector<TimeNs> tail_from(in.pass_windows.size(), std::numeric_limits<TimeNs>::max());
  if (root >= 0 && root_segments > 1) {
    sql::Stmt r(db.get(), "SELECT module_id, start_ns, start_ns + duration_ns FROM ranges WHERE rank = ?1 AND kind = ?2 "
                          "AND phase = ?3 AND module_id IS NOT NULL ORDER BY start_ns, duration_ns DESC");
    r.bind(1, in.rank);
    r.bind(2, static_cast<int>(RangeKind::Module));
    r.bind(3, static_cast<int>(RangePhase::Forward));
    std::vector<TimeNs> last_end(in.pass_windows.size(), 0);
    std::set<std::pair<std::ptrdiff_t, int>> seen;  // (step, unit) whose first forward range is taken
    while (r.step()) {
      auto it = unit_of.find(r.col_int(0));
      if (it == unit_of.end() || it->second == root) continue;
      const auto k = interval_holding(in.pass_windows, r.col_int(1));
      if (k < 0 || !seen.insert({k, it->second}).second) continue;
      last_end[static_cast<std::size_t>(k)] = std::max(last_end[static_cast<std::size_t>(k)], r.col_int(2));
    }
    for (std::size_t k = 0; k < last_end.size(); ++k)
      if (last_end[k] > 0) tail_from[k] = last_end[k];
  }
  sql::Stmt st(db.get(), "SELECT module_id, time_ns, bytes FROM memory_events WHERE rank = ?1 AND category = ?2");
  st.bind(1, in.rank);
  st.bind(2, static_cast<int>(MemoryCategory::Activation));
  std::vector<double> bytes(in.model.units.size(), 0);
  double tail_bytes = 0, loss_bytes = 0, total = 0;
  while (st.step()) {
    if (st.col_int(2) <= 0) {
      // A rerun keeps only part of what it makes: torchtitan's selective checkpointing frees
      // 6.4 of the 11.7 MB a llama block's rerun allocates before the rerun ends (and the saved
      // tensors it has consumed). What it adds is the net; counted gross, the replay held 10 MB
      // of activations per block where the job held 5.3 (docs/accuracy.md).
      if (const int u = rerunning_unit(st.col_int(1)); u >= 0 && interval_holding(in.pass_windows, st.col_int(1)) >= 0)
        rerun[static_cast<std::size_t>(u)] += double(st.col_int(2));
      continue;
    }
    // Made outside every module (the loss, the batch): the caller of the root's forward.
    auto it = st.col_null(0) ? unit_of.end() : unit_of.find(st.col_int(0));
    if (it == unit_of.end() && !(st.col_null(0) && root >= 0)) continue;
    const int unit = it == unit_of.end() ? root : it->second;
    const TimeNs t = st.col_int(1);
    const auto k = interval_holding(in.pass_windows, t);
    if (k < 0) continue;
    const bool rerun_alloc = !recompute.empty() && interval_holding(recompute, t) >= 0;
    const double b = double(st.col_int(2));
    if (rerun_alloc)
      rerun[static_cast<std::size_t>(unit)] += b;
    else if (unit == root && t >= tail_from[static_cast<std::size_t>(k)])
      tail_bytes += b, loss_bytes += st.col_null(0) ? b : 0;
    else
      bytes[static_cast<std::size_t>(unit)] += b;
    if (!rerun_alloc) total += b;
  }
  const double n = double(std::max<std::size_t>(1, in.pass_windows.size()));
  for (auto& seg : in.model.segments) {
    double& b = bytes[static_cast<std::size_t>(seg.unit)];
    double& r = rerun[static_cast<std::size_t>(seg.unit)];
    // The first segment of a unit takes what it saved (the root's head: what came before its tail).
    seg.saved_activation_bytes = static_cast<std::int64_t>(b / n);
    seg.recompute_activation_bytes = static_cast<std::int64_t>(std::max(0.0, r) / n);
    b = r = 0;
    if (root_segments > 1 && &seg == root_tail) {
      seg.saved_activation_bytes = static_cast<std::int64_t>(tail_bytes / n);
      // Made outside every module after the last unit's forward: the loss's, freed by its backward.
      seg.loss_saved_bytes = static_cast<std::int64_t>(loss_bytes / n);
      // What the loop holds is not the loss's, though made outside every module too
      // (`logits = model(x).float()`): the loss's backward does not free it.
      const CallerHeld held = caller_held_from_profile(db, in, root, tail_from);
      seg.loss_saved_bytes = std::max<std::int64_t>(0, seg.loss_saved_bytes - held.outside_modules);
      seg.caller_held_bytes = std::clamp<std::int64_t>(held.to_next_pass, 0, seg.saved_activation_bytes - seg.loss_saved_bytes);
      seg.backward_held_bytes = std::clamp<std::int64_t>(held.through_backward, 0,
                                                         seg.saved_activation_bytes - seg.loss_saved_bytes - seg.caller_held_bytes);
    }
  }
  return static_cast<std::int64_t>(total / n);
}

}  // namespace ss::sim
