"""torchtitan config registry entries for its llama3 debug model on CPU (gloo), used as
`--module titan_cpu_config --config llama3_debug_cpu` by titan_cpu_launch.py (torchtitan loads a
config function from any importable module; nothing in torchtitan is edited).

What differs from torchtitan's own `llama3_debugmodel` (6 layers, dim 256, vocabulary 2048):
* attention: SDPA instead of FlexAttention (which has no CPU backward), swapped in each layer's
  config as torchtitan's graph_trainer test helper does (`build_decoder_config_for_backend`);
* a short sequence and batch, no checkpoint, no validation, data and tokenizer from
  $SS_TITAN_ASSETS (titan_assets.py);
* its parallelize step is wrapped by `shardscope.torchtitan.parallelize_hook`: gloo has no
  PREMUL_SUM, so every FSDP unit sums and divides instead (`set_force_sum_reduction_for_comms`),
  and a ShardScope plan ($SHARDSCOPE_PLAN) is applied to the sharded model.
Variants: `_full_ac` (torchtitan's FullAC), `_no_ac`, `_simple_fsdp` (graph_trainer's SimpleFSDP),
`_validate` (its validator on, offline);
`qwen3_moe_debug_cpu`: torchtitan's Qwen3 MoE debug config with a smaller model (expert
parallelism from the command line: `--parallelism.expert_parallel_degree 2`).
"""
import os

SEQ_LEN = int(os.environ.get("SS_TITAN_SEQ", "256"))
BATCH = int(os.environ.get("SS_TITAN_BATCH", "2"))


def _with_sdpa(spec):
    from torchtitan.models.common.attention import ScaledDotProductAttention

    for layer in spec.model.layers:
        layer.attention.inner_attention = ScaledDotProductAttention.Config()
    return spec


def _sdpa_model_spec(registry):
    return _with_sdpa(registry("debugmodel", attn_backend="flex"))


def _cpu(config):
    from shardscope.torchtitan import parallelize_hook

    assets = os.environ.get("SS_TITAN_ASSETS", "")
    config.hf_assets_path = os.path.join(assets, "tokenizer")
    config.dataloader.dataset_path = os.path.join(assets, "data")
    config.dump_folder = os.environ.get("SS_TITAN_DUMP", "./outputs")
    config.training.seq_len = SEQ_LEN
    config.training.local_batch_size = BATCH
    config.training.steps = int(os.environ.get("SS_TITAN_STEPS", "4"))
    config.checkpoint.enable = False
    config.validator.enable = False
    config.metrics.log_freq = 1
    parallelize_hook(config.model_spec, plan=os.environ.get("SHARDSCOPE_PLAN") or None, force_sum_reduction=True)
    return config


def llama3_debug_cpu():
    """torchtitan's debug model as it ships (selective activation checkpointing on), on CPU."""
    from torchtitan.models.llama3 import model_registry
    from torchtitan.models.llama3.config_registry import llama3_debugmodel

    config = llama3_debugmodel()
    config.model_spec = _sdpa_model_spec(model_registry)
    return _cpu(config)


def llama3_debug_cpu_no_ac():
    config = llama3_debug_cpu()
    config.activation_checkpoint = None
    return config


def llama3_debug_cpu_full_ac():
    from torchtitan.distributed.activation_checkpoint import FullAC

    config = llama3_debug_cpu()
    config.activation_checkpoint = FullAC.Config()
    return config


def llama3_debug_cpu_validate():
    """As it ships, with torchtitan's validator on: after the first step (and every 10th), one
    batch of the same local data set under no_grad, the model in eval mode."""
    config = llama3_debug_cpu()
    config.validator.enable = True
    config.validator.steps = 1
    config.validator.dataloader.dataset = "c4_test"  # its own default, c4_validation, streams from the network
    config.validator.dataloader.dataset_path = config.dataloader.dataset_path
    return config


def llama3_debug_cpu_simple_fsdp():
    """torchtitan's graph_trainer with SimpleFSDP (the compiler-based FSDP: each parameter is a
    DTensor gathered by a parametrization at use), run eagerly (compile mode None: its own eager
    reference path), on CPU."""
    from torchtitan.experiments.graph_trainer.configs import GraphTrainerCompileConfig, to_graph_trainer_config
    from torchtitan.experiments.graph_trainer.llama3 import model_registry as graph_registry
    from torchtitan.models.llama3 import model_registry
    from torchtitan.models.llama3.config_registry import llama3_debugmodel

    base = llama3_debugmodel()
    base.model_spec = _sdpa_model_spec(model_registry)
    config = to_graph_trainer_config(base, lambda flavor: _sdpa_model_spec(graph_registry))
    config.compile = GraphTrainerCompileConfig(enable=False, mode=None)
    config.activation_checkpoint = None
    return _cpu(config)


# torchtitan's Qwen3 MoE debug model made small enough for two CPU ranks (its own: 8 layers of 64
# experts, top 8, 302 M parameters): the same builder, 4 layers of 8 experts, top 2.
MOE_LAYERS, MOE_EXPERTS, MOE_TOP_K, MOE_HIDDEN = 4, 8, 2, 64


def qwen3_moe_debug_cpu(keep_checkpointing=False):
    """torchtitan's Qwen3 MoE debug config (softmax router, routed experts through
    torch._grouped_mm, its all-to-all token dispatcher under expert parallelism) with the smaller
    model, on CPU. Activation checkpointing off (the config ships selective checkpointing, which
    the llama tests cover): this one is about the experts' parameter groups and their dispatch.
    qwen3_moe_debug_cpu_ac keeps the checkpointing as shipped."""
    from torchtitan.models.common.rope import CosSinRoPE
    from torchtitan.models.qwen3 import _build_qwen3_moe_layers, model_registry
    from torchtitan.models.qwen3.config_registry import qwen3_moe_debug

    config = qwen3_moe_debug()
    spec = model_registry("debugmodel_moe")
    head_dim = 128  # as torchtitan's debugmodel_moe
    spec.model.layers = _build_qwen3_moe_layers(
        n_layers=MOE_LAYERS, dim=spec.model.dim, n_heads=16, n_kv_heads=8, head_dim=head_dim,
        moe_hidden_dim=MOE_HIDDEN, num_experts=MOE_EXPERTS, top_k=MOE_TOP_K, attn_backend="flex",
        moe_comm_backend="standard", rope=CosSinRoPE.Config(dim=head_dim, max_seq_len=4096, theta=1000000.0))
    config.model_spec = _with_sdpa(spec)
    if not keep_checkpointing:
        config.activation_checkpoint = None
    return _cpu(config)


def qwen3_moe_debug_cpu_ac():
    """qwen3_moe_debug_cpu with torchtitan's activation checkpointing as the config ships it."""
    return qwen3_moe_debug_cpu(keep_checkpointing=True)
