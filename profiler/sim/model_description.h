// Model descriptions (resources/models/*.json): a decoder LLM or a DiT described by its shape,
// turned into a SimModel with compute estimated from FLOPs and a device's achievable throughput,
// and activations from per-token byte counts (docs/simulator.md gives the formulas).
#pragma once

#include <string>

#include "profiler/sim/sim_model.h"

namespace ss::sim {

struct ModelDescription {
  std::string name;
  std::string kind = "decoder";  // "decoder" or "dit"
  int layers = 0;
  std::int64_t hidden = 0, ffn_hidden = 0;
  int heads = 0, kv_heads = 0;
  // Width of one attention head; 0 = hidden / heads. Qwen3 and Gemma set it wider (q and o then
  // project hidden <-> heads x head_dim). Decoders only.
  std::int64_t head_dim = 0;
  std::int64_t vocab = 0;
  std::int64_t seq_len = 0;
  int micro_batch = 1;
  bool tied_embeddings = false;
  bool gated_mlp = true;           // SwiGLU (3 matrices) vs GELU (2)
  std::int64_t text_len = 0;       // DiT cross-attention context
  std::int64_t patch_dim = 0;      // DiT: input channels x patch volume
  std::string activation_checkpointing = "none";  // "none" or "full"
  std::string wrap = "layer";      // "layer": one unit per block; "sublayer": attention and MLP
  std::string device = "H100";
  double achievable_fraction = 0;  // 0: the device table's
  int param_dtype_bytes = 2, reduce_dtype_bytes = 4;
  // Mixture of experts (decoder only; num_experts 0 = dense): every moe_layer_interval-th layer's
  // MLP is num_experts routed experts of moe_ffn_hidden_size, experts_per_token of them per token,
  // plus shared_experts always-on experts. The experts are their own FSDP unit
  // ("layers.N.moe.experts"), split by expert parallelism.
  int num_experts = 0, experts_per_token = 0, shared_experts = 0, moe_layer_interval = 1;
  std::int64_t moe_ffn_hidden = 0;
};

ModelDescription parse_model_json(const std::string& json, const std::string& where);
ModelDescription load_model_file(const std::string& path);
// `device_override` (a cluster's device) replaces the description's when not empty.
SimModel build_sim_model(const ModelDescription& d, const std::string& device_override = "");

}  // namespace ss::sim
