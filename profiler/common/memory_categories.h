// Memory categories of FSDP training, from what every profile has: each allocation's time, its
// address and size, and what the program was doing when it was made (the innermost FSDP, comm,
// optimizer or module range on the allocating thread) and when it was freed. Shared by the Kineto
// importer (CPU and GPU traces) and the collector's merge (cudaMallocAsync per-tensor events), so
// imported and recorded profiles are categorised alike.
//
// The rules follow FSDP2's runtime (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py,
// _fsdp_param_group.py) and the categories of PyTorch's own FSDPMemTracker:
//   made inside FSDP::all_gather / all_gather_copy_in / a gloo or NCCL all-gather   -> all-gather buffer
//   made inside FSDP::all_gather_copy_out                                           -> unsharded parameter
//   made inside FSDP1's unshard (FSDP::unshard from ShardScope's hooks, or FSDP1's own
//   FullyShardedDataParallel._pre_forward, _pre_backward_hook, *_prefetch: its
//   FlatParameter is the all-gather's output)                                        -> unsharded parameter
//   made inside FSDP::post_backward_reduce (FSDP1: _post_backward_hook): freed before the step's optimizer, or by
//                                           FSDP in a later step (the last unit's
//                                           input, held until the next RS wait)      -> reduce-scatter buffer
//                                           freed otherwise (param.grad, zero_grad)  -> gradient
//   made in backward and freed inside FSDP::post_backward_* (autograd's grads of the
//   unsharded parameters, copied into the reduce-scatter input)                      -> gradient
//   made inside the optimizer step and alive after it                                -> optimizer state
//   made in forward (or recomputed in backward) and alive into backward             -> activation
//   made and freed within one phase (forward, backward, optimizer)                   -> temporary
//   (with gradient accumulation each pass has its forward and its backward: StepPhases::later_passes)
//   named by a tensor fact from the Python hooks (sharded parameters, ...)           -> that category
//   anything else                                                                    -> unknown
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/types.h"

namespace ss {

// What the allocating (or freeing) thread was inside at that moment.
enum class MemContext : std::uint8_t {
  None,
  Forward,
  Backward,
  Recompute,
  Optimizer,
  AllGather,          // FSDP::all_gather, fsdp::all_gather_copy_in, the all-gather itself
  AllGatherCopyOut,   // FSDP::all_gather_copy_out: the unsharded parameters
  ReduceScatter,      // FSDP::post_backward_reduce, the reduce-scatter itself
  PostBackward,       // other FSDP::post_backward* ranges (reshard, rs_wait)
};

// The context a range name stands for (FSDP2 / c10d / gloo / NCCL / optimizer names), or nullopt
// for names that say nothing about memory (module ranges are mapped by their phase instead).
std::optional<MemContext> memory_context_of_range(std::string_view name);

// A later pass of gradient accumulation: its forward runs [forward, backward), inside the step's
// backward phase.
struct PassPhases {
  TimeNs forward = 0, backward = 0;
};

// One step's phase boundaries: [start, backward) forward, [backward, optimizer) backward,
// [optimizer, end) optimizer. backward/optimizer equal end when the step has no such phase.
// With gradient accumulation the passes after the first are forwards again inside
// [backward, optimizer): `later_passes`, sorted (find_later_passes).
struct StepPhases {
  TimeNs start = 0, backward = 0, optimizer = 0, end = 0;
  std::vector<PassPhases> later_passes = {};
};

// Fills each step's later passes from the starts of its forward module ranges and of its backward
// ranges (both sorted; backward ranges of the kinds that set `StepPhases::backward`): after a
// backward, the next forward module range starts a pass, whose backward starts at the next
// backward range (or the optimizer phase). A forward range of a recompute is not a forward here.
void find_later_passes(std::vector<StepPhases>& steps, const std::vector<TimeNs>& forward_module_starts,
                       const std::vector<TimeNs>& backward_starts);

struct MemoryEventIn {
  TimeNs time = 0;
  std::int64_t address = 0;
  std::int64_t bytes = 0;  // > 0 allocation, < 0 free
  MemContext context = MemContext::None;
  // A free the trace did not record, placed by the importer, where the thread that let the block
  // go last was gloo's worker (a CPU trace: lost_frees.h); its time is an estimate.
  bool off_thread = false;
};

// "The allocation live at `address` at `time` is a `category`, owned by `module`" (from the Python
// hooks' ss:mem facts; module "" when the fact names none).
struct TensorFact {
  TimeNs time = 0;
  std::int64_t address = 0;
  MemoryCategory category = MemoryCategory::Unknown;
  std::string module;
  bool has_module = false;
};

// One category per event, in the input's order; a free gets its allocation's category. Events
// need not be sorted. `steps` sorted by start.
// `fact_of_event`, when given, receives for each event the index of the fact that named its
// allocation (-1 for none), so that a caller can also take the fact's module.
std::vector<MemoryCategory> classify_memory(const std::vector<MemoryEventIn>& events, const std::vector<StepPhases>& steps,
                                            const std::vector<TensorFact>& facts, std::vector<int>* fact_of_event = nullptr);

// "ss:mem:<category>:<address>[:<module fqn>]" (the Python hooks' tensor facts, zero-length annotations).
std::optional<TensorFact> parse_tensor_fact(std::string_view name, TimeNs time);

// "A tensor of `bytes` at `address` was alive when the trace began" (record --steps A:B: the
// parameters, gradients and optimizer state allocated before the capture window; the trace has no
// allocation event for them): "ss:live:<category>:<address>:<bytes>[:<module fqn>]".
struct LiveTensor {
  TensorFact fact;
  std::int64_t bytes = 0;
};
std::optional<LiveTensor> parse_live_tensor(std::string_view name, TimeNs time);
// "ss:freed:<address>": a live tensor's storage died (the hooks' weakref finalizer); torch.profiler
// reports no free for a CPU block allocated before it started.
std::optional<std::int64_t> parse_freed_tensor(std::string_view name);

}  // namespace ss
