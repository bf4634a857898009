// Writes a large synthetic Kineto trace shaped like a real FSDP training profile (field order,
// arg sets and event mix of PyTorch 2.x output): per layer and step, FSDP ranges, nn.Module
// ranges, cpu ops with their runtime launches, kernels with launch args, NCCL all-gather /
// reduce-scatter kernels with collective args, flow arrows, Python frames and [memory] events.
//   gen_kineto_trace OUT.json TARGET_MB [rank]
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

struct Gen {
  std::FILE* f;
  std::uint64_t ts = 1000000;  // ns from baseTimeNanoseconds
  std::int64_t corr = 1;
  std::int64_t ext = 1;
  bool first = true;

  void ev(const std::string& s) {
    std::fputs(first ? "\n  " : ",\n  ", f);
    std::fputs(s.c_str(), f);
    first = false;
  }
  static std::string us(std::uint64_t ns) {
    char b[40];
    std::snprintf(b, sizeof b, "%" PRIu64 ".%03" PRIu64, ns / 1000, ns % 1000);
    return b;
  }
  std::string x(const char* cat, const std::string& name, int pid, int tid, std::uint64_t t, std::uint64_t d,
                const std::string& args) {
    std::string s = "{\"ph\": \"X\", \"cat\": \"" + std::string(cat) + "\", \"name\": \"" + name + "\", \"pid\": " +
                    std::to_string(pid) + ", \"tid\": " + std::to_string(tid) + ", \"ts\": " + us(t) + ", \"dur\": " + us(d);
    if (!args.empty()) s += ", \"args\": {" + args + "}";
    return s + "}";
  }

  void launch(int tid, const std::string& kernel, int stream, std::uint64_t gpu_t, std::uint64_t dur, const std::string& extra) {
    const std::int64_t c = corr++;
    ev(x("cuda_runtime", "cudaLaunchKernel", 4242, tid, ts, 4200, "\"External id\": " + std::to_string(ext) +
                                                                       ", \"cbid\": 211, \"correlation\": " + std::to_string(c)));
    ev("{\"ph\": \"s\", \"id\": " + std::to_string(c) + ", \"pid\": 4242, \"tid\": " + std::to_string(tid) +
       ", \"ts\": " + us(ts) + ", \"cat\": \"ac2g\", \"name\": \"ac2g\"}");
    ev(x("kernel", kernel, 0, stream, gpu_t, dur,
         "\"External id\": " + std::to_string(ext) + ", \"queued\": 0, \"device\": 0, \"context\": 1, \"stream\": " +
             std::to_string(stream) + ", \"correlation\": " + std::to_string(c) +
             ", \"registers per thread\": 128, \"shared memory\": 49152, \"blocks per SM\": 1.939394, \"warps per SM\": "
             "15.515152, \"grid\": [256, 1, 1], \"block\": [256, 1, 1], \"est. achieved occupancy %\": 25" + extra));
    ev("{\"ph\": \"f\", \"id\": " + std::to_string(c) + ", \"pid\": 0, \"tid\": " + std::to_string(stream) +
       ", \"ts\": " + us(gpu_t) + ", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}");
    ts += 5000;
  }

  void layer(int step, int l, bool backward) {
    const int tid = backward ? 4300 : 4242;
    const std::string fqn = "layers." + std::to_string(l);
    const std::uint64_t start = ts;
    ev(x("user_annotation", std::string("FSDP::") + (backward ? "pre_backward (" : "pre_forward (") + fqn + ")", 4242, tid, ts, 20000, ""));
    ev(x("cpu_op", "record_param_comms", 4242, tid, ts + 1000, 9000,
         "\"External id\": " + std::to_string(ext) + ", \"Record function id\": 0, \"Collective name\": \"_allgather_base\", "
         "\"dtype\": \"BFloat16\", \"In msg nelems\": 25165824, \"Out msg nelems\": 201326592, \"Group size\": 8, "
         "\"Process Group Name\": \"0\", \"Process Group Description\": \"default_pg\", \"Process Group Ranks\": "
         "\"[0, 1, 2, 3, 4, 5, 6, 7]\", \"Rank\": 0, \"Ev Idx\": " + std::to_string(ext)));
    launch(tid, "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 20, ts + 3000, 900000,
           ", \"Collective name\": \"_allgather_base\", \"In msg nelems\": 25165824, \"Out msg nelems\": 201326592, "
           "\"Group size\": 8, \"dtype\": \"BFloat16\", \"In split size\": \"[]\", \"Out split size\": \"[]\", "
           "\"Process Group Name\": \"0\", \"Process Group Description\": \"default_pg\", \"Process Group Ranks\": "
           "\"[0, 1, 2, 3, 4, 5, 6, 7]\"");
    ++ext;
    ev(x("python_function", "nn.Module: TransformerBlock_" + std::to_string(l), 4242, tid, ts, 400000,
         "\"Python parent id\": 1, \"Python id\": " + std::to_string(ext) + ", \"Python module id\": " + std::to_string(l)));
    for (int k = 0; k < 24; ++k) {
      ev(x("python_function", "torch/nn/modules/linear.py(125): forward", 4242, tid, ts, 12000,
           "\"Python parent id\": 2, \"Python id\": " + std::to_string(ext)));
      ev(x("cpu_op", k % 2 ? "aten::mm" : "aten::add", 4242, tid, ts, 15000,
           "\"External id\": " + std::to_string(ext) + ", \"Record function id\": 0, \"Sequence number\": " +
               std::to_string(ext) + ", \"Fwd thread id\": 0, \"Ev Idx\": " + std::to_string(ext) +
               ", \"Input Dims\": [[8192, 4096], [4096, 4096]], \"Input type\": [\"c10::BFloat16\", \"c10::BFloat16\"], "
               "\"Input Strides\": [[4096, 1], [1, 4096]], \"Concrete Inputs\": [\"\", \"\"]"));
      launch(tid, k % 2 ? "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas"
                        : "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, "
                          "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)",
             7, ts + 2000, 30000, "");
      ++ext;
      if (k % 6 == 0)
        ev("{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": 4242, \"tid\": " +
           std::to_string(tid) + ", \"ts\": " + us(ts) + ", \"args\": {\"Total Reserved\": 40265318400, \"Total Allocated\": "
           "20132659200, \"Bytes\": " + std::to_string(k % 12 ? -67108864 : 67108864) +
           ", \"Addr\": 139872477069312, \"Device Id\": 0, \"Device Type\": 1}}");
    }
    if (backward) {
      ev(x("cpu_op", "record_param_comms", 4242, tid, ts, 9000,
           "\"External id\": " + std::to_string(ext) + ", \"Collective name\": \"_reduce_scatter_base\", \"dtype\": \"Float\", "
           "\"In msg nelems\": 201326592, \"Out msg nelems\": 25165824, \"Group size\": 8, \"Process Group Name\": \"0\", "
           "\"Process Group Ranks\": \"[0, 1, 2, 3, 4, 5, 6, 7]\""));
      launch(tid, "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 20, ts + 3000, 1200000,
             ", \"Collective name\": \"_reduce_scatter_base\", \"In msg nelems\": 201326592, \"Out msg nelems\": 25165824, "
             "\"Group size\": 8, \"dtype\": \"Float\", \"Process Group Name\": \"0\"");
      ++ext;
    }
    ev(x("user_annotation", std::string("FSDP::") + (backward ? "post_backward (" : "post_forward (") + fqn + ")", 4242, tid, ts, 20000, ""));
    ts += 25000;
    (void)start;
    (void)step;
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: gen_kineto_trace OUT.json TARGET_MB [rank]\n");
    return 1;
  }
  const double target = std::atof(argv[2]) * 1e6;
  const int rank = argc > 3 ? std::atoi(argv[3]) : 0;
  std::FILE* f = std::fopen(argv[1], "wb");
  if (!f) return 1;
  std::fprintf(f, "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H100 80GB HBM3\", "
                  "\"totalGlobalMem\": 85045231616, \"computeMajor\": 9, \"computeMinor\": 0, \"numSms\": 132}],\n"
                  "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": %d, \"world_size\": 8, \"pg_count\": 1, "
                  "\"pg_config\": [{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", \"backend_config\": \"cuda:nccl\", "
                  "\"pg_size\": 8, \"ranks\": [0, 1, 2, 3, 4, 5, 6, 7]}]},\n  \"traceEvents\": [",
               rank);
  Gen g{f};
  int step = 0;
  while (static_cast<double>(std::ftell(f)) < target) {
    const std::uint64_t s0 = g.ts;
    for (int l = 0; l < 32; ++l) g.layer(step, l, false);
    for (int l = 31; l >= 0; --l) g.layer(step, l, true);
    g.ev(g.x("user_annotation", "ProfilerStep#" + std::to_string(step), 4242, 4242, s0, g.ts - s0, ""));
    ++step;
  }
  std::fprintf(f, "\n  ],\n  \"traceName\": \"synthetic\",\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": 1767189312000000000\n}\n");
  std::fclose(f);
  std::fprintf(stderr, "wrote %s: %d steps\n", argv[1], step);
  return 0;
}
