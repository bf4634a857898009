"""FSDP2 (fully_shard) unit detection on CPU with gloo. Debian's python3-torch 1.13 predates
FSDP2 (torch >= 2.4), so there this test is skipped with that reason."""
import _torch_or_skip  # noqa: F401

import unittest

import torch
import torch.nn as nn

from shardscope import hooks
from shardscope.backends import RecordingBackend


def _fully_shard():
    for path in ("torch.distributed.fsdp", "torch.distributed._composable.fsdp"):
        try:
            mod = __import__(path, fromlist=["fully_shard"])
            if hasattr(mod, "fully_shard"):
                return mod.fully_shard
        except Exception:
            continue
    return None


if _fully_shard() is None:  # reported by ctest as skipped (SKIP_RETURN_CODE 77), not as passed
    import sys

    sys.stderr.write("SKIP: torch %s has no FSDP2 fully_shard\n" % torch.__version__)
    sys.exit(77)


def _blocks(n=3):
    """A root over n blocks of Linear, ReLU, Linear: 1 + 4n modules."""
    return nn.Sequential(*[nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4)) for _ in range(n)])


def _ranges_by_phase(model, backward_ranges):
    """{phase: sorted module names} of the ranges of one forward and backward of model, annotated
    with the given backward range scope."""
    backend = RecordingBackend()
    handle = hooks.annotate(model, backend=backend, backward_ranges=backward_ranges)
    try:
        model(torch.randn(2, 4, requires_grad=True)).sum().backward()
    finally:
        handle.remove()
    out = {}
    for message in backend.messages():
        _, phase, name = message.split(":", 2)
        out.setdefault(phase, []).append(name)
    return {phase: sorted(names) for phase, names in out.items()}


class Fsdp2Tests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import torch.distributed as dist
        from torch.distributed.device_mesh import init_device_mesh

        # A store on port 0: the system picks a free port, so no other test can hold it.
        store = dist.TCPStore("127.0.0.1", 0, 1, True)
        dist.init_process_group("gloo", store=store, rank=0, world_size=1)
        cls.mesh = init_device_mesh("cpu", (1,))

    @classmethod
    def tearDownClass(cls):
        import torch.distributed as dist

        dist.destroy_process_group()

    def test_units_and_reshard_policy(self):
        fully_shard = _fully_shard()
        model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))
        fully_shard(model[0], mesh=self.mesh, reshard_after_forward=False)
        fully_shard(model[1], mesh=self.mesh, reshard_after_forward=True)
        fully_shard(model, mesh=self.mesh)
        self.assertEqual(hooks.fsdp_info(model[0]), (True, "false"))
        self.assertEqual(hooks.fsdp_info(model[1]), (True, "true"))
        count, nbytes = hooks.module_params(model[0])
        self.assertEqual(count, 20)
        self.assertEqual(nbytes, 80)

    def test_backward_ranges_for_units_only(self):
        fully_shard = _fully_shard()
        model = _blocks()
        for block in model:
            fully_shard(block, mesh=self.mesh)
        fully_shard(model, mesh=self.mesh)
        every_module = sorted(name for name, _ in model.named_modules())
        units = sorted(["", "0", "1", "2"])
        by_module = _ranges_by_phase(model, "modules")
        self.assertEqual(by_module["fwd"], every_module)
        self.assertEqual(by_module["bwd"], every_module)
        by_unit = _ranges_by_phase(model, "units")
        self.assertEqual(by_unit["fwd"], every_module)  # forward ranges stay per module
        self.assertEqual(by_unit["bwd"], units)

    def test_units_scope_without_fsdp_keeps_every_backward_range(self):
        model = _blocks(2)
        every_module = sorted(name for name, _ in model.named_modules())
        self.assertEqual(_ranges_by_phase(model, "units")["bwd"], every_module)

    def test_unknown_scope_is_refused(self):
        with self.assertRaises(ValueError):
            hooks.Tracker(RecordingBackend(), backward_ranges="layers")


if __name__ == "__main__":
    unittest.main()
