#include "profiler/sim/cluster_model.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

#include "profiler/sim/json_input.h"
#include "storage/errors.h"
#include "storage/json_writer.h"

namespace ss::sim {

const char* coll_key(Coll c) {
  switch (c) {
    case Coll::AllGather: return "all_gather";
    case Coll::ReduceScatter: return "reduce_scatter";
    case Coll::AllReduce: return "all_reduce";
  }
  return "?";
}

ClusterModel::ClusterModel() {
  // 8x H100 SXM, NVSwitch + NDR InfiniBand, NCCL ring / Simple protocol (research/simulator.md §3):
  // AG 350 GB/s, RS 360 GB/s, AR 476 GB/s (NVLS) busBW in one node (nccl #1281, nccl-tests #290);
  // base latency 8.4 us + 3.4 us per NVLink ring step + 14 us per network step (NCCL tuning.cc);
  // flat-ring AG/RS across nodes ~200 GB/s, AR ~340 GB/s busBW at 256 GPUs (nccl #1218);
  // 46-48 GB/s per NDR NIC (nccl-tests #290).
  coll[0] = {{8.4, 3.4, 350}, {0, 14.0, 200}, 47};
  coll[1] = {{8.4, 3.4, 360}, {0, 14.0, 200}, 47};
  coll[2] = {{8.4, 3.4, 476}, {0, 14.0, 340}, 47};
}

ClusterModel default_cluster() { return ClusterModel(); }


TimeNs ClusterModel::p2p_ns(std::int64_t bytes, bool cross_node) const {
  if (bytes <= 0) return 0;
  const CollParams& p = params(Coll::AllGather);
  const double bw = cross_node ? p.nic_GBps : p.intra.busbw_GBps;
  const double alpha_us = p.intra.base_latency_us + (cross_node ? p.inter.hop_latency_us : p.intra.hop_latency_us);
  return static_cast<TimeNs>(std::llround(alpha_us * 1000.0 + double(bytes) / bw));
}

namespace {

double bus_factor(Coll c, int n) {
  const double f = double(n - 1) / double(n);
  return c == Coll::AllReduce ? 2 * f : f;
}

// One flat ring over n ranks spanning `nodes` nodes.
double ring_ns(const CollParams& p, Coll c, double bytes, int n, int nodes) {
  if (n <= 1) return 0;
  const int mult = c == Coll::AllReduce ? 2 : 1;
  const double steps = double(mult) * (n - 1);
  const double inter_steps = nodes > 1 ? double(mult) * (nodes - 1) : 0;
  const double alpha_us = p.intra.base_latency_us + (steps - inter_steps) * p.intra.hop_latency_us +
                          inter_steps * p.inter.hop_latency_us;
  double bw = p.intra.busbw_GBps;
  if (nodes > 1) bw = std::min(bw, p.inter.busbw_GBps);
  return alpha_us * 1000.0 + bytes * bus_factor(c, n) / bw;
}

}  // namespace

TimeNs ClusterModel::collective_ns(Coll c, std::int64_t bytes, int n, int per_node) const {
  return time_ns(c, bytes, n, per_node, hierarchical);
}

TimeNs ClusterModel::all_to_all_ns(std::int64_t bytes, int n, int per_node) const {
  return time_ns(Coll::AllGather, bytes, n, per_node, false);  // no two-level form: every rank pair exchanges
}

TimeNs ClusterModel::time_ns(Coll c, std::int64_t bytes, int n, int per_node, bool two_level) const {
  if (n <= 1 || bytes <= 0) return 0;
  const CollParams& p = params(c);
  const int g = std::max(1, std::min(n, per_node > 0 ? per_node : gpus_per_node));
  const int nodes = (n + g - 1) / g;
  double t;
  if (nodes <= 1 || !two_level) {
    t = ring_ns(p, c, double(bytes), n, nodes);
  } else {
    // Two levels: every rail (same local rank on each node) moves S/g across nodes at NIC speed,
    // and each node moves S over NVLink. All-reduce = intra RS + inter AR + intra AG.
    const double s = double(bytes);
    CollParams rail = p;
    rail.intra = {p.intra.base_latency_us, p.inter.hop_latency_us, p.nic_GBps};
    if (c == Coll::AllReduce) {
      t = 2 * ring_ns(p, Coll::ReduceScatter, s, g, 1) + ring_ns(rail, Coll::AllReduce, s / g, nodes, 1);
    } else {
      t = ring_ns(rail, c, s / g, nodes, 1) + ring_ns(p, c, s, g, 1);
    }
  }
  return static_cast<TimeNs>(std::llround(t));
}

namespace {

void read_link(simdjson::dom::object o, const std::string& where, const std::string& path, LinkParams& l) {
  if (auto v = get_number(o, "base_latency_us", where, path)) l.base_latency_us = *v;
  if (auto v = get_number(o, "hop_latency_us", where, path)) l.hop_latency_us = *v;
  if (auto v = get_number(o, "busbw_GBps", where, path)) l.busbw_GBps = *v;
  if (l.base_latency_us < 0 || l.hop_latency_us < 0) json_fail(where, path, "non-negative latencies");
  if (!(l.busbw_GBps > 0)) json_fail(where, path + ".busbw_GBps", "a positive bandwidth in GB/s");
}

}  // namespace

ClusterModel parse_cluster_json(const std::string& json, const std::string& where) {
  simdjson::dom::parser parser;
  auto root = as_object(parse_json(parser, json, where), where, "");
  ClusterModel c;
  if (auto v = get_string(root, "name", where, "")) c.name = *v;
  if (auto v = get_string(root, "device", where, "")) c.device = *v, c.device_given = true;
  if (auto v = get_int(root, "world_size", where, "")) {
    if (*v < 1 || *v > 10'000'000) json_fail(where, "world_size", "an integer in [1, 10000000]");
    c.world_size = static_cast<int>(*v);
    c.world_size_given = true;
  }
  if (auto v = get_int(root, "gpus_per_node", where, "")) {
    if (*v < 1 || *v > 1024) json_fail(where, "gpus_per_node", "an integer in [1, 1024]");
    c.gpus_per_node = static_cast<int>(*v);
    c.gpus_per_node_given = true;
  }
  if (auto v = get_bool(root, "hierarchical", where, "")) c.hierarchical = *v;
  if (auto v = get_bool(root, "comm_serialized", where, "")) c.comm_serialized = *v;
  if (auto v = get_number(root, "overlap_slowdown", where, "")) {
    if (*v < 0 || *v > 10) json_fail(where, "overlap_slowdown", "a fraction in [0, 10]");
    c.overlap_slowdown = *v;
  }
  if (auto v = get_number(root, "host_link_GBps", where, "")) {
    if (!(*v > 0) || *v > 1e6) json_fail(where, "host_link_GBps", "a positive bandwidth in GB/s");
    c.host_link_GBps = *v;
  }
  if (auto v = get_number(root, "host_optimizer_params_per_s", where, "")) {
    if (!(*v > 0) || *v > 1e15) json_fail(where, "host_optimizer_params_per_s", "a positive number of parameters per second");
    c.host_optimizer_params_per_s = *v;
  }
  for (auto [key, field] : {std::pair{"fsdp_unit_forward_us", &c.fsdp_unit_forward_us}, std::pair{"fsdp_unit_backward_us", &c.fsdp_unit_backward_us}})
    if (auto v = get_number(root, key, where, "")) {
      if (!(*v >= 0) || *v > 1e6) json_fail(where, key, "a time in microseconds in [0, 1e6]");
      *field = *v;
    }
  simdjson::dom::element e;
  if (!root["collectives"].get(e)) {
    c.collectives_given = true;
    auto colls = as_object(e, where, "collectives");
    for (int i = 0; i < kCollCount; ++i) {
      simdjson::dom::element ce;
      const std::string key = coll_key(static_cast<Coll>(i));
      if (colls[key].get(ce)) continue;
      const std::string path = "collectives." + key;
      auto co = as_object(ce, where, path);
      simdjson::dom::element le;
      if (!co["intra"].get(le)) read_link(as_object(le, where, path + ".intra"), where, path + ".intra", c.coll[i].intra);
      if (!co["inter"].get(le)) read_link(as_object(le, where, path + ".inter"), where, path + ".inter", c.coll[i].inter);
      if (auto v = get_number(co, "nic_GBps", where, path)) {
        if (!(*v > 0)) json_fail(where, path + ".nic_GBps", "a positive bandwidth in GB/s");
        c.coll[i].nic_GBps = *v;
      }
    }
  }
  return c;
}

ClusterModel load_cluster_file(const std::string& path) { return parse_cluster_json(read_text_file(path), path); }

std::string cluster_to_json(const ClusterModel& c) {
  std::ostringstream s;
  JsonWriter j(s, false);
  j.begin_object()
      .kv("name", c.name)
      .kv("device", c.device)
      .kv("world_size", c.world_size)
      .kv("gpus_per_node", c.gpus_per_node)
      .kv("hierarchical", c.hierarchical)
      .kv("overlap_slowdown", c.overlap_slowdown)
      .kv("comm_serialized", c.comm_serialized)
      .kv("host_link_GBps", c.host_link_GBps)
      .kv("host_optimizer_params_per_s", c.host_optimizer_params_per_s)
      .kv("fsdp_unit_forward_us", c.fsdp_unit_forward_us)
      .kv("fsdp_unit_backward_us", c.fsdp_unit_backward_us);
  j.key("collectives").begin_object();
  for (int i = 0; i < kCollCount; ++i) {
    j.key(coll_key(static_cast<Coll>(i))).begin_object();
    for (const auto* l : {&c.coll[i].intra, &c.coll[i].inter}) {
      j.key(l == &c.coll[i].intra ? "intra" : "inter")
          .begin_object()
          .kv("base_latency_us", l->base_latency_us)
          .kv("hop_latency_us", l->hop_latency_us)
          .kv("busbw_GBps", l->busbw_GBps)
          .end_object();
    }
    j.kv("nic_GBps", c.coll[i].nic_GBps).end_object();
  }
  j.end_object().end_object();
  return s.str();
}

namespace {
constexpr double kLatencyBoundBusBytes = 64.0 * 1024;  // bytes on the bus (fit_cluster)
}  // namespace

FitReport fit_cluster(ClusterModel& cluster, const std::vector<CollSample>& samples) {
  FitReport rep;
  for (int ci = 0; ci < kCollCount; ++ci) {
    const Coll c = static_cast<Coll>(ci);
    // x = S·factor(n) (bytes on the bus), y = duration (ns): y = a + x / bw.
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int n = 0, group = 0;
    double xmin = 1e300, xmax = -1;
    for (const auto& s : samples) {
      if (s.type != c || s.group_size < 2 || s.duration < 0 || s.bytes <= 0) continue;
      rep.min_bytes[ci] = rep.min_bytes[ci] == 0 ? s.bytes : std::min(rep.min_bytes[ci], s.bytes);
      rep.max_bytes[ci] = std::max(rep.max_bytes[ci], s.bytes);
      const double x = double(s.bytes) * bus_factor(c, s.group_size), y = double(s.duration);
      sx += x, sy += y, sxx += x * x, sxy += x * y;
      xmin = std::min(xmin, x), xmax = std::max(xmax, x);
      group = std::max(group, s.group_size);
      ++n;
    }
    if (n == 0) continue;
    CollParams& p = cluster.params(c);
    const int nodes = (group + cluster.gpus_per_node - 1) / cluster.gpus_per_node;
    LinkParams& level = nodes > 1 ? p.inter : p.intra;
    // Messages this small are latency-bound on any transport (NCCL's LL protocol below ~64 KiB,
    // gloo's hand-offs between threads): their durations say nothing of bandwidth. A loop's
    // clip_grad_norm_ and logged-loss all-reduces (112 B, 4 B, ~1 ms on CPU) had fitted
    // 1e-5 GB/s, which an HSDP what-if's all-reduce of a shard then took seconds at.
    const bool latency_bound = xmax < kLatencyBoundBusBytes;
    double slope = 0;
    const double den = n * sxx - sx * sx;
    if (!latency_bound && n >= 2 && xmax > xmin * 1.05 && den > 0) slope = (n * sxy - sx * sy) / den;
    // A least-squares line with a negative intercept (noisy samples over few sizes, e.g. gloo on
    // a loaded CPU) would be clamped to latency 0 and overshoot every sample: fit through the
    // origin instead, which keeps the total time of the samples.
    if (slope > 1e-6 && sy - slope * sx < 0 && sx > 0) slope = sy / sx;
    const int mult = c == Coll::AllReduce ? 2 : 1;
    const double steps = double(mult) * (group - 1);
    const double inter_steps = nodes > 1 ? double(mult) * (nodes - 1) : 0;
    const double model_us = p.intra.base_latency_us + (steps - inter_steps) * p.intra.hop_latency_us +
                            inter_steps * p.inter.hop_latency_us;
    if (slope > 1e-6) {
      level.busbw_GBps = 1.0 / slope;  // ns per byte -> bytes per ns = GB/s
    } else {
      // One size (FSDP's equal layers give exactly that): latency and bandwidth cannot be told
      // apart. When the samples take well over the model's latency they are bandwidth-bound, so
      // keep the preset latency and fit the bandwidth to the mean; otherwise fit the latency below.
      const double mean_x = sx / n, mean_y = sy / n, alpha_model_ns = model_us * 1000.0;
      if (!latency_bound && mean_x > 0 && mean_y > 2.0 * alpha_model_ns) level.busbw_GBps = mean_x / (mean_y - alpha_model_ns);
    }
    const double inv_bw = 1.0 / (nodes > 1 ? std::min(p.intra.busbw_GBps, p.inter.busbw_GBps) : p.intra.busbw_GBps);
    const double alpha_ns = std::max(0.0, (sy - inv_bw * sx) / n);
    // Keep NCCL's shape (base + per-step), scaled so that alpha(group) equals the fitted value.
    const double scale = model_us > 0 ? (alpha_ns / 1000.0) / model_us : 0;
    p.intra.base_latency_us *= scale;
    p.intra.hop_latency_us *= scale;
    if (nodes > 1) p.inter.hop_latency_us *= scale;
    double se = 0;
    for (const auto& s : samples) {
      if (s.type != c || s.group_size < 2 || s.duration < 0 || s.bytes <= 0) continue;
      const double r = double(cluster.collective_ns(c, s.bytes, s.group_size)) - double(s.duration);
      se += r * r;
    }
    rep.samples[ci] = n;
    rep.alpha_us[ci] = alpha_ns / 1000.0;
    rep.busbw_GBps[ci] = level.busbw_GBps;
    rep.rms_error_us[ci] = std::sqrt(se / n) / 1000.0;
  }
  return rep;
}

}  // namespace ss::sim
