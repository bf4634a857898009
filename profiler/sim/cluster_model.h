// Collective cost model of a cluster: t = α(n) + S·factor(n) / busBW, with α growing with the
// number of ring steps (NCCL's ring latency model), a separate inter-node term when the group
// spans nodes, and an optional two-level (hierarchical) form. Defaults are measured H100 figures
// (docs/simulator.md, resources/clusters/README.md). All sizes in bytes, times in ns.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "storage/types.h"

namespace ss::sim {

enum class Coll : std::uint8_t { AllGather = 0, ReduceScatter = 1, AllReduce = 2 };
inline constexpr int kCollCount = 3;
const char* coll_key(Coll c);  // "all_gather", "reduce_scatter", "all_reduce"

struct LinkParams {
  double base_latency_us = 8.4;  // once per collective
  double hop_latency_us = 3.4;   // per ring step on this level
  double busbw_GBps = 350;       // bus bandwidth (nccl-tests definition), GB/s = bytes/ns
};

struct CollParams {
  LinkParams intra;                                   // within one node (NVLink)
  LinkParams inter{0, 14.0, 200};                     // ring steps that cross nodes; flat-ring busBW
  double nic_GBps = 47;                               // per-rail bandwidth (hierarchical form)
};

struct ClusterModel {
  std::string name = "h100-nvlink-ib";
  int world_size = 8;
  // The cluster file gave world_size. A file without it (e.g. only the host figures that
  // `python -m shardscope.measure_host` writes) replays a profile at the profile's world size.
  bool world_size_given = false;
  int gpus_per_node = 8;
  // Likewise the device and the ranks per node: a file without them (the measured host or
  // per-unit figures alone) keeps the profile's (a CPU profile stays a CPU run).
  bool device_given = false, gpus_per_node_given = false;
  // The file gave collective costs. One without them (host or per-unit figures only) is fitted to
  // a profile's collectives as the built-in preset is (SimInputRequest::fit_if_available).
  bool collectives_given = false;
  bool hierarchical = false;     // two-level collectives (inter-node over rails, then intra-node)
  double overlap_slowdown = 0.0; // compute runs (1 + s) slower while a collective is in flight
  // Collectives run on the cores that compute: nothing overlaps (CPU ranks over gloo, as many
  // ranks as cores: gloo's worker threads progress only while the training thread waits). Each
  // collective then holds the compute lane too, in issue order.
  bool comm_serialized = false;
  std::string device = "H100";
  // Offload (FsdpPlan::offload): host<->device copies run on their own copy engines at this
  // bandwidth per direction (PCIe Gen5 x16 ~50 GB/s measured pinned; NVLink-C2C on GH200 ~450),
  // and the CPU optimizer step updates this many parameters per second per rank (a node's CPU
  // AdamW throughput divided by its GPUs; measure yours: docs/simulator.md).
  double host_link_GBps = 50;
  double host_optimizer_params_per_s = 5e8;
  // What one more FSDP unit costs the host in one forward and one backward pass, beyond its bytes
  // (its hooks' Python, its copy-in / copy-out calls, its collectives' hand-offs), measured without
  // a profiler by `torchrun -m shardscope.measure_fsdp_units`. A bucket runs these once for all its
  // members, so each member merged into another's bucket takes them out of the step (from the host
  // gaps, and on a CPU run from its compute too). 0: not measured, merges save only latency.
  double fsdp_unit_forward_us = 0;
  double fsdp_unit_backward_us = 0;
  CollParams coll[kCollCount];

  ClusterModel();
  const CollParams& params(Coll c) const { return coll[static_cast<int>(c)]; }
  CollParams& params(Coll c) { return coll[static_cast<int>(c)]; }

  // Time of one collective of `bytes` (the full gathered / input buffer) over `n` ranks, of which
  // `per_node` share a node (0: gpus_per_node; HSDP's replicate groups have one rank per node).
  TimeNs collective_ns(Coll c, std::int64_t bytes, int n, int per_node = 0) const;
  // All-to-all of a `bytes` buffer per rank (TP/CP Ulysses, MoE dispatch): each rank sends (n-1)/n
  // of it, so it costs what an all-gather of that buffer costs (nccl-tests' busBW definition is the
  // same); across nodes every pair talks, so the flat inter-node bandwidth applies.
  TimeNs all_to_all_ns(std::int64_t bytes, int n, int per_node = 0) const;
  // One point-to-point send of `bytes` (pipeline activations, ring attention): one base latency,
  // NVLink bandwidth inside a node, one NIC's across nodes.
  TimeNs p2p_ns(std::int64_t bytes, bool cross_node) const;

 private:
  TimeNs time_ns(Coll c, std::int64_t bytes, int n, int per_node, bool two_level) const;
};

ClusterModel default_cluster();
ClusterModel parse_cluster_json(const std::string& json, const std::string& where);
ClusterModel load_cluster_file(const std::string& path);
std::string cluster_to_json(const ClusterModel& c);

// One measured collective: full buffer bytes, group size, duration.
struct CollSample {
  Coll type;
  std::int64_t bytes;
  int group_size;
  TimeNs duration;  // 0 is a sample (a CPU collective wholly under compute); negative is none
};

struct FitReport {
  int samples[kCollCount] = {0, 0, 0};
  double alpha_us[kCollCount] = {0, 0, 0};
  double busbw_GBps[kCollCount] = {0, 0, 0};
  double rms_error_us[kCollCount] = {0, 0, 0};
  // The sizes the samples span (message bytes): a what-if's collective outside them (a bucket of
  // several units) is extrapolated, and over a narrow span latency and bandwidth blur.
  std::int64_t min_bytes[kCollCount] = {0, 0, 0};
  std::int64_t max_bytes[kCollCount] = {0, 0, 0};
};

// Least squares of duration against S·factor(n) per collective type; updates the level (intra or
// inter) that the samples' group size uses. Types with one size (within 5 %) cannot separate the
// two: when their mean duration is over twice the model's latency they are bandwidth-bound and
// the bandwidth is fitted to the mean with the latency kept; otherwise only the latency is fitted
// (mean residual). Returns what was fitted.
FitReport fit_cluster(ClusterModel& cluster, const std::vector<CollSample>& samples);

}  // namespace ss::sim
