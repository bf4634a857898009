// Small profiles written by hand with ProfileWriter, with every time chosen so that the expected
// comparison can be worked out on paper (the arithmetic is in the tests' comments).
#pragma once

#include <string>

namespace ss::test {

// Profile "A" (the reference). Rank 0; steps 0 [0, 1000) and 1 [1000, 11000); rank 1 has step 1
// only. Step 1 on rank 0 holds:
//   module ranges (CPU thread unless noted)
//     layers.0       forward  [1000, 4000)
//     layers.0.attn  forward  [1500, 2500) and, on the GPU stream lane, [2000, 3000)
//     layers.0       backward [5000, 9000)
//     layers.0       recompute [5000, 6000)
//   kernels
//     gemm       compute    [1000, 3000) and [5000, 8000)
//     ag_kernel  collective [2500, 4500)   all-gather 1000 bytes, group "0 (fsdp_shard)"
//     rs_kernel  collective [9000, 10000)  reduce-scatter 2000 bytes, group "0 (fsdp_shard)"
//   plus, in step 0: gemm compute [100, 600) (outside the step-1 window)
std::string write_profile_a(const std::string& path);

// Profile "B" (the one compared). Rank 0 only; steps 1 [500, 8500) and 2 [8500, 9000). Step 1:
//     layers.0       forward  [500, 2500)
//     layers.0.attn  forward  [1000, 2000)
//     layers.0       backward [3000, 8000)
//     layers.1       forward  [2500, 2700)     (a module A does not have)
//     gemm       compute    [500, 2500) and [3000, 6000)
//     softmax    compute    [6000, 6500)
//     ag_kernel  collective [2000, 3000)   all-gather 1000 bytes
//     rs_kernel  collective [7000, 8400)   reduce-scatter 2000 bytes
std::string write_profile_b(const std::string& path);

// Kernels only: no steps, no modules, no collectives rows. Rank 0:
//     gemm compute [200, 700), gemm compute [800, 1000), copy memcpy [1000, 1500)
std::string write_profile_flat(const std::string& path);

}  // namespace ss::test
