// Stragglers across ranks. Collectives are matched across ranks by (process group, sequence
// number): one NCCL collective seen from every participating rank. A collective cannot finish
// before its last participant arrives, so for each match the rank whose kernel started last is
// the straggler and lag = latest start - earliest start is how long the earliest rank waited.
// Needs a common clock across ranks (profiles store one) and sequence numbers (collector, nsys
// NCCL payloads, Kineto "Collective name"/seq when present).
// A (group, sequence) whose participants are not one operation (same_operation) is no match.
// Two kinds of match are counted apart, not as stragglers: collectives outside every recorded step
// (a model's initialisation, a checkpoint load: one rank loading slower is not a rank slowing the
// steps down), and point-to-point transfers (a pipeline's receive is posted before the peer stage
// has computed what it sends; that wait is the schedule's bubble, not a late rank).
#include <algorithm>
#include <cstdio>
#include <map>

#include "plugins/api/plugin_sdk.h"
#include "plugins/builtin/common/profile_access.h"
#include "plugins/builtin/common/rank_steps.h"
#include "storage/units.h"

namespace {

using namespace ss::analysis;

struct Match {
  std::int64_t pg = -1, seq = -1;
  std::uint8_t type = 0;
  int ranks = 0;
  int first_rank = -1, last_rank = -1;
  bool in_step = false;  // some participant started it inside one of its rank's steps
  std::int64_t first_bytes = 0;  // the first participant's, which the others must match
  bool one_operation = true;     // every participant is the first's operation (same_operation)
  std::int64_t first_start = INT64_MAX, last_start = INT64_MIN, last_end = 0;
  std::int64_t lag() const { return last_start - first_start; }
};

// Matches left out of the straggler counts, by reason.
struct LeftOut {
  std::int64_t count = 0, total_lag = 0;
  const Match* worst = nullptr;
  void add(const Match& m) {
    ++count;
    total_lag += m.lag();
    if (!worst || m.lag() > worst->lag()) worst = &m;
  }
};

void run(const ss::plugin::Host& host) {
  const std::int64_t lo = host.from(), hi = host.to();
  const RankSteps steps(host);
  std::map<std::pair<std::int64_t, std::int64_t>, Match> matches;
  for (const auto& c : host.collectives()) {
    if (c.sequence < 0 || !host.rank_selected(c.rank) || c.start < lo || c.start > hi) continue;
    Match& m = matches[{c.process_group, c.sequence}];
    if (m.ranks == 0) {
      m.pg = c.process_group;
      m.seq = c.sequence;
      m.type = c.type;
      m.first_bytes = c.bytes;
    } else {
      m.one_operation = m.one_operation && same_operation(m.type, m.first_bytes, c.type, c.bytes);
    }
    ++m.ranks;
    m.in_step = m.in_step || steps.in_step(c.rank, c.start);
    if (c.start < m.first_start || (c.start == m.first_start && c.rank < m.first_rank))
      m.first_start = c.start, m.first_rank = c.rank;
    if (c.start > m.last_start || (c.start == m.last_start && c.rank < m.last_rank))
      m.last_start = c.start, m.last_rank = c.rank, m.last_end = c.end;
  }
  std::vector<const Match*> v;
  struct PerRank {
    std::int64_t last = 0, lag = 0, worst = 0;
  };
  std::map<int, PerRank> per_rank;
  std::int64_t matched = 0;
  LeftOut outside_steps, p2p, misnumbered;
  for (const auto& [key, m] : matches) {
    if (m.ranks < 2) continue;
    if (!m.one_operation) {
      misnumbered.add(m);
      continue;
    }
    if (is_point_to_point(m.type)) {
      p2p.add(m);
      continue;
    }
    if (!m.in_step) {
      outside_steps.add(m);
      continue;
    }
    ++matched;
    v.push_back(&m);
    if (m.lag() <= 0) continue;
    PerRank& r = per_rank[m.last_rank];
    ++r.last;
    r.lag += m.lag();
    r.worst = std::max(r.worst, m.lag());
  }
  host.table("per_rank", {"rank", "times_last", "total_lag_ns", "mean_lag_ns", "worst_lag_ns"});
  for (const auto& [rank, r] : per_rank) host.row({rank, r.last, r.lag, r.last ? r.lag / r.last : 0, r.worst});

  std::sort(v.begin(), v.end(), [](const Match* a, const Match* b) {
    return a->lag() != b->lag() ? a->lag() > b->lag() : std::make_pair(a->pg, a->seq) < std::make_pair(b->pg, b->seq);
  });
  host.table("collectives", {"process_group", "sequence", "type", "ranks", "first_rank", "last_rank", "lag_ns",
                             "first_start_ns", "last_start_ns"});
  for (std::size_t i = 0; i < v.size() && i < 200; ++i) {
    const Match& m = *v[i];
    host.row({m.pg, m.seq, collective_type_name(m.type), m.ranks, m.first_rank, m.last_rank, m.lag(), m.first_start,
              m.last_start});
  }
  char msg[300];
  if (matched == 0) {
    host.finding(SS_SEVERITY_INFO,
                 outside_steps.count + p2p.count > 0
                     ? "no collective inside the recorded steps is matched across ranks"
                     : "no collective is matched across ranks (needs sequence numbers and two or more ranks)");
  } else {
    int worst_rank = -1;
    std::int64_t worst_lag = -1;
    for (const auto& [rank, r] : per_rank)
      if (r.lag > worst_lag) worst_lag = r.lag, worst_rank = rank;
    if (worst_rank >= 0) {
      const auto& r = per_rank[worst_rank];
      std::snprintf(msg, sizeof msg, "rank %d arrives last at %lld of %lld matched collectives, %s of waiting in total",
                    worst_rank, static_cast<long long>(r.last), static_cast<long long>(matched),
                    ss::format_duration_ns(r.lag).c_str());
      host.finding(SS_SEVERITY_WARNING, msg, 1, 0, worst_rank);
    }
    const Match& w = *v.front();
    if (w.lag() > 0) {
      std::snprintf(msg, sizeof msg, "largest lag: %s #%lld, rank %d arrives %s after rank %d",
                    collective_type_name(w.type), static_cast<long long>(w.seq), w.last_rank,
                    ss::format_duration_ns(w.lag()).c_str(), w.first_rank);
      host.finding(SS_SEVERITY_INFO, msg, w.first_start, w.last_end, w.last_rank);
      host.marker(w.first_start, w.last_start, w.last_rank, "straggler wait");
    }
  }
  if (outside_steps.count > 0) {
    const Match& w = *outside_steps.worst;
    std::snprintf(msg, sizeof msg,
                  "%lld matched collectives outside every recorded step (initialisation, checkpointing) are left out; "
                  "the largest lag among them: %s #%lld, rank %d arrives %s after rank %d",
                  static_cast<long long>(outside_steps.count), collective_type_name(w.type),
                  static_cast<long long>(w.seq), w.last_rank, ss::format_duration_ns(w.lag()).c_str(), w.first_rank);
    host.finding(SS_SEVERITY_INFO, msg, w.first_start, w.last_end, w.last_rank);
  }
  if (misnumbered.count > 0) {
    std::snprintf(msg, sizeof msg,
                  "%lld sequence numbers join different operations across ranks (a group that numbers its sends and "
                  "receives with its collectives in each rank's own order, as gloo does): not matched, left out",
                  static_cast<long long>(misnumbered.count));
    host.finding(SS_SEVERITY_INFO, msg);
  }
  if (p2p.count > 0) {
    std::snprintf(msg, sizeof msg,
                  "%lld point-to-point transfers (a pipeline's sends and receives) are left out: a receive waits for "
                  "the peer stage by the schedule's design (%s of such waiting in total)",
                  static_cast<long long>(p2p.count), ss::format_duration_ns(p2p.total_lag).c_str());
    host.finding(SS_SEVERITY_INFO, msg);
  }
}

}  // namespace

SS_DEFINE_PLUGIN("stragglers", "Stragglers across ranks for matched collectives",
                 "Matches collectives across ranks by process group and sequence number and reports the rank that "
                 "arrives last and by how much, inside the recorded steps; collectives outside every step and a "
                 "pipeline's sends and receives are counted apart.",
                 &run)
