// NCCL kernel-name classification for every generation in research/collector.md section 4.1, the
// collective labels of section 4.3, and dtype sizes.
#include <catch2/catch.hpp>

#include "profiler/common/nccl_names.h"

using namespace ss;

namespace {
CollectiveType type_of(std::string_view n) { return classify_nccl_kernel(n).type; }
}  // namespace

TEST_CASE("NCCL <= 2.18 kernel names (ncclKernel_<Coll>_<ALGO>_LL_Sum_<type>)", "[nccl]") {
  const auto ar = classify_nccl_kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)");
  CHECK(ar.is_comm);
  CHECK(ar.type == CollectiveType::AllReduce);
  CHECK(ar.algorithm == "RING");
  CHECK(ar.protocol == "LL");
  CHECK(ar.dtype == "float");
  CHECK_FALSE(ar.symmetric);
  CHECK(type_of("ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)") == CollectiveType::AllGather);
  CHECK(classify_nccl_kernel("ncclKernel_AllGather_RING_LL_Sum_int8_t").dtype == "int8_t");
  CHECK(type_of("ncclKernel_ReduceScatter_RING_LL_Sum_half") == CollectiveType::ReduceScatter);
  CHECK(type_of("ncclKernel_Broadcast_RING_LL_Sum_int8_t") == CollectiveType::Broadcast);
  CHECK(type_of("ncclKernel_Reduce_TREE_LL_Sum_double") == CollectiveType::Reduce);
  CHECK(classify_nccl_kernel("ncclKernel_AllReduce_TREE_LL_Sum___nv_bfloat16").algorithm == "TREE");
  CHECK(type_of("ncclKernel_AllReduce_COLLNET_DIRECT_LL_Sum_float") == CollectiveType::AllReduce);
  CHECK(type_of("ncclKernel_AllReduce_NVLS_TREE_LL_Sum_float") == CollectiveType::AllReduce);
  CHECK(type_of("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)") == CollectiveType::SendRecv);
}

TEST_CASE("NCCL 2.19-2.28 kernel names (ncclDevKernel_*)", "[nccl]") {
  CHECK(type_of("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)") == CollectiveType::AllGather);
  CHECK(type_of("ncclDevKernel_Broadcast_RING_LL(ncclDevComm*, unsigned long, ncclWork*)") == CollectiveType::Broadcast);
  const auto rs = classify_nccl_kernel("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  CHECK(rs.type == CollectiveType::ReduceScatter);
  CHECK(rs.dtype == "bf16");
  CHECK(rs.reduce_op == "Sum");
  CHECK(type_of("ncclDevKernel_AllReduce_Sum_f32_TREE_LL") == CollectiveType::AllReduce);
  CHECK(classify_nccl_kernel("ncclDevKernel_AllReduce_Sum_f32_TREE_LL").algorithm == "TREE");
  CHECK(type_of("ncclDevKernel_Reduce_Sum_f8e4m3_RING_LL") == CollectiveType::Reduce);
  CHECK(type_of("ncclDevKernel_AllReduce_Sum_u64_RING_LL") == CollectiveType::AllReduce);
  CHECK(type_of("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)") == CollectiveType::SendRecv);
  // Mixed-function plans: an NCCL kernel whose collective the name does not tell.
  const auto g = classify_nccl_kernel("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)");
  CHECK(g.is_comm);
  CHECK(g.type == CollectiveType::Unknown);
  // Mangled names (no demangling in some tools).
  CHECK(type_of("_Z31ncclDevKernel_AllGather_RING_LL24ncclDevKernelArgsStorageILm4096EE") == CollectiveType::AllGather);
  CHECK(classify_nccl_kernel("_Z24ncclDevKernel_Generic_424ncclDevKernelArgsStorageILm4096EE").is_comm);
}

TEST_CASE("NCCL 2.27 / 2.28 symmetric kernels", "[nccl]") {
  const auto s27 = classify_nccl_kernel("ncclSymDevKernel_AllReduce_RSxLD_AGxST_sum_bf16");
  CHECK(s27.is_comm);
  CHECK(s27.symmetric);
  CHECK(s27.type == CollectiveType::AllReduce);
  const auto s28 = classify_nccl_kernel("ncclSymkDevKernel_AllGather_LLMC");
  CHECK(s28.symmetric);
  CHECK(s28.type == CollectiveType::AllGather);
  CHECK(type_of("ncclSymkDevKernel_AllGather_LL") == CollectiveType::AllGather);
  CHECK(type_of("ncclSymkDevKernel_AllReduce_RSxLDMC_AGxSTMC_sum_bf16") == CollectiveType::AllReduce);
  CHECK(type_of("ncclSymkDevKernel_ReduceScatter_LD_sum_f32") == CollectiveType::ReduceScatter);
}

TEST_CASE("non-NCCL kernels", "[nccl]") {
  CHECK_FALSE(classify_nccl_kernel("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>").is_comm);
  CHECK_FALSE(classify_nccl_kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64").is_comm);
  CHECK_FALSE(classify_nccl_kernel("").is_comm);
  CHECK_FALSE(classify_nccl_kernel("Memcpy HtoD (Pinned -> Device)").is_comm);
}

TEST_CASE("collective labels from PyTorch, NCCL and NVTX", "[nccl]") {
  // record_param_comms "Collective name".
  CHECK(collective_type_from_label("allreduce") == CollectiveType::AllReduce);
  CHECK(collective_type_from_label("_allgather_base") == CollectiveType::AllGather);
  CHECK(collective_type_from_label("allgather_into_tensor_coalesced") == CollectiveType::AllGather);
  CHECK(collective_type_from_label("_reduce_scatter_base") == CollectiveType::ReduceScatter);
  CHECK(collective_type_from_label("reduce_scatter_tensor_coalesced") == CollectiveType::ReduceScatter);
  CHECK(collective_type_from_label("broadcast") == CollectiveType::Broadcast);
  CHECK(collective_type_from_label("all_to_all") == CollectiveType::AllToAll);
  CHECK(collective_type_from_label("alltoall_base") == CollectiveType::AllToAll);
  CHECK(collective_type_from_label("barrier") == CollectiveType::Barrier);
  // ProcessGroupNCCL profiling titles.
  CHECK(collective_type_from_label("nccl:all_reduce") == CollectiveType::AllReduce);
  CHECK(collective_type_from_label("nccl:_all_gather_base") == CollectiveType::AllGather);
  CHECK(collective_type_from_label("nccl:all_gather_into_tensor_coalesced") == CollectiveType::AllGather);
  CHECK(collective_type_from_label("nccl:_reduce_scatter_base") == CollectiveType::ReduceScatter);
  CHECK(collective_type_from_label("nccl:reduce_scatter_tensor_coalesced") == CollectiveType::ReduceScatter);
  CHECK(collective_type_from_label("nccl:all_to_all") == CollectiveType::AllToAll);
  CHECK(collective_type_from_label("nccl:_broadcast_oop") == CollectiveType::Broadcast);
  CHECK(collective_type_from_label("nccl:_reduce_oop") == CollectiveType::Reduce);
  // NCCL API / NVTX range names.
  CHECK(collective_type_from_label("ncclAllGather") == CollectiveType::AllGather);
  CHECK(collective_type_from_label("ncclReduceScatter") == CollectiveType::ReduceScatter);
  CHECK(collective_type_from_label("ncclSend") == CollectiveType::Send);
  CHECK(collective_type_from_label("ncclRecv") == CollectiveType::Recv);
  CHECK(collective_type_from_label("ncclAlltoAll") == CollectiveType::AllToAll);
  CHECK(collective_type_from_label("ncclGather") == CollectiveType::Gather);
  CHECK(collective_type_from_label("ncclScatter") == CollectiveType::Scatter);
  CHECK(collective_type_from_label("all_gather") == CollectiveType::AllGather);
  CHECK(collective_type_from_label("ncclGroupEnd") == CollectiveType::Unknown);
  CHECK(collective_type_from_label("") == CollectiveType::Unknown);
}

TEST_CASE("dtype sizes", "[nccl]") {
  CHECK(dtype_size_bytes("Float") == 4);
  CHECK(dtype_size_bytes("float") == 4);
  CHECK(dtype_size_bytes("BFloat16") == 2);
  CHECK(dtype_size_bytes("c10::BFloat16") == 2);
  CHECK(dtype_size_bytes("c10::Half") == 2);
  CHECK(dtype_size_bytes("torch.float32") == 4);
  CHECK(dtype_size_bytes("Long") == 8);
  CHECK(dtype_size_bytes("long int") == 8);
  CHECK(dtype_size_bytes("int") == 4);
  CHECK(dtype_size_bytes("Double") == 8);
  CHECK(dtype_size_bytes("int8_t") == 1);
  CHECK(dtype_size_bytes("f8e4m3") == 1);
  CHECK(dtype_size_bytes("bf16") == 2);
  CHECK(dtype_size_bytes("__nv_bfloat16") == 2);
  CHECK(dtype_size_bytes("Byte") == 1);
  CHECK(dtype_size_bytes("Bool") == 1);
  CHECK(dtype_size_bytes("ComplexFloat") == 0);  // unknown: 0, never a guess
  CHECK(dtype_size_bytes("") == 0);
}
