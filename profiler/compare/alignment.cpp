#include "profiler/compare/alignment.h"

#include <algorithm>
#include <limits>
#include <set>

#include "profiler/compare/compare_error.h"

namespace ss::compare {
namespace {

std::string describe_path(const Profile& p, char side) {
  return std::string("profile ") + side + (p.path.empty() ? std::string() : " (" + p.path + ")");
}

const RankModel& require_rank(const Profile& p, int rank, char side) {
  if (const RankModel* r = p.rank(rank)) return *r;
  std::string have;
  for (const auto& r : p.ranks) have += (have.empty() ? "" : ", ") + std::to_string(r.info.rank);
  throw CompareError(CompareErrorKind::NoSuchRank, describe_path(p, side) + " has no rank " + std::to_string(rank) +
                                                       " (its ranks: " + (have.empty() ? "none" : have) + ")");
}

std::set<std::int64_t> step_numbers(const RankModel& r) {
  std::set<std::int64_t> s;
  for (const auto& st : r.steps) s.insert(st.number);
  return s;
}

Window step_window(const Profile& p, const RankModel& r, std::int64_t number, char side) {
  for (const auto& st : r.steps)
    if (st.number == number) return Window{r.info.rank, st.start, st.end, number};
  std::string have;
  int listed = 0;
  for (std::int64_t n : step_numbers(r)) {
    if (++listed > 20) {
      have += ", ...";
      break;
    }
    have += (have.empty() ? "" : ", ") + std::to_string(n);
  }
  throw CompareError(CompareErrorKind::NoSuchStep,
                     describe_path(p, side) + " has no step " + std::to_string(number) + " on rank " +
                         std::to_string(r.info.rank) + " (its steps: " + (have.empty() ? "none" : have) + ")");
}

Window first_step_or_span(const Profile& p, const RankModel& r) {
  const auto numbers = step_numbers(r);
  if (numbers.empty()) return whole_span(p, r.info.rank);
  return step_window(p, r, *numbers.begin(), '?');
}

std::string side_label(const Window& w) { return w.step ? "step " + std::to_string(*w.step) : "whole span"; }

}  // namespace

Window whole_span(const Profile& p, int rank) {
  const RankModel* r = p.rank(rank);
  if (!r) throw CompareError(CompareErrorKind::NoSuchRank, "no rank " + std::to_string(rank));
  TimeNs lo = std::numeric_limits<TimeNs>::max(), hi = std::numeric_limits<TimeNs>::min();
  auto widen = [&](TimeNs s, TimeNs e) {
    lo = std::min(lo, s);
    hi = std::max(hi, e);
  };
  for (std::int32_t t : r->stream_tracks)
    for (const auto& k : p.stream_tracks[static_cast<std::size_t>(t)].events) widen(k.start, k.end);
  if (lo > hi)
    for (std::int32_t t : r->range_tracks)
      for (const auto& e : p.range_tracks[static_cast<std::size_t>(t)].events) widen(e.start, e.end);
  if (lo > hi)
    for (const auto& c : p.collectives)
      if (c.rank == rank) widen(c.start, c.end);
  if (lo > hi)
    throw CompareError(CompareErrorKind::EmptyRank, std::string("profile") + (p.path.empty() ? "" : " " + p.path) +
                                                        " has no events on rank " + std::to_string(rank));
  return Window{rank, lo, hi, std::nullopt};
}

ResolvedAlignment resolve_alignment(const Profile& a, const Profile& b, const Alignment& al) {
  const RankModel& ra = require_rank(a, al.rank_a, 'A');
  const RankModel& rb = require_rank(b, al.rank_b, 'B');
  ResolvedAlignment out;
  std::optional<std::int64_t> sa = al.step_a, sb = al.step_b;
  if (sa && !sb) sb = sa;
  if (sb && !sa) sa = sb;
  if (sa) {
    out.a = step_window(a, ra, *sa, 'A');
    out.b = step_window(b, rb, *sb, 'B');
    out.description = *sa == *sb ? "step " + std::to_string(*sa) + " on both sides"
                                 : "step " + std::to_string(*sa) + " (A) vs step " + std::to_string(*sb) + " (B)";
  } else {
    const auto na = step_numbers(ra), nb = step_numbers(rb);
    std::optional<std::int64_t> common;
    for (std::int64_t n : na)
      if (nb.count(n)) {
        common = n;
        break;
      }
    if (common) {
      out.a = step_window(a, ra, *common, 'A');
      out.b = step_window(b, rb, *common, 'B');
      out.description = "step " + std::to_string(*common) + " on both sides (first common step)";
    } else {
      out.a = first_step_or_span(a, ra);
      out.b = first_step_or_span(b, rb);
      out.description = side_label(out.a) + " (A) vs " + side_label(out.b) + " (B): no common step number";
    }
  }
  if (al.rank_a != al.rank_b)
    out.description += ", rank " + std::to_string(al.rank_a) + " (A) vs rank " + std::to_string(al.rank_b) + " (B)";
  else
    out.description += ", rank " + std::to_string(al.rank_a);
  return out;
}

}  // namespace ss::compare
