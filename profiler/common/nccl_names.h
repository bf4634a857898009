// NCCL kernel-name and collective-label classification, shared by the collector and every
// importer. Names seen in the wild (research/collector.md section 4):
//   <= 2.18   ncclKernel_AllReduce_RING_LL_Sum_float
//   2.19-2.28 ncclDevKernel_AllGather_RING_LL, ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL,
//             ncclDevKernel_SendRecv, ncclDevKernel_Generic (mangled: _Z31ncclDevKernel_...)
//   2.27      ncclSymDevKernel_AllReduce_..., 2.28 ncclSymkDevKernel_AllGather_LLMC
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "storage/types.h"

namespace ss {

// A communication kernel: NCCL's, or another library's recognised by profiler/common/comm_kernels.h
// (DeepEP, NVSHMEM, MSCCL++, custom all-reduce kernels, user rules).
struct NcclKernelInfo {
  bool is_comm = false;
  std::string family;  // "nccl", "deepep", ... when is_comm
  std::string rule;    // what matched: the NCCL prefix or the rule's substring
  CollectiveType type = CollectiveType::Unknown;  // Unknown for Generic kernels
  std::string collective;  // the name token, e.g. "AllGather"
  std::string algorithm;   // "RING", "TREE", ... when the name carries one
  std::string protocol;    // "LL", "LL128", "SIMPLE", ...
  std::string reduce_op;   // "Sum", ...
  std::string dtype;       // "float", "bf16", ...
  bool symmetric = false;  // ncclSym(k)DevKernel
};

// Classifies a kernel name, mangled or demangled: NCCL's kernels by their prefixes, then the
// communication-kernel rules. Other names give is_comm == false.
NcclKernelInfo classify_nccl_kernel(std::string_view kernel_name);

// Maps any collective label to a type: PyTorch's "Collective name" arg ("_allgather_base",
// "reduce_scatter_tensor_coalesced", "allreduce"), profiling titles ("nccl:all_reduce"), NCCL
// API / NVTX names ("ncclAllGather"), gloo's annotations ("gloo:all_gather"), c10d ops
// ("c10d::_reduce_scatter_base_") and our own labels ("all_gather").
CollectiveType collective_type_from_label(std::string_view label);

// Bytes per element for a dtype label ("float", "Float", "bf16", "BFloat16", "c10::Half",
// "torch.float32", "f8e4m3", "int64_t" ...); 0 when unknown.
int dtype_size_bytes(std::string_view dtype);

}  // namespace ss
