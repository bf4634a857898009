"""ShardScope plans in torchtitan, without editing torchtitan.

torchtitan builds its model on the meta device and shards it in its model spec's parallelize step
(`ModelSpec.parallelize_fn`, e.g. `parallelize_llama`); every config registry function returns a
`Trainer.Config` whose `model_spec` can be changed before the trainer is built. The hook wraps
that step:

    # my_configs.py, used as: torchtitan.train --module my_configs --config llama3_8b_planned
    from torchtitan.models.llama3.config_registry import llama3_8b
    from shardscope.torchtitan import parallelize_hook

    def llama3_8b_planned():
        config = llama3_8b()
        parallelize_hook(config.model_spec, plan="plan.json")
        return config

Before torchtitan's parallelize step it wraps the plan's checkpointed modules (as torchtitan's own
activation checkpointing does, so FSDP then shards the wrapper); after it, it sets each planned
unit's `reshard_after_forward` on the sharded model (`FSDPModule.set_reshard_after_forward`,
shardscope.plan.apply_plan on a sharded model). `force_sum_reduction=True` makes every FSDP unit
reduce with SUM and divide afterwards (gloo has no PREMUL_SUM: CPU runs).

`shardscope plan --trainer torchtitan` prints the torchtitan options and this hook for a plan.
"""
import functools


def _fsdp_units(model):
    from .hooks import _fsdp_module_class

    cls = _fsdp_module_class()
    return [m for m in model.modules() if cls is not None and isinstance(m, cls)]


def parallelize_hook(model_spec, plan=None, force_sum_reduction=False):
    """Wraps `model_spec.parallelize_fn` (once) so that the plan is applied around it. Returns the spec."""
    original = getattr(model_spec.parallelize_fn, "_shardscope_original", model_spec.parallelize_fn)

    @functools.wraps(original)
    def parallelize(model, *args, **kwargs):
        from .plan import apply_checkpointing, apply_plan, load_plan, planned_checkpointing

        loaded = load_plan(plan) if plan is not None else None
        if loaded is not None and planned_checkpointing(loaded):
            apply_checkpointing(model, loaded)
        out = original(model, *args, **kwargs)
        sharded = out if out is not None else model
        if force_sum_reduction:
            for unit in _fsdp_units(sharded):
                unit.set_force_sum_reduction_for_comms(True)
        if loaded is not None:
            apply_plan(sharded, dict(loaded, activation_checkpointing={}))
        return out

    parallelize._shardscope_original = original
    model_spec.parallelize_fn = parallelize
    return model_spec
