#include "plugins/builtin/annotations/sequences.h"

#include <algorithm>
#include <string>
#include <unordered_map>

namespace ss::analysis {

namespace {

struct Acc {
  Sequence seq;
  std::int64_t last_stream = INT64_MIN;
  std::size_t last_end = 0;  // index after the last counted occurrence on last_stream
};

// True when names has a period p < size (names[i] == names[i + p] for every i).
bool periodic(const std::vector<std::int64_t>& n) {
  for (std::size_t p = 1; p < n.size(); ++p) {
    bool ok = true;
    for (std::size_t i = 0; i + p < n.size() && ok; ++i) ok = n[i] == n[i + p];
    if (ok) return true;
  }
  return false;
}

}  // namespace

std::vector<Sequence> frequent_sequences(const std::vector<StreamItems>& streams) {
  std::unordered_map<std::string, Acc> acc;
  std::string key;
  for (std::size_t si = 0; si < streams.size(); ++si) {
    const auto& s = streams[si];
    const auto& v = s.items;
    for (std::size_t n = kMinLength; n <= kMaxLength; ++n) {
      for (std::size_t i = 0; i + n <= v.size(); ++i) {
        key.assign(reinterpret_cast<const char*>(&n), sizeof n);
        for (std::size_t j = i; j < i + n; ++j) key.append(reinterpret_cast<const char*>(&v[j].name), sizeof v[j].name);
        Acc& a = acc[key];
        if (a.last_stream != s.stream) {
          a.last_stream = s.stream;
          a.last_end = 0;
          ++a.seq.streams;
        }
        if (i < a.last_end) continue;  // overlaps the previous counted occurrence
        a.last_end = i + n;
        if (a.seq.occurrences == 0) {
          for (std::size_t j = i; j < i + n; ++j) a.seq.names.push_back(v[j].name);
          a.seq.first_start = v[i].start;
          a.seq.first_end = v[i + n - 1].end;
          a.seq.first_rank = s.rank;
        }
        ++a.seq.occurrences;
        std::int64_t end = v[i].end;
        for (std::size_t j = i; j < i + n; ++j) a.seq.gpu_ns += v[j].end - v[j].start, end = std::max(end, v[j].end);
        a.seq.span_ns += end - v[i].start;
        a.seq.at.push_back({static_cast<std::uint32_t>(si), static_cast<std::uint32_t>(i)});
      }
    }
  }
  std::vector<Sequence*> cand;
  for (auto& [k, a] : acc)
    if (a.seq.occurrences >= 2 && !(a.seq.names.size() > kMinLength && periodic(a.seq.names))) cand.push_back(&a.seq);
  std::sort(cand.begin(), cand.end(), [](const Sequence* a, const Sequence* b) {
    if (a->gpu_ns != b->gpu_ns) return a->gpu_ns > b->gpu_ns;
    if (a->occurrences != b->occurrences) return a->occurrences > b->occurrences;
    if (a->names.size() != b->names.size()) return a->names.size() < b->names.size();
    return a->names < b->names;
  });
  std::vector<std::vector<bool>> covered(streams.size());
  for (std::size_t si = 0; si < streams.size(); ++si) covered[si].assign(streams[si].items.size(), false);
  std::vector<Sequence> out;
  for (const Sequence* c : cand) {
    const std::size_t n = c->names.size();
    std::size_t already = 0;
    for (const auto& [si, i] : c->at)
      for (std::size_t j = i; j < i + n; ++j) already += covered[si][j];
    if (2 * already >= n * c->at.size()) continue;
    for (const auto& [si, i] : c->at)
      for (std::size_t j = i; j < i + n; ++j) covered[si][j] = true;
    out.push_back(*c);
    // Marks only for listed sequences (one per occurrence for every candidate would cost memory).
    for (const auto& [si, i] : c->at) {
      const auto& v = streams[si].items;
      std::int64_t end = v[i].end;
      for (std::size_t j = i; j < i + n; ++j) end = std::max(end, v[j].end);
      out.back().marks.push_back({v[i].start, end, streams[si].rank});
    }
    if (out.size() == kMaxSequences) break;
  }
  return out;
}

}  // namespace ss::analysis
