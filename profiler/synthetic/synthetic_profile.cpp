#include "profiler/synthetic/synthetic_profile.h"

#include <array>
#include <random>
#include <sstream>
#include <vector>

#include "storage/profile_writer.h"

namespace ss {
namespace {

struct ModuleIds {
  RowId root, embed, norm, output;
  std::vector<RowId> layer, attention, ffn;
};

constexpr std::array<const char*, 6> kComputeKernels{
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel",
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::BFloat16>, "
    "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<c10::BFloat16>, at::detail::Array<char*, 1>)",
    "flash_fwd_kernel",
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float>",
    "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0",
    "void at::native::elementwise_kernel<128, 2>",
};

}  // namespace

SyntheticStats write_synthetic_profile(const std::string& path, const SyntheticSpec& spec,
                                       const std::function<void(double)>& progress) {
  Origin origin;
  origin.kind = OriginKind::Synthetic;
  origin.tool = "shardscope synth";
  origin.source_format = "synthetic";
  {
    std::ostringstream p;
    p << "{\"ranks\": " << spec.ranks << ", \"layers\": " << spec.layers << ", \"steps\": " << spec.steps
      << ", \"min_kernels\": " << spec.min_kernels << ", \"kernels_per_module\": " << spec.kernels_per_module
      << ", \"seed\": " << spec.seed << "}";
    origin.parameters_json = p.str();
  }
  origin.notes = "Synthetic profile generated for tests and benchmarks; not a measurement.";
  ProfileWriter w(path, origin);
  w.set_time_origin(1'700'000'000'000'000'000);
  std::mt19937_64 rng(spec.seed);
  auto jitter = [&](std::int64_t base) {
    std::uniform_int_distribution<std::int64_t> d(-base / 5, base / 5);
    return std::max<std::int64_t>(1, base + d(rng));
  };

  // Module tree: a Llama-style decoder with one FSDP unit per layer plus the root.
  const std::int64_t layer_params = 218'112'000;  // ~Llama-3 8B layer
  ModuleIds m;
  m.root = w.add_module({kNoRow, "", "Transformer", layer_params * spec.layers + 1'050'677'248, 0, true, kNoRow, "true"});  // embedding + norm + output
  m.embed = w.add_module({m.root, "tok_embeddings", "Embedding", 525'336'576, 525'336'576 * 2, false, m.root, ""});
  for (int l = 0; l < spec.layers; ++l) {
    std::string base = "layers." + std::to_string(l);
    RowId layer = w.add_module({m.root, base, "TransformerBlock", layer_params, layer_params * 2, true, kNoRow, "true"});
    m.layer.push_back(layer);
    m.attention.push_back(w.add_module({layer, base + ".attention", "Attention", 41'943'040, 41'943'040 * 2, false, layer, ""}));
    m.ffn.push_back(w.add_module({layer, base + ".feed_forward", "FeedForward", 176'160'768, 176'160'768 * 2, false, layer, ""}));
  }
  m.norm = w.add_module({m.root, "norm", "RMSNorm", 4096, 8192, false, m.root, ""});
  m.output = w.add_module({m.root, "output", "Linear", 525'336'576, 525'336'576 * 2, false, m.root, ""});

  std::vector<std::uint32_t> kernel_names;
  for (const char* k : kComputeKernels) kernel_names.push_back(w.intern(k));
  const std::uint32_t ag_name = w.intern("ncclDevKernel_AllGather_RING_LL");
  const std::uint32_t rs_name = w.intern("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL");
  const std::uint32_t copy_name = w.intern("Memcpy HtoD (Pageable -> Device)");
  const std::uint32_t bf16 = w.intern("BFloat16");
  const std::uint32_t step_name = w.intern("ProfilerStep");
  const std::uint32_t opt_name = w.intern("Optimizer.step#AdamW.step");
  auto name_of = [&](const std::string& fqn, const char* phase) { return w.intern(fqn + " (" + phase + ")"); };
  const RowId config = w.launch_config({132, 1, 1, 384, 1, 1, 232448, 168});

  SyntheticStats stats;
  const std::int64_t kernels_per_step_rank =
      static_cast<std::int64_t>(spec.layers) * 2 * (2 * spec.kernels_per_module + 2) + 2 * spec.kernels_per_module + 1;
  int steps = spec.steps;
  if (spec.min_kernels > 0) {
    std::int64_t per_step = kernels_per_step_rank * spec.ranks;
    steps = std::max<int>(steps, static_cast<int>((spec.min_kernels + per_step - 1) / per_step));
  }
  stats.steps = steps;

  for (int rank = 0; rank < spec.ranks; ++rank) {
    RankInfo ri;
    ri.rank = rank;
    ri.host = "synthetic-node-0";
    ri.pid = 1000 + rank;
    ri.device_index = rank;
    ri.gpu_name = spec.gpu_name;
    ri.gpu_memory_bytes = 85'520'809'984;
    ri.sm_count = 132;
    ri.compute_major = 9;
    ri.world_size = spec.ranks;
    w.add_rank(ri);
  }
  RowId pg = w.add_process_group({"0", "fsdp_shard", "", spec.ranks, "nccl"});

  for (int rank = 0; rank < spec.ranks; ++rank) {
    const RowId compute = w.add_stream({rank, rank, 7, StreamKind::Compute, "compute"});
    const RowId nccl = w.add_stream({rank, rank, 24, StreamKind::Nccl, "nccl"});
    const RowId thread = w.add_thread({rank, 4242 + rank, "python"});
    TimeNs t = 1'000'000 + rank * 3'000;  // ranks start slightly apart, like real ones
    std::int64_t correlation = 1;
    std::int64_t seq = 0;
    std::int64_t allocated = 0;
    std::int64_t address = 0x7f0000000000;

    auto kernel = [&](RowId stream, std::uint32_t name, TimeNs start, TimeNs dur, KernelCategory cat, RowId module) {
      KernelRow k;
      k.rank = rank;
      k.stream = stream;
      k.start = start;
      k.end = start + dur;
      k.name = name;
      k.correlation = correlation++;
      k.launch_config = cat == KernelCategory::Compute || cat == KernelCategory::Collective ? config : kNoRow;
      k.category = cat;
      k.module = module;
      k.bytes = cat == KernelCategory::Memcpy ? 4 << 20 : 0;
      ++stats.kernels;
      return w.add_kernel(k);
    };
    auto memory = [&](TimeNs time, std::int64_t bytes, MemoryCategory cat, RowId module) {
      if (!spec.memory) return;
      w.add_memory_event({rank, time, address, bytes, cat, module, compute});
      address += bytes > 0 ? bytes : 0;
      allocated += bytes;
      ++stats.memory_events;
    };
    auto range = [&](TimeNs start, TimeNs end, std::uint32_t name, RangeKind kind, RangePhase phase, RowId module,
                     RowId parent, int depth) {
      ++stats.ranges;
      return w.add_range({rank, thread, kNoRow, start, end, name, kind, phase, module, parent, depth});
    };
    auto collective = [&](CollectiveType type, TimeNs start, TimeNs dur, std::int64_t bytes) {
      RowId k = kernel(nccl, type == CollectiveType::AllGather ? ag_name : rs_name, start, dur,
                       KernelCategory::Collective, kNoRow);
      w.add_collective({rank, k, type, bytes, bf16, pg, spec.ranks, seq++, start, start + dur});
      ++stats.collectives;
    };
    // One module pass: all-gather (when resharded), then compute kernels inside a module range.
    auto module_pass = [&](std::size_t l, RangePhase phase) {
      const std::int64_t bytes = 436'224'000;
      const bool fwd = phase == RangePhase::Forward;
      const TimeNs ag = jitter(400'000);
      collective(CollectiveType::AllGather, t, ag, bytes);
      memory(t, bytes, MemoryCategory::UnshardedParameter, m.layer[l]);
      t += ag;
      const TimeNs layer_start = t;
      for (RowId sub : {m.attention[l], m.ffn[l]}) {
        for (int k = 0; k < spec.kernels_per_module * (fwd ? 1 : 2); ++k) {
          TimeNs d = jitter(fwd ? 60'000 : 55'000);
          kernel(compute, kernel_names[static_cast<std::size_t>(k) % kernel_names.size()], t + 2'000, d,
                 KernelCategory::Compute, sub);
          t += d + 2'000;
        }
        if (fwd) memory(t, 64 << 20, MemoryCategory::Activation, sub);
        else memory(t, -(64 << 20), MemoryCategory::Activation, sub);
      }
      memory(t, -bytes, MemoryCategory::UnshardedParameter, m.layer[l]);
      if (!fwd) {
        memory(t, bytes / spec.ranks, MemoryCategory::Gradient, m.layer[l]);
        const TimeNs rs = jitter(450'000);
        collective(CollectiveType::ReduceScatter, t, rs, bytes * 2);
      }
      return std::pair<TimeNs, TimeNs>{layer_start, t};
    };

    for (int step = 0; step < steps; ++step) {
      const TimeNs step_start = t;
      // Ranges are written parents first so each row can name its parent id; the step range's
      // end is known only afterwards, so it is added with a placeholder and kept per-step.
      std::vector<std::tuple<TimeNs, TimeNs, std::uint32_t, RangePhase, RowId>> module_ranges;
      kernel(compute, copy_name, t, 20'000, KernelCategory::Memcpy, kNoRow);
      t += 25'000;
      for (std::size_t l = 0; l < m.layer.size(); ++l) {
        auto [a, b] = module_pass(l, RangePhase::Forward);
        module_ranges.emplace_back(a, b, name_of("layers." + std::to_string(l), "forward"), RangePhase::Forward,
                                   m.layer[l]);
      }
      for (std::size_t l = m.layer.size(); l-- > 0;) {
        auto [a, b] = module_pass(l, RangePhase::Backward);
        module_ranges.emplace_back(a, b, name_of("layers." + std::to_string(l), "backward"), RangePhase::Backward,
                                   m.layer[l]);
      }
      const TimeNs opt_start = t;
      for (int k = 0; k < 2 * spec.kernels_per_module; ++k) {
        TimeNs d = jitter(30'000);
        kernel(compute, kernel_names[5], t, d, KernelCategory::Compute, kNoRow);
        t += d + 1'000;
      }
      memory(t, -allocated, MemoryCategory::Gradient, m.root);
      const TimeNs step_end = t;
      RowId step_range = range(step_start, step_end, step_name, RangeKind::Annotation, RangePhase::None, kNoRow,
                               kNoRow, 0);
      for (const auto& [a, b, name, phase, module] : module_ranges)
        range(a, b, name, RangeKind::Module, phase, module, step_range, 1);
      range(opt_start, step_end, opt_name, RangeKind::Annotation, RangePhase::Optimizer, kNoRow, step_range, 1);
      w.add_step({rank, step, step_start, step_end});
      t += 50'000;
      if (progress) progress((rank * steps + step + 1) / double(spec.ranks * steps));
    }
  }
  w.finish();
  return stats;
}

}  // namespace ss
