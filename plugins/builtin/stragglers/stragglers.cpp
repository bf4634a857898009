// Stragglers across ranks. Collectives are matched across ranks by (process group, sequence
// number): one NCCL collective seen from every participating rank. A collective cannot finish
// before its last participant arrives, so for each match the rank whose kernel started last is
// the straggler and lag = latest start - earliest start is how long the earliest rank waited.
// Needs a common clock across ranks (profiles store one) and sequence numbers (collector, nsys
// NCCL payloads, Kineto "Collective name"/seq when present).
#include <algorithm>
#include <cstdio>
#include <map>

#include "plugins/api/plugin_sdk.h"
#include "plugins/builtin/common/profile_access.h"
#include "storage/units.h"

namespace {

using namespace ss::analysis;

struct Match {
  std::int64_t pg = -1, seq = -1;
  std::uint8_t type = 0;
  int ranks = 0;
  int first_rank = -1, last_rank = -1;
  std::int64_t first_start = INT64_MAX, last_start = INT64_MIN, last_end = 0;
  std::int64_t lag() const { return last_start - first_start; }
};

void run(const ss::plugin::Host& host) {
  const std::int64_t lo = host.from(), hi = host.to();
  std::map<std::pair<std::int64_t, std::int64_t>, Match> matches;
  for (const auto& c : host.collectives()) {
    if (c.sequence < 0 || !host.rank_selected(c.rank) || c.start < lo || c.start > hi) continue;
    Match& m = matches[{c.process_group, c.sequence}];
    m.pg = c.process_group;
    m.seq = c.sequence;
    m.type = c.type;
    ++m.ranks;
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
  for (const auto& [key, m] : matches) {
    if (m.ranks < 2) continue;
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
    host.finding(SS_SEVERITY_INFO, "no collective is matched across ranks (needs sequence numbers and two or more ranks)");
    return;
  }
  int worst_rank = -1;
  std::int64_t worst_lag = -1;
  for (const auto& [rank, r] : per_rank)
    if (r.lag > worst_lag) worst_lag = r.lag, worst_rank = rank;
  if (worst_rank >= 0) {
    const auto& r = per_rank[worst_rank];
    std::snprintf(msg, sizeof msg, "rank %d arrives last at %lld of %lld matched collectives, %s of waiting in total",
                  worst_rank, static_cast<long long>(r.last), static_cast<long long>(matched), ss::format_duration_ns(r.lag).c_str());
    host.finding(SS_SEVERITY_WARNING, msg, 1, 0, worst_rank);
  }
  const Match& w = *v.front();
  if (w.lag() > 0) {
    std::snprintf(msg, sizeof msg, "largest lag: %s #%lld, rank %d arrives %s after rank %d",
                  collective_type_name(w.type), static_cast<long long>(w.seq), w.last_rank, ss::format_duration_ns(w.lag()).c_str(),
                  w.first_rank);
    host.finding(SS_SEVERITY_INFO, msg, w.first_start, w.last_end, w.last_rank);
    host.marker(w.first_start, w.last_start, w.last_rank, "straggler wait");
  }
}

}  // namespace

SS_DEFINE_PLUGIN("stragglers", "Stragglers across ranks for matched collectives",
                 "Matches collectives across ranks by process group and sequence number and reports the rank that "
                 "arrives last and by how much.",
                 &run)
