// Memcpy / memset bandwidth per rank, direction and kind (docs/analyses.md, "copy-bandwidth").
// Copies are the memcpy and memset work items (kernel categories 2 and 3) that start in the
// window on the selected ranks; the direction comes from the name, in either importer's
// spelling ("Memcpy HtoD (Pageable -> Device)" from Kineto, "Memcpy Host-to-Device" from nsys).
// A copy's achieved bandwidth is bytes / duration (1 byte/ns = 1 GB/s); a kind's bandwidth is
// its total bytes / its total duration. Copies without a size or with zero duration are counted
// but left out of every bandwidth. Peaks come from gpu_peaks.h; the ceiling of each kind:
//   HtoD, DtoH: the PCIe link, per direction;  PtoP: NVLink, per direction;
//   DtoD: half the memory bandwidth (each byte is read and written);  memset: the memory
//   bandwidth (write only);  HtoH and unrecognised names: none.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "plugins/api/plugin_sdk.h"
#include "plugins/builtin/common/stats.h"
#include "plugins/builtin/copy_bandwidth/gpu_peaks.h"
#include "storage/value_bounds.h"

namespace {

using namespace ss::analysis;

struct Copy {
  std::int64_t start = 0, duration = 0, bytes = 0;
  std::string name;
  std::string kind;
  // Sizes beyond 2^50 (storage/value_bounds.h) are not real copies: unsized, not summed.
  bool sized() const { return bytes > 0 && bytes <= ss::kMaxAbsBytes && duration > 0; }
  double gbps() const { return static_cast<double>(bytes) / static_cast<double>(duration); }
};

std::string kind_of(std::string_view name, std::int64_t category) {
  if (category == SS_KERNEL_MEMSET || contains_ci(name, "memset")) return "memset";
  if (contains_ci(name, "HtoD") || contains_ci(name, "Host-to-Device")) return "HtoD";
  if (contains_ci(name, "DtoH") || contains_ci(name, "Device-to-Host")) return "DtoH";
  if (contains_ci(name, "PtoP") || contains_ci(name, "Peer-to-Peer")) return "PtoP";
  if (contains_ci(name, "DtoD") || contains_ci(name, "Device-to-Device")) return "DtoD";
  if (contains_ci(name, "HtoH") || contains_ci(name, "Host-to-Host")) return "HtoH";
  return "other";
}

// The ceiling of a kind on a GPU, GB/s; 0 when there is none.
double peak_of(const GpuPeaks* g, const std::string& kind, const char** path) {
  *path = "";
  if (!g) return 0;
  if (kind == "HtoD" || kind == "DtoH") return *path = "PCIe", g->pcie;
  if (kind == "PtoP") return *path = "NVLink", g->nvlink;
  if (kind == "DtoD") return *path = "HBM/2", g->hbm / 2;
  if (kind == "memset") return *path = "HBM", g->hbm;
  return 0;
}

struct Group {
  std::int64_t copies = 0, unsized = 0, bytes = 0, busy = 0;
  std::vector<double> rates;
};

void add(Group& g, const Copy& c) {
  ++g.copies;
  // The load bounds the durations; the bytes come from SQL: their sum stays within 2^62.
  if (!c.sized() || !ss::add_to_total(g.bytes, c.bytes)) {
    ++g.unsized;
    return;
  }
  g.busy += c.duration;
  g.rates.push_back(c.gbps());
}

// Aggregate bandwidth over time: each sized copy adds bytes/duration over [start, end).
void counter(const ss::plugin::Host& host, int rank, const std::vector<Copy>& copies) {
  std::vector<std::pair<std::int64_t, double>> ev;
  for (const auto& c : copies)
    if (c.sized()) ev.push_back({c.start, c.gbps()}), ev.push_back({c.start + c.duration, -c.gbps()});
  if (ev.empty()) return;
  std::sort(ev.begin(), ev.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  host.counter_track("copy bandwidth", rank, "GB/s");
  long double level = 0;
  int active = 0;
  for (std::size_t i = 0; i < ev.size();) {
    const std::int64_t t = ev[i].first;
    for (; i < ev.size() && ev[i].first == t; ++i) level += ev[i].second, active += ev[i].second > 0 ? 1 : -1;
    if (active == 0) level = 0;  // no rounding residue once nothing runs
    host.counter_point(t, static_cast<double>(level));
  }
}

void run(const ss::plugin::Host& host) {
  const std::int64_t lo = host.from(), hi = host.to();
  std::map<int, std::vector<Copy>> by_rank;
  host.query(
      "SELECT k.rank, k.start_ns, k.duration_ns, k.category, n.value, COALESCE(k.bytes, 0)"
      " FROM kernels k JOIN strings n ON n.id = k.name_id WHERE k.category IN (2, 3)"
      " AND k.start_ns >= " +
          std::to_string(lo) + " AND k.start_ns <= " + std::to_string(hi) + " ORDER BY k.rank, k.start_ns, k.id",
      [&](std::span<const ss_value> v) {
        const int rank = static_cast<int>(v[0].i);
        if (!host.rank_selected(rank)) return;
        Copy c;
        c.start = v[1].i;
        c.duration = v[2].i;
        c.name = v[4].s ? v[4].s : "";
        c.kind = kind_of(c.name, v[3].i);
        c.bytes = v[5].i;
        by_rank[rank].push_back(std::move(c));
      });
  if (by_rank.empty()) {
    host.finding(SS_SEVERITY_INFO, "no memcpy or memset in the selection");
    return;
  }
  std::map<int, ss_rank_info> info;
  for (const auto& r : host.ranks()) info[r.rank] = r;

  host.table("per_kind", {"rank", "kind", "copies", "unsized", "bytes", "busy_ns", "bandwidth_gbps", "min_gbps",
                          "p50_gbps", "p90_gbps", "max_gbps", "peak_path", "peak_gbps", "achieved_pct_of_peak"});
  char msg[360];
  for (const auto& [rank, copies] : by_rank) {
    const auto it = info.find(rank);
    const std::string gpu = it != info.end() && it->second.gpu_name ? it->second.gpu_name : "";
    const GpuPeaks* peaks = gpu_peaks(gpu, it != info.end() ? it->second.gpu_memory_bytes : 0);
    std::map<std::string, Group> kinds;
    for (const auto& c : copies) add(kinds[c.kind], c);
    std::string busiest;
    for (auto& [kind, g] : kinds) {
      std::sort(g.rates.begin(), g.rates.end());
      const char* path = "";
      const double peak = peak_of(peaks, kind, &path);
      const bool any = g.busy > 0;
      const double bw = any ? static_cast<double>(g.bytes) / static_cast<double>(g.busy) : 0.0;
      auto opt = [&](double x, bool have) { return have ? ss::plugin::Cell(x) : ss::plugin::Cell(); };
      host.row({rank, kind, g.copies, g.unsized, g.bytes, g.busy, opt(bw, any), opt(any ? g.rates.front() : 0.0, any),
                opt(percentile_sorted(g.rates, 50), any), opt(percentile_sorted(g.rates, 90), any),
                opt(any ? g.rates.back() : 0.0, any), path, opt(peak, peak > 0),
                opt(peak > 0 ? 100.0 * bw / peak : 0.0, peak > 0 && any)});
      if (busiest.empty() || g.busy > kinds[busiest].busy) busiest = kind;
    }
    if (!peaks)
      host.finding(SS_SEVERITY_INFO,
                   gpu.empty() ? std::string("the profile records no GPU name, so copy bandwidth has no "
                                             "percentage of peak")
                               : "GPU '" + gpu +
                                     "' is not in the peak-bandwidth table, so copy bandwidth has no "
                                     "percentage of peak",
                   1, 0, rank);
    const Group& b = kinds[busiest];
    if (b.busy > 0) {
      const char* path = "";
      const double peak = peak_of(peaks, busiest, &path);
      const double bw = static_cast<double>(b.bytes) / static_cast<double>(b.busy);
      std::snprintf(msg, sizeof msg, "most copy time is %s, %lld copies at %.2f GB/s", busiest.c_str(),
                    static_cast<long long>(b.copies), bw);
      std::string m = msg;
      if (peak > 0) {
        std::snprintf(msg, sizeof msg, " (%.1f%% of the %s peak %.1f GB/s of %s)", 100.0 * bw / peak, path, peak,
                      peaks->name);
        m += msg;
      }
      host.finding(SS_SEVERITY_INFO, m, 1, 0, rank);
    }
    counter(host, rank, copies);
  }

  // Per name: "Pageable" and "Pinned" host copies differ by an order of magnitude.
  host.table("per_name", {"rank", "name", "kind", "copies", "bytes", "busy_ns", "bandwidth_gbps"});
  for (const auto& [rank, copies] : by_rank) {
    std::map<std::string, Group> names;
    std::map<std::string, std::string> kind_of_name;
    for (const auto& c : copies) add(names[c.name], c), kind_of_name[c.name] = c.kind;
    for (const auto& [name, g] : names)
      host.row({rank, name, kind_of_name[name], g.copies, g.bytes, g.busy,
                g.busy > 0 ? ss::plugin::Cell(static_cast<double>(g.bytes) / static_cast<double>(g.busy))
                           : ss::plugin::Cell()});
  }
}

}  // namespace

SS_DEFINE_PLUGIN("copy-bandwidth", "Memcpy and memset bandwidth per direction, against the GPU's peak",
                 "Per rank and kind (HtoD, DtoH, DtoD, PtoP, memset): copies, bytes, achieved bandwidth (total and "
                 "per-copy distribution) and its percentage of the GPU's peak PCIe / NVLink / memory bandwidth; a "
                 "GB/s counter track per rank.",
                 &run)
