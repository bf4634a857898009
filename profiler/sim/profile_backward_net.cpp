// What a unit's backward holds at its highest, beyond what it held when it began, measured on a
// profile: its temporaries, plus the gradients it has made by then, less the saved tensors it has
// consumed and freed by then.
//
// The simulator makes a segment's backward temporaries at its start, on top of every tensor the
// unit saved, and frees the saved tensors and writes the unit's gradients at its end. A real
// backward does not keep that order. Measured on CPU (2026-12-07):
// - llama's block frees the `silu(w1 x) * w3 x` product (1.4 MB) in w2's backward, before the
//   temporaries of w3's backward peak, and has made w2's weight gradient (0.7 MB) by then: the
//   block's backward rises 3.50 MB above its start, where its temporaries alone peak at 4.19 MB;
// - mlp's block has made fc2's weight gradient (4.2 MB) while 8.4 MB of temporaries are alive:
//   12.58 MB above its start; its temporaries alone peak at 16.8 MB, once it has freed 8.4 MB of
//   saved tensors.
// The same figure comes out of a recording with activation checkpointing, measured from the
// rerun's end (the rebuilt set then stands where the saved set stood): 3,500,544 B and
// 12,584,960 B per block, plain and checkpointed alike. So the figure replaces the segment's
// backward temporaries (SimSegment::bwd_temp_bytes) for every unit but the root, whose tail's
// backward (the loss's) is modelled term by term (loss_saved_bytes, caller_held_bytes).
//
// A unit's backward in a pass: from its first backward (or rerun) module range to its post-backward
// (FSDP::post_backward*, which moves the gradients into the reduce-scatter input) or its last
// range's end. Only temporaries, gradients and activations count; unit states, gathers and
// reduce-scatter buffers are modelled on their own. A window that holds a forward (a pipeline's
// schedule runs other micro-batches' forwards between one unit's backwards) is not measured: its
// activations would be the forward's.
//
// A unit with units nested in it (FSDP2 on a block's fc1 and fc2 as well as on the block) runs their
// backwards inside its own module range. Each nested unit's segment models its own backward, so the
// parent is observed only outside its nested units' windows (each through its post-backward, where
// its gradients go to the reduction): what they leave behind (the gradient they hand on) still
// counts, their high points do not. Measured on tests/python/user_loop.py --nested: each block took
// fc2's 393,728 B as its own, and the replay fitted its unexplained memory around that; a plan
// keeping every fc unit unsharded then came out 1.06 % under the job's peak.
#include <algorithm>
#include <limits>
#include <map>
#include <vector>

#include "profiler/sim/profile_extract.h"
#include "storage/interval_union.h"
#include "storage/profile_reader.h"
#include "storage/sqlite_handle.h"

namespace ss::sim {
namespace {

constexpr TimeNs kNone = std::numeric_limits<TimeNs>::min();
constexpr TimeNs kMax = std::numeric_limits<TimeNs>::max();

// One unit's backward in one pass, and what it held on the way.
struct BackwardWindow {
  std::size_t unit = 0;
  std::size_t pass = 0;
  TimeNs lo = kMax, hi = kNone;
  TimeNs rerun_end = kNone;  // the end of its checkpointing rerun (kNone: not checkpointed)
  TimeNs post = kMax;        // its post-backward's start
  TimeNs post_end = kNone;   // its post-backward's end
  std::int64_t delta = 0;    // temporaries + gradients + activations since lo
  std::int64_t act_delta = 0;
  std::int64_t base = 0;     // act_delta when the rerun ended (the rebuilt set)
  std::int64_t incoming = 0; // temporaries alive at lo: the gradient it was handed
  bool based = false;
  bool hidden = false;       // the last event lay in a nested unit's window
  std::vector<const BackwardWindow*> nested;  // its nested units' windows in the same pass
  std::int64_t most = std::numeric_limits<std::int64_t>::min();
  TimeNs end() const { return std::min(hi, post); }
  // Where a parent unit does not look: from the first range through the post-backward's end.
  bool hides(TimeNs t) const { return t >= lo && t <= std::max(end(), post_end); }
  bool in_nested(TimeNs t) const {
    return std::any_of(nested.begin(), nested.end(), [t](const BackwardWindow* n) { return n->hides(t); });
  }
  bool seen() const { return most != std::numeric_limits<std::int64_t>::min(); }
  // The state after every event up to now counts once the rerun is over.
  void observe(TimeNs t) {
    if (t < rerun_end) return;
    if (!based) base = act_delta, based = true;
    most = std::max(most, delta - base);
  }
};

bool is_post_backward(const std::string& name) { return name.rfind("FSDP::post_backward", 0) == 0; }

}  // namespace

void add_backward_net_from_profile(ProfileInput& in, const std::string& path) {
  if (in.pass_windows.empty()) return;
  sql::Db db = open_profile_readonly(path);
  const std::map<RowId, int> unit_of(in.unit_of_module.begin(), in.unit_of_module.end());
  const std::size_t nu = in.model.units.size();
  std::vector<BackwardWindow> windows(in.pass_windows.size() * nu);
  for (std::size_t i = 0; i < windows.size(); ++i) windows[i].unit = i % nu, windows[i].pass = i / nu;
  {
    sql::Stmt r = module_and_fsdp_ranges(db, in.rank, RangePhase::Backward, RangePhase::Recompute);
    while (r.step()) {
      const auto u = unit_of.find(r.col_int(0));
      const auto k = interval_holding(in.pass_windows, r.col_int(3));
      if (u == unit_of.end() || k < 0 || in.model.units[static_cast<std::size_t>(u->second)].is_root) continue;
      BackwardWindow& w = windows[static_cast<std::size_t>(k) * nu + static_cast<std::size_t>(u->second)];
      const TimeNs a = r.col_int(3), b = r.col_int(4);
      if (r.col_int(1) == static_cast<int>(RangeKind::Fsdp)) {
        if (is_post_backward(r.col_text(5))) w.post = std::min(w.post, a), w.post_end = std::max(w.post_end, b);
        continue;
      }
      w.lo = std::min(w.lo, a), w.hi = std::max(w.hi, b);
      if (r.col_int(2) == static_cast<int>(RangePhase::Recompute)) w.rerun_end = std::max(w.rerun_end, b);
    }
  }
  std::vector<TimeNs> forwards;  // module forward ranges' starts, sorted
  {
    sql::Stmt f(db.get(), "SELECT start_ns FROM ranges WHERE rank = ?1 AND kind = ?2 AND phase = ?3 ORDER BY start_ns");
    f.bind(1, in.rank);
    f.bind(2, static_cast<int>(RangeKind::Module));
    f.bind(3, static_cast<int>(RangePhase::Forward));
    while (f.step()) forwards.push_back(f.col_int(0));
  }
  auto holds_forward = [&](const BackwardWindow& w) {
    const auto it = std::upper_bound(forwards.begin(), forwards.end(), w.lo);
    return it != forwards.end() && *it < w.end();
  };
  std::vector<BackwardWindow*> order;  // by start
  for (auto& w : windows)
    if (w.hi != kNone && !holds_forward(w)) order.push_back(&w);
  if (order.empty()) return;
  // The units nested in each (by name: layers.0.fc1 in layers.0), then their windows of each pass.
  std::vector<std::vector<std::size_t>> inner(nu);
  for (std::size_t u = 0; u < nu; ++u) {
    const std::string prefix = in.model.units[u].name + ".";
    for (std::size_t v = 0; v < nu && !in.model.units[u].is_root; ++v)
      if (v != u && in.model.units[v].name.rfind(prefix, 0) == 0) inner[u].push_back(v);
  }
  for (BackwardWindow* w : order)
    for (std::size_t v : inner[w->unit])
      if (const BackwardWindow& n = windows[w->pass * nu + v]; n.hi != kNone) w->nested.push_back(&n);
  std::sort(order.begin(), order.end(), [](const BackwardWindow* a, const BackwardWindow* b) { return a->lo < b->lo; });

  // One pass over the rank's temporaries, gradients and activations, paired by address from the
  // profile's start (a saved tensor freed in backward was made in forward).
  sql::Stmt st(db.get(), "SELECT time_ns, address, bytes, category FROM memory_events WHERE rank = ?1 AND category IN (?2, ?3, ?4) "
                         "AND address IS NOT NULL ORDER BY time_ns, id");
  st.bind(1, in.rank);
  st.bind(2, static_cast<int>(MemoryCategory::Temporary));
  st.bind(3, static_cast<int>(MemoryCategory::Gradient));
  st.bind(4, static_cast<int>(MemoryCategory::Activation));
  std::map<std::int64_t, std::pair<std::int64_t, MemoryCategory>> live;  // address -> (bytes, category)
  std::int64_t live_temporaries = 0;
  std::size_t next = 0;                                         // order[next] not begun yet
  std::vector<BackwardWindow*> open;
  while (st.step()) {
    const TimeNs t = st.col_int(0);
    const std::int64_t addr = st.col_int(1), bytes = st.col_int(2);
    for (; next < order.size() && order[next]->lo <= t; ++next) {
      order[next]->incoming = live_temporaries;
      open.push_back(order[next]);
    }
    // Windows that ended before this event: their last state was observed with the event before.
    open.erase(std::remove_if(open.begin(), open.end(), [&](BackwardWindow* w) { return w->end() < t; }), open.end());
    std::int64_t change = 0;
    auto category = MemoryCategory::Unknown;
    if (bytes > 0) {
      category = static_cast<MemoryCategory>(st.col_int(3));
      live[addr] = {bytes, category};
      change = bytes;
    } else if (auto it = live.find(addr); it != live.end()) {
      change = -it->second.first, category = it->second.second;
      live.erase(it);
    }
    if (category == MemoryCategory::Temporary) live_temporaries += change;
    const bool activation = category == MemoryCategory::Activation;
    for (BackwardWindow* w : open) {
      const bool hidden = w->in_nested(t);
      if (t > w->rerun_end && !w->based) w->observe(w->rerun_end);  // the state at the rerun's end
      if (w->hidden && !hidden) w->observe(t);                      // what a nested unit left behind
      w->hidden = hidden;
      w->delta += change;
      if (activation) w->act_delta += change;
      if (!hidden) w->observe(t);
    }
  }

  std::vector<double> sum(nu, 0), incoming(nu, 0);
  std::vector<int> passes(nu, 0);
  for (const auto& w : windows)
    if (w.seen()) sum[w.unit] += double(std::max<std::int64_t>(0, w.most)), incoming[w.unit] += double(w.incoming), ++passes[w.unit];
  for (std::size_t u = 0; u < nu; ++u) {
    if (passes[u] == 0) continue;
    SimSegment* last = nullptr;
    for (auto& seg : in.model.segments)
      if (static_cast<std::size_t>(seg.unit) == u) last = &seg;
    if (!last) continue;
    last->bwd_temp_bytes = static_cast<std::int64_t>(sum[u] / passes[u]);
    last->bwd_incoming_bytes = static_cast<std::int64_t>(incoming[u] / passes[u]);
  }
}

}  // namespace ss::sim
