"""PyTorch's FSDPMemTracker, made to follow grouped units (fully_shard([layers.0, layers.1])) and
units called more than once a step from outside the model (a chunked loss's head), without
holding memory the job would have freed.

FSDPMemTracker (torch.distributed._tools.fsdp2_mem_tracker, torch 2.15) replaces each FSDP unit's
forward hooks with its own, one pair per module. A unit made of several modules shares one FSDP
state, whose hooks are registered as a group: the pre-forward runs for each module, the full
post-forward (reshard, pre-backward registration) only when the last module of the group has run.
The tracker's per-module hooks call the state's post-forward after every module, so inside the
tracked step a bucket of two layers is resharded after the first and gathered again for the second
(9 all-gathers instead of 7 on a four-layer model with one pair). And on leaving, it restores the
hooks through the state's single handle, so the first module keeps the tracker's hook and the next
step raises "FSDPMemTracker does not support memory tracking for multiple iterative calls".

`FSDPMemTracker` here is the same tracker (same categories, same snapshots, same use) with grouped
units instrumented the way FSDP registers them: the tracker's snapshots wrap the group's hooks, the
group's gating stays as it is, and leaving restores FSDP's own group hooks. Units of one module
are left to PyTorch's code.

And PyTorch's tracker keeps each unit's last unsharded gradient alive through the unit's
reduce-scatter (a local variable of its post-backward hook), so the step it tracks holds more than
the job does; here it does not.

PyTorch's tracker also raises the same error when a unit is called again, in the tracked step,
from outside every module. torchtitan's chunked loss does that: it runs the output head once per
chunk. A pipeline stage does it too: it runs once per micro-batch. Here such a call counts as one
more call of the unit.

    from shardscope.mem_tracker import FSDPMemTracker
    with FSDPMemTracker(model, optimizer) as tracker:
        ...one step...
    tracker.get_tracker_snapshot("peak")
"""
import inspect
from functools import wraps

from torch.distributed._tools import fsdp2_mem_tracker as _torch_tracker
from torch.distributed.fsdp import FSDPModule

__all__ = ["FSDPMemTracker", "grouped_states"]


def grouped_states(root):
    """FSDP states of `root`'s units that hold several modules and parameters, in module order."""
    states, seen = [], set()
    for module in root.modules():
        if not isinstance(module, FSDPModule):
            continue
        state = module._get_fsdp_state()
        if id(state) in seen or state._fsdp_param_group is None or len(state._modules) < 2:
            continue
        seen.add(id(state))
        states.append(state)
    return states


class FSDPMemTracker(_torch_tracker.FSDPMemTracker):
    """FSDPMemTracker that keeps a grouped unit's hooks grouped, takes a unit called again from
    outside the model as one more call, and holds no gradient the job frees (the module's text)."""

    def _instrument_fsdp_module(self):
        self._grouped = grouped_states(self._root_mod)
        groups = [s._fsdp_param_group for s in self._grouped]
        # PyTorch's instrumentation passes by a unit without parameters: the grouped units' are
        # set aside while it runs.
        for state in self._grouped:
            state._fsdp_param_groups = []
        try:
            super()._instrument_fsdp_module()
        finally:
            for state, group in zip(self._grouped, groups):
                state._fsdp_param_groups = [group]
        self._grouped_saved = []
        for state, group in zip(self._grouped, groups):
            first = state._modules[0]
            state._pre_forward_hook_handle.remove()  # one handle holds every module's pre and post hooks
            handle = self._register_group_hooks(state, self._tracked_pre_forward(state),
                                                self._tracked_post_forward(state))
            state._pre_forward_hook_handle = state._post_forward_hook_handle = handle
            self._instrument_fsdp_sharded_params_grads(group)
            # The group's backward hooks run once per unit: its stats go to the first module.
            self._grouped_saved.append((state, group.pre_backward, group.post_backward))
            group.pre_backward = self._fsdp_param_group_pre_backward(first, group.pre_backward)
            group.post_backward = self._fsdp_param_group_post_backward(first, group.post_backward)

    def _deregister_module_and_optimizer_hooks(self):
        super()._deregister_module_and_optimizer_hooks()
        for state, pre_backward, post_backward in getattr(self, "_grouped_saved", []):
            state._pre_forward_hook_handle.remove()
            handle = self._register_group_hooks(state, state._pre_forward, state._post_forward)
            state._pre_forward_hook_handle = state._post_forward_hook_handle = handle
            state._fsdp_param_group.pre_backward = pre_backward
            state._fsdp_param_group.post_backward = post_backward
        self._grouped_saved = []

    def _fsdp_state_pre_forward(self, fsdp_mod, orig_fsdp_state_pre_fw):
        """PyTorch's pre-forward snapshots, with a unit called again from outside every module in
        the tracked step taken as one more call of it (torchtitan's chunked loss runs the output
        head once per chunk; a pipeline stage runs once per micro-batch). PyTorch's tracker takes
        such a call for the next iteration and raises; here its snapshots go on the unit's lists."""
        tracked = super()._fsdp_state_pre_forward(fsdp_mod, orig_fsdp_state_pre_fw)

        def pre_forward(*args, **kwargs):
            earlier = self.memory_tracking.get(fsdp_mod)
            if earlier is None or self._mod_tracker.is_bw or not self._called_from_outside(fsdp_mod):
                return tracked(*args, **kwargs)
            del self.memory_tracking[fsdp_mod]
            try:
                return tracked(*args, **kwargs)
            finally:
                again = self.memory_tracking.get(fsdp_mod)
                self.memory_tracking[fsdp_mod] = earlier
                if again is not None and again is not earlier:
                    for state, snapshots in again.snapshots.items():
                        earlier.snapshots.setdefault(state, []).extend(snapshots)

        return pre_forward

    def _fsdp_param_group_post_backward(self, fsdp_mod, orig_fsdp_param_group_post_backward):
        """PyTorch's post-backward snapshots (torch 2.15's code), less one reference: its loop over
        the unit's parameters leaves the last one's unsharded gradient bound to a local variable
        through FSDP's post-backward, so that gradient outlives the reduce-scatter that frees it.
        The tracker then measures a job that holds more than the job does: torchtitan's output head
        (2 MiB of fp32 gradient) raised its tracked step's peak by 2 MiB, as a recording of that
        step showed (72.62 MiB, the untracked steps 70.62)."""
        types = _torch_tracker

        @wraps(orig_fsdp_param_group_post_backward)
        def post_backward(*args, **kwargs):
            fsdp_state = fsdp_mod._get_fsdp_state()
            group = fsdp_state._fsdp_param_group
            if group is not None:
                for fsdp_param in group.fsdp_params:
                    if fsdp_param._unsharded_param.grad is not None:
                        self._update_and_maybe_create_winfos(fsdp_param._unsharded_param.grad,
                                                             types._FSDPRefType.UNSHARDED_GRAD, update_existing=True)
            mod_stat = self.memory_tracking[fsdp_mod]
            mod_stat.snapshots.setdefault(types._FSDPModState.BEF_POST_BW, []).append(self.get_tracker_snapshot())
            self._fsdp_state = types._FSDPState.POST_BW
            orig_fsdp_param_group_post_backward(*args, **kwargs)
            group = fsdp_state._fsdp_param_group
            if group is not None:
                for fsdp_param in group.fsdp_params:
                    if fsdp_param.sharded_param.grad is not None:
                        self._update_and_maybe_create_winfos(fsdp_param.sharded_param.grad, types._FSDPRefType.SHARDED_GRAD)
            mod_stat.snapshots.setdefault(types._FSDPModState.AFT_POST_BW, []).append(self.get_tracker_snapshot())

        return post_backward

    def _called_from_outside(self, fsdp_mod):
        """Whether fsdp_mod runs inside no other module (ModTracker's parents: "Global" alone)."""
        fqn = self._mod_tracker.get_known_fqn(fsdp_mod)
        return self._mod_tracker.parents - {fqn} == {"Global"}

    @staticmethod
    def _register_group_hooks(state, pre_hook, post_hook):
        """FSDP's own registration of a grouped unit's forward hooks (FSDPState.init); before
        torch 2.15 it took no output cast."""
        from torch.distributed.fsdp._fully_shard._fsdp_state import _register_group_forward_hooks

        args = [state._modules, pre_hook, post_hook, state._modules_to_run_forward]
        if len(inspect.signature(_register_group_forward_hooks).parameters) > len(args):
            args.append(state._cast_output_dtype)
        return _register_group_forward_hooks(*args)

    def _tracked_pre_forward(self, state):
        """The state's pre-forward, inside the tracker's snapshots of the module it runs for."""
        def pre_forward(module, args, kwargs):
            return self._fsdp_state_pre_forward(module, state._pre_forward)(module, args, kwargs)

        return pre_forward

    def _tracked_post_forward(self, state):
        """The state's full post-forward (the group's last module), inside the tracker's snapshots."""
        def post_forward(module, inputs, output):
            return self._fsdp_state_post_forward(module, state._post_forward)(module, inputs, output)

        return post_forward

