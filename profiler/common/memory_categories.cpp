#include "profiler/common/memory_categories.h"

#include <algorithm>
#include <charconv>
#include <numeric>
#include <unordered_map>

#include "storage/sorted_runs.h"

namespace ss {
namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

enum class Phase : std::uint8_t { None, Forward, Backward, Optimizer };

struct Placement {
  Phase phase = Phase::None;
  const StepPhases* step = nullptr;
  TimeNs forward_end = 0;  // Forward: where its pass's backward starts
};

Placement place(const std::vector<StepPhases>& steps, TimeNs t) {
  auto it = std::upper_bound(steps.begin(), steps.end(), t, [](TimeNs v, const StepPhases& s) { return v < s.start; });
  if (it == steps.begin()) return {};
  const StepPhases& s = *std::prev(it);
  if (t >= s.end) return {};
  if (t < s.backward) return {Phase::Forward, &s, s.backward};
  if (t >= s.optimizer) return {Phase::Optimizer, &s, 0};
  // A later pass's forward (gradient accumulation): its activations live into its own backward.
  auto pass = std::upper_bound(s.later_passes.begin(), s.later_passes.end(), t,
                               [](TimeNs v, const PassPhases& p) { return v < p.forward; });
  if (pass != s.later_passes.begin() && t < std::prev(pass)->backward) return {Phase::Forward, &s, std::prev(pass)->backward};
  return {Phase::Backward, &s, 0};
}

}  // namespace

void find_later_passes(std::vector<StepPhases>& steps, const std::vector<TimeNs>& forward_module_starts,
                       const std::vector<TimeNs>& backward_starts) {
  for (StepPhases& s : steps) {
    s.later_passes.clear();
    if (s.backward >= s.optimizer) continue;
    auto f = std::upper_bound(forward_module_starts.begin(), forward_module_starts.end(), s.backward);
    while (f != forward_module_starts.end() && *f < s.optimizer) {
      // The pass's backward: the first backward range after its forward began.
      auto b = std::upper_bound(backward_starts.begin(), backward_starts.end(), *f);
      const TimeNs backward = b != backward_starts.end() && *b < s.optimizer ? *b : s.optimizer;
      s.later_passes.push_back({*f, backward});
      f = std::upper_bound(f, forward_module_starts.end(), backward);
    }
  }
}

std::optional<MemContext> memory_context_of_range(std::string_view n) {
  // Called for every CPU range an import writes; nearly all are operators ("aten::...") that no
  // prefix below starts like, so the first letter settles most of them.
  if (n.empty()) return std::nullopt;
  switch (n[0]) {
    case 'F': case 'f': case 'g': case 'n': case 'c': case 'O': case 's': break;
    default: return std::nullopt;
  }
  if (starts_with(n, "FSDP::all_gather_copy_out")) return MemContext::AllGatherCopyOut;
  // FSDP1's unshard as ShardScope's hooks name it: the all-gather fills the unsharded FlatParameter.
  if (starts_with(n, "FSDP::unshard")) return MemContext::AllGatherCopyOut;
  if (starts_with(n, "FSDP::all_gather") || starts_with(n, "fsdp::all_gather_copy_in")) return MemContext::AllGather;
  if (starts_with(n, "FSDP::post_backward_reduce")) return MemContext::ReduceScatter;
  if (starts_with(n, "FSDP::post_backward")) return MemContext::PostBackward;
  // FSDP1 (FullyShardedDataParallel): a unit's unsharded FlatParameter is the all-gather's own
  // output, allocated where the unit unshards (its pre-forward / pre-backward hook, or a prefetch
  // from another unit's); its post-backward hook reduce-scatters into the new sharded gradient.
  if (starts_with(n, "FullyShardedDataParallel.")) {
    const std::string_view hook = n.substr(25);
    if (hook == "_pre_forward" || hook == "_pre_backward_hook" || hook == "_pre_forward_prefetch" ||
        hook == "_pre_backward_prefetch" || hook == "_post_backward_prefetch")
      return MemContext::AllGatherCopyOut;
    if (hook == "_post_backward_hook") return MemContext::ReduceScatter;
    if (hook == "_post_backward_hook_reshard_only") return MemContext::PostBackward;
    return std::nullopt;
  }
  // The collectives themselves (gloo's worker threads, NCCL ranges, c10d ops).
  if (starts_with(n, "gloo:") || starts_with(n, "nccl:") || starts_with(n, "c10d::")) {
    if (contains(n, "all_gather") || contains(n, "allgather")) return MemContext::AllGather;
    if (contains(n, "reduce_scatter")) return MemContext::ReduceScatter;
  }
  if (starts_with(n, "Optimizer.step") || starts_with(n, "ss:opt:")) return MemContext::Optimizer;
  return std::nullopt;
}

std::optional<TensorFact> parse_tensor_fact(std::string_view name, TimeNs time) {
  constexpr std::string_view kPrefix = "ss:mem:";
  if (!starts_with(name, kPrefix)) return std::nullopt;
  const std::string_view rest = name.substr(kPrefix.size());
  const auto colon = rest.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  const auto category = memory_category_from_string(rest.substr(0, colon));
  std::string_view addr = rest.substr(colon + 1);
  std::string_view module;
  bool has_module = false;
  if (const auto second = addr.find(':'); second != std::string_view::npos) {
    module = addr.substr(second + 1);
    addr = addr.substr(0, second);
    has_module = true;
  }
  std::int64_t a = 0;
  auto [p, ec] = std::from_chars(addr.data(), addr.data() + addr.size(), a);
  if (!category || ec != std::errc() || p != addr.data() + addr.size()) return std::nullopt;
  return TensorFact{time, a, *category, std::string(module), has_module};
}

std::optional<LiveTensor> parse_live_tensor(std::string_view name, TimeNs time) {
  constexpr std::string_view kPrefix = "ss:live:";
  if (!starts_with(name, kPrefix)) return std::nullopt;
  // <category>:<address>:<bytes>[:<module>]: the bytes are taken out, the rest reads as a fact.
  const std::string_view rest = name.substr(kPrefix.size());
  const auto c1 = rest.find(':');
  const auto c2 = c1 == std::string_view::npos ? c1 : rest.find(':', c1 + 1);
  if (c2 == std::string_view::npos) return std::nullopt;
  const auto c3 = rest.find(':', c2 + 1);
  const std::string_view size = rest.substr(c2 + 1, c3 == std::string_view::npos ? std::string_view::npos : c3 - c2 - 1);
  std::int64_t bytes = 0;
  auto [p, ec] = std::from_chars(size.data(), size.data() + size.size(), bytes);
  if (ec != std::errc() || p != size.data() + size.size() || bytes <= 0) return std::nullopt;
  std::string fact = "ss:mem:" + std::string(rest.substr(0, c2));
  if (c3 != std::string_view::npos) fact += std::string(rest.substr(c3));
  auto f = parse_tensor_fact(fact, time);
  if (!f) return std::nullopt;
  return LiveTensor{std::move(*f), bytes};
}

std::optional<std::int64_t> parse_freed_tensor(std::string_view name) {
  constexpr std::string_view kPrefix = "ss:freed:";
  if (!starts_with(name, kPrefix)) return std::nullopt;
  const std::string_view addr = name.substr(kPrefix.size());
  std::int64_t a = 0;
  auto [p, ec] = std::from_chars(addr.data(), addr.data() + addr.size(), a);
  if (ec != std::errc() || p != addr.data() + addr.size()) return std::nullopt;
  return a;
}

std::vector<MemoryCategory> classify_memory(const std::vector<MemoryEventIn>& events, const std::vector<StepPhases>& steps,
                                            const std::vector<TensorFact>& facts, std::vector<int>* fact_of_event) {
  if (fact_of_event) fact_of_event->assign(events.size(), -1);
  std::vector<MemoryCategory> out(events.size(), MemoryCategory::Unknown);
  std::vector<std::size_t> order(events.size());
  std::iota(order.begin(), order.end(), 0);
  // Frees first at equal times: a block freed and reused in the same instant pairs correctly.
  // Events come in time order, or nearly (a trace's allocator events).
  stable_sort_runs(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (events[a].time != events[b].time) return events[a].time < events[b].time;
    return (events[a].bytes < 0) > (events[b].bytes < 0);
  });

  struct Allocation {
    std::size_t event = 0;
    std::size_t free_event = SIZE_MAX;
  };
  std::vector<Allocation> allocs;
  std::unordered_map<std::int64_t, std::size_t> open;  // address -> allocs index
  // Facts name the allocation live at their address at their time: sweep them in time order.
  std::vector<std::size_t> fact_order(facts.size());
  std::iota(fact_order.begin(), fact_order.end(), 0);
  std::stable_sort(fact_order.begin(), fact_order.end(), [&](std::size_t a, std::size_t b) { return facts[a].time < facts[b].time; });
  std::unordered_map<std::size_t, std::size_t> named;  // allocs index -> facts index
  std::size_t next_fact = 0;
  auto apply_facts_until = [&](TimeNs t) {
    for (; next_fact < fact_order.size() && facts[fact_order[next_fact]].time < t; ++next_fact) {
      const TensorFact& f = facts[fact_order[next_fact]];
      if (auto it = open.find(f.address); it != open.end()) named[it->second] = fact_order[next_fact];
    }
  };
  for (std::size_t i : order) {
    const MemoryEventIn& e = events[i];
    apply_facts_until(e.time);
    if (e.bytes > 0) {
      open[e.address] = allocs.size();
      allocs.push_back({i});
    } else if (e.bytes < 0) {
      if (auto it = open.find(e.address); it != open.end()) {
        allocs[it->second].free_event = i;
        open.erase(it);
      }
    }
  }
  apply_facts_until(INT64_MAX);

  for (std::size_t k = 0; k < allocs.size(); ++k) {
    const Allocation& a = allocs[k];
    const MemoryEventIn& e = events[a.event];
    const MemoryEventIn* f = a.free_event == SIZE_MAX ? nullptr : &events[a.free_event];
    const Placement at = place(steps, e.time);
    MemoryCategory c = MemoryCategory::Unknown;
    if (auto it = named.find(k); it != named.end()) {
      c = facts[it->second].category;
      if (fact_of_event) {
        (*fact_of_event)[a.event] = static_cast<int>(it->second);
        if (f) (*fact_of_event)[a.free_event] = static_cast<int>(it->second);
      }
    } else {
      switch (e.context) {
        case MemContext::AllGather: c = MemoryCategory::AllGatherBuffer; break;
        case MemContext::AllGatherCopyOut: c = MemoryCategory::UnshardedParameter; break;
        case MemContext::ReduceScatter: {
          // The reduce-scatter input dies inside backward, or (the last unit's, which FSDP2 keeps
          // until the next reduce-scatter wait) in the next step's post-backward; the output
          // becomes the sharded gradient, which the optimizer's zero_grad frees. A block gloo's
          // worker let go last is the collective's own (the input, or gloo's copy of it that it
          // all-reduces: c10d::_reduce_scatter_base_ clones the input on the training thread),
          // never the output, which the training thread keeps as the gradient. Where the importer
          // had put its free at the step's end, it was taken for a gradient and stood in a nested
          // unit's parent's backward (user_loop.py --nested, 1 recording in 8 beside a busy CPU).
          const bool dies_in_backward = f && at.step && f->time < at.step->optimizer;
          const bool freed_by_fsdp = f && (f->context == MemContext::ReduceScatter || f->context == MemContext::PostBackward ||
                                           f->context == MemContext::AllGather);
          const bool held_by_gloo = f && f->off_thread;
          c = (dies_in_backward || freed_by_fsdp || held_by_gloo) ? MemoryCategory::ReduceScatterBuffer : MemoryCategory::Gradient;
          break;
        }
        case MemContext::PostBackward: c = MemoryCategory::Temporary; break;
        case MemContext::Recompute: c = MemoryCategory::Activation; break;
        case MemContext::Optimizer:
        case MemContext::Forward:
        case MemContext::Backward:
        case MemContext::None: {
          const Phase p = e.context == MemContext::Optimizer ? Phase::Optimizer : at.phase;
          if (!at.step && p != Phase::Optimizer) break;  // outside every step: unknown
          const TimeNs step_end = at.step ? at.step->end : INT64_MAX;
          if (p == Phase::Forward) {
            c = (f && f->time < at.forward_end) ? MemoryCategory::Temporary : MemoryCategory::Activation;
          } else if (p == Phase::Backward) {
            const bool freed_by_fsdp =
                f && (f->context == MemContext::PostBackward || f->context == MemContext::ReduceScatter);
            const bool outlives_backward = !f || f->time >= at.step->optimizer;
            c = (freed_by_fsdp || outlives_backward) ? MemoryCategory::Gradient : MemoryCategory::Temporary;
          } else if (p == Phase::Optimizer) {
            c = (f && f->time < step_end) ? MemoryCategory::Temporary : MemoryCategory::OptimizerState;
          }
          break;
        }
      }
    }
    out[a.event] = c;
    if (f) out[a.free_event] = c;
  }
  return out;
}

}  // namespace ss
