#include "profiler/sim/model_description.h"

#include <cmath>

#include "profiler/sim/device_table.h"
#include "profiler/sim/json_input.h"
#include "storage/errors.h"

namespace ss::sim {

ModelDescription parse_model_json(const std::string& json, const std::string& where) {
  simdjson::dom::parser parser;
  auto o = as_object(parse_json(parser, json, where), where, "");
  ModelDescription d;
  auto req_int = [&](const char* k, std::int64_t lo, std::int64_t hi) {
    auto v = get_int(o, k, where, "");
    if (!v) json_fail(where, k, "an integer (required)");
    if (*v < lo || *v > hi) json_fail(where, k, "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return *v;
  };
  auto opt_int = [&](const char* k, std::int64_t def, std::int64_t lo, std::int64_t hi) {
    auto v = get_int(o, k, where, "");
    if (!v) return def;
    if (*v < lo || *v > hi) json_fail(where, k, "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return *v;
  };
  d.name = get_string(o, "name", where, "").value_or("model");
  d.kind = get_string(o, "kind", where, "").value_or("decoder");
  if (d.kind != "decoder" && d.kind != "dit") json_fail(where, "kind", "\"decoder\" or \"dit\"");
  d.layers = static_cast<int>(req_int("layers", 1, 100000));
  d.hidden = req_int("hidden_size", 1, 1 << 20);
  d.ffn_hidden = req_int("ffn_hidden_size", 1, 1 << 22);
  d.heads = static_cast<int>(req_int("num_heads", 1, 1 << 16));
  d.kv_heads = static_cast<int>(opt_int("num_kv_heads", d.heads, 1, d.heads));
  d.vocab = opt_int("vocab_size", 0, 0, 1 << 26);
  d.seq_len = req_int("seq_len", 1, 1 << 26);
  d.micro_batch = static_cast<int>(opt_int("micro_batch", 1, 1, 1 << 20));
  d.text_len = opt_int("text_len", 0, 0, 1 << 20);
  d.patch_dim = opt_int("patch_dim", 0, 0, 1 << 24);
  d.tied_embeddings = get_bool(o, "tied_embeddings", where, "").value_or(false);
  d.gated_mlp = get_bool(o, "gated_mlp", where, "").value_or(d.kind == "decoder");
  d.activation_checkpointing = get_string(o, "activation_checkpointing", where, "").value_or("none");
  if (d.activation_checkpointing != "none" && d.activation_checkpointing != "full")
    json_fail(where, "activation_checkpointing", "\"none\" or \"full\"");
  d.wrap = get_string(o, "wrap", where, "").value_or("layer");
  if (d.wrap != "layer" && d.wrap != "sublayer") json_fail(where, "wrap", "\"layer\" or \"sublayer\"");
  d.device = get_string(o, "device", where, "").value_or("H100");
  if (!find_device(d.device)) json_fail(where, "device", "one of H100, H200, A100, B200");
  if (auto v = get_number(o, "achievable_fraction", where, "")) {
    if (!(*v > 0 && *v <= 1)) json_fail(where, "achievable_fraction", "a fraction in (0, 1]");
    d.achievable_fraction = *v;
  }
  d.param_dtype_bytes = static_cast<int>(opt_int("param_dtype_bytes", 2, 1, 8));
  d.reduce_dtype_bytes = static_cast<int>(opt_int("reduce_dtype_bytes", 4, 1, 8));
  d.head_dim = opt_int("head_dim", 0, 0, 1 << 16);
  if (d.head_dim > 0 && d.kind != "decoder") json_fail(where, "head_dim", "absent for a DiT (hidden_size / num_heads)");
  if (d.head_dim == 0 && d.hidden % d.heads != 0) json_fail(where, "num_heads", "a divisor of hidden_size (or set head_dim)");
  d.num_experts = static_cast<int>(opt_int("num_experts", 0, 0, 1 << 16));
  if (d.num_experts > 0) {
    if (d.kind != "decoder") json_fail(where, "num_experts", "absent for a DiT (experts are modelled for decoders)");
    d.experts_per_token = static_cast<int>(opt_int("experts_per_token", 2, 1, d.num_experts));
    d.shared_experts = static_cast<int>(opt_int("shared_experts", 0, 0, 64));
    d.moe_layer_interval = static_cast<int>(opt_int("moe_layer_interval", 1, 1, d.layers));
    d.moe_ffn_hidden = opt_int("moe_ffn_hidden_size", d.ffn_hidden, 1, 1 << 22);
    if (d.wrap != "layer") json_fail(where, "wrap", "\"layer\" for a mixture-of-experts model (experts are their own unit)");
  }
  return d;
}

ModelDescription load_model_file(const std::string& path) { return parse_model_json(read_text_file(path), path); }

SimModel build_sim_model(const ModelDescription& d, const std::string& device_override) {
  const auto dev = find_device(device_override.empty() ? d.device : device_override);
  if (!dev) throw ProfileError(ProfileErrorKind::MalformedTable, "unknown device '" + device_override + "'");
  const double flops_per_ns = dev->peak_bf16_tflops * (d.achievable_fraction > 0 ? d.achievable_fraction : dev->achievable_fraction) * 1e3;
  const double h = double(d.hidden), f = double(d.ffn_hidden);
  // Query / output width and key / value width: heads x head_dim (hidden itself by default).
  const double qd = d.head_dim > 0 ? double(d.heads) * double(d.head_dim) : h;
  const double kvd = d.head_dim > 0 ? double(d.kv_heads) * double(d.head_dim) : h * d.kv_heads / d.heads;
  const double tokens = double(d.seq_len) * d.micro_batch;
  const bool dit = d.kind == "dit";
  const bool ac = d.activation_checkpointing == "full";

  // Parameters per block (biases and norms are a rounding error at these sizes; norms included).
  const double attn_p = 2 * h * qd + 2 * h * kvd;                 // q, o + k, v
  const double cross_p = dit && d.text_len > 0 ? 4 * h * h : 0;   // DiT cross-attention to text
  // One MLP of width w (dense, shared expert or routed expert): parameters and saved bytes per token.
  auto mlp_params = [&](double w) { return (d.gated_mlp ? 3 : 2) * h * w; };
  auto mlp_saved_per_token = [&](double w) { return d.gated_mlp ? 2 * h + 6 * w : 2 * h + 4 * w; };
  const double mlp_p = mlp_params(f);
  const double extra_p = dit ? 6 * h : 2 * h;                     // adaLN modulation / RMSNorm weights
  // Forward FLOPs per block: 2 per multiply-add over every token, plus attention scores.
  const double attn_score = (dit ? 4.0 : 2.0) * d.micro_batch * double(d.seq_len) * double(d.seq_len) * qd;  // causal halves
  const double cross_score = cross_p > 0 ? 4.0 * tokens * double(d.text_len) * h : 0;
  const double attn_f = 2 * tokens * attn_p + attn_score;
  const double cross_f = 2 * tokens * cross_p + cross_score;
  const double mlp_f = 2 * tokens * mlp_p;
  // Saved activation bytes per token (bf16, FlashAttention): docs/simulator.md §activations.
  // norm in and the output projection (h), q and the attention output (qd), k, v; + 4h as before
  const double attn_act = 2 * (2 * h + 2 * qd + 2 * kvd) + 4 * h;
  const double cross_act = cross_p > 0 ? 2 * (3 * h) : 0;
  const double mlp_act = mlp_saved_per_token(f);
  const double block_in = 2 * h;  // what full checkpointing keeps

  // Parallelism shapes (docs/simulator.md §parallelism): activations in the parameter dtype; a TP
  // collective carries tokens x hidden; TP without SP keeps the norm inputs and the fp32 residual
  // whole (6h bytes per token before attention, 2h before the MLP).
  const double act_b = d.param_dtype_bytes;
  const std::int64_t tp_msg = static_cast<std::int64_t>(tokens * h * act_b);
  const std::int64_t attn_repl = static_cast<std::int64_t>(tokens * 6 * h), mlp_repl = static_cast<std::int64_t>(tokens * 2 * h);
  auto attention_shape = [&](ParallelShape& ps) {
    ps.attentions = 1;
    ps.cp_qkv_bytes = static_cast<std::int64_t>(tokens * (qd + 2 * kvd) * act_b);
    ps.cp_out_bytes = static_cast<std::int64_t>(tokens * qd * act_b);
    ps.cp_kv_bytes = static_cast<std::int64_t>(tokens * 2 * kvd * act_b);
    ps.attention_core_ns = static_cast<TimeNs>(std::llround(attn_score / flops_per_ns));
  };

  SimModel m;
  m.name = d.name;
  m.has_parallel_shapes = true;
  m.param_dtype_bytes = d.param_dtype_bytes;
  m.reduce_dtype_bytes = d.reduce_dtype_bytes;
  m.hbm_bytes_per_ns = dev->hbm_TBps * 1e3;
  m.optimizer_reference_world = 1;
  auto ns = [&](double flops) {
    const double t = flops / flops_per_ns;
    if (!(t < 1e15))  // ~11.6 days per block: a description this large is a typo, not a model
      throw ProfileError(ProfileErrorKind::MalformedTable, d.name + ": compute per block exceeds 1e15 ns; check seq_len / sizes");
    return static_cast<TimeNs>(std::llround(t));
  };
  if (double(d.layers) * (attn_p + cross_p + mlp_p) > 1e15)
    throw ProfileError(ProfileErrorKind::MalformedTable, d.name + ": more than 1e15 parameters; check the sizes");

  // Root: embedding (or patch embedding) + final norm + output head.
  const double embed_p = dit ? double(d.patch_dim) * h + 6 * h * h /* timestep MLP */ : double(d.vocab) * h;
  const double head_p = dit ? h * double(d.patch_dim) + 2 * h : (d.tied_embeddings ? 0 : double(d.vocab) * h) + h;
  SimUnit root{"", "", dit ? "DiT" : "Transformer", static_cast<std::int64_t>(embed_p + head_p), true};
  // TP: a decoder's embedding is vocab-parallel and its output head column-parallel (torchtitan);
  // a DiT's patch embedding, timestep MLP and head stay replicated. The final norm is replicated.
  root.tp_replicated_params = dit ? root.param_count : static_cast<std::int64_t>(h);
  root.tail_params = static_cast<std::int64_t>(head_p);
  m.units.push_back(root);
  const double head_f = 2 * tokens * (dit ? double(d.patch_dim) * h : double(d.vocab) * h);
  const double embed_f = dit ? 2 * tokens * double(d.patch_dim) * h : 0;
  m.segments.push_back({0, ns(embed_f), ns(2 * embed_f), static_cast<std::int64_t>(tokens * 2 * h), 0});
  m.segments.back().input_bytes = static_cast<std::int64_t>(tokens * 2 * h);
  m.segments.back().parallel.tp_replicated_saved = m.segments.back().saved_activation_bytes;
  if (!dit) m.segments.back().parallel.tp_fwd_only = 1, m.segments.back().parallel.tp_bytes = tp_msg;

  auto add_unit = [&](const std::string& name, const std::string& group, const char* cls, double params, double fwd_flops,
                      double act_per_token, std::vector<SimPart> parts, double replicated_params, ParallelShape shape) {
    m.units.push_back({name, group, cls, static_cast<std::int64_t>(params), false});
    m.units.back().tp_replicated_params = static_cast<std::int64_t>(replicated_params);
    SimSegment s;
    s.unit = static_cast<int>(m.units.size() - 1);
    s.fwd_ns = ns(fwd_flops);
    s.bwd_ns = ns(2 * fwd_flops + (ac ? fwd_flops : 0));
    const double full = tokens * act_per_token;
    s.saved_activation_bytes = static_cast<std::int64_t>(ac ? tokens * block_in : full);
    s.recompute_activation_bytes = ac ? static_cast<std::int64_t>(full) : 0;
    s.input_bytes = static_cast<std::int64_t>(tokens * block_in);
    if (!ac) s.parts = std::move(parts);  // a checkpointed description has nothing left to select
    s.parallel = shape;
    m.segments.push_back(s);
  };
  // Mixture of experts: routed experts' parameters, compute (experts_per_token of them per
  // token) and activations per routed token; shared experts are dense MLPs inside the layer unit.
  const bool moe = d.num_experts > 0;
  const double fe = double(d.moe_ffn_hidden);
  const double expert_p = moe ? double(d.num_experts) * mlp_params(fe) : 0;
  const double routed = tokens * d.experts_per_token;
  const double expert_f = moe ? 2 * routed * mlp_params(fe) : 0;
  const double expert_act_per_token = moe ? d.experts_per_token * mlp_saved_per_token(fe) : 0;
  const double shared_p = moe ? d.shared_experts * mlp_params(fe) + h * d.num_experts /* router */ : 0;
  const double shared_f = 2 * tokens * shared_p;
  const double shared_act = moe && d.shared_experts > 0 ? d.shared_experts * mlp_saved_per_token(fe) : 0;
  for (int l = 0; l < d.layers; ++l) {
    const std::string base = "layers." + std::to_string(l);
    ParallelShape attn_shape, mlp_shape;
    attention_shape(attn_shape);
    attn_shape.tp_pairs = cross_p > 0 ? 2 : 1;  // self-attention (+ cross-attention)
    attn_shape.tp_bytes = mlp_shape.tp_bytes = tp_msg;
    attn_shape.tp_replicated_saved = attn_repl;
    // A decoder block's two RMSNorm weights (with SP their gradients are all-reduced); a DiT's
    // adaLN norms have no weights of their own.
    attn_shape.sp_norms = dit ? 0 : 2;
    attn_shape.norm_grad_bytes = static_cast<std::int64_t>(h * act_b);
    mlp_shape.tp_pairs = 1;
    mlp_shape.tp_replicated_saved = mlp_repl;
    if (moe && l % d.moe_layer_interval == d.moe_layer_interval - 1) {
      // The layer unit: attention, router and shared experts; then the routed experts' unit.
      ParallelShape layer = attn_shape;
      layer.tp_pairs += d.shared_experts > 0 ? 1 : 0;
      layer.tp_replicated_saved += mlp_repl;
      add_unit(base, base, "MoETransformerBlock", attn_p + extra_p + shared_p, attn_f + shared_f, attn_act + shared_act + 2 * h,
               {{"attention", ns(attn_f), static_cast<std::int64_t>(tokens * attn_act)}}, extra_p + h * d.num_experts, layer);
      ParallelShape ex;
      ex.moe_layers = 1;
      ex.ep_bytes = static_cast<std::int64_t>(routed * h * act_b);
      add_unit(base + ".moe.experts", base, "GroupedExperts", expert_p, expert_f, expert_act_per_token, {}, 0, ex);
      m.units.back().expert = true;
      continue;
    }
    if (d.wrap == "layer") {
      std::vector<SimPart> parts{{"attention", ns(attn_f), static_cast<std::int64_t>(tokens * attn_act)}};
      if (cross_p > 0) parts.push_back({"cross_attention", ns(cross_f), static_cast<std::int64_t>(tokens * cross_act)});
      parts.push_back({"feed_forward", ns(mlp_f), static_cast<std::int64_t>(tokens * mlp_act)});
      ParallelShape block = attn_shape;
      block.tp_pairs += 1;
      block.tp_replicated_saved += mlp_repl;
      add_unit(base, base, dit ? "DiTBlock" : "TransformerBlock", attn_p + cross_p + mlp_p + extra_p,
               attn_f + cross_f + mlp_f, attn_act + cross_act + mlp_act, std::move(parts), extra_p, block);
    } else {
      add_unit(base + ".attention", base, "Attention", attn_p + cross_p + extra_p, attn_f + cross_f, attn_act + cross_act, {}, extra_p,
               attn_shape);
      add_unit(base + ".feed_forward", base, "FeedForward", mlp_p, mlp_f, mlp_act, {}, 0, mlp_shape);
    }
  }
  m.segments.push_back({0, ns(head_f), ns(2 * head_f),
                        static_cast<std::int64_t>(tokens * (dit ? 2 * double(d.patch_dim) : 4 * double(d.vocab))), 0});
  m.segments.back().input_bytes = static_cast<std::int64_t>(tokens * 2 * h);
  if (dit) m.segments.back().parallel.tp_replicated_saved = m.segments.back().saved_activation_bytes;
  else {
    ParallelShape& tail = m.segments.back().parallel;
    tail.tp_bwd_only = 1, tail.tp_bytes = tp_msg;
    tail.sp_norms = 1, tail.norm_grad_bytes = static_cast<std::int64_t>(h * act_b);  // the final norm
    tail.logits_bytes = static_cast<std::int64_t>(tokens * double(d.vocab) * act_b);
    tail.loss_stat_bytes = static_cast<std::int64_t>(tokens * 4);
  }
  // AdamW: reads and writes fp32 params, grads, exp_avg, exp_avg_sq (~28 B/param moved); here
  // expressed for the whole model on one rank (optimizer_reference_world = 1).
  m.optimizer_ns = static_cast<TimeNs>(std::llround(28.0 * double(m.total_params()) / m.hbm_bytes_per_ns));
  m.other_memory_bytes = 1LL << 30;  // CUDA context, cuBLAS workspace, inputs (~1 GiB)
  return m;
}

}  // namespace ss::sim
