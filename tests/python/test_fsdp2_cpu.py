"""FSDP2 (fully_shard) unit detection on CPU with gloo. Debian's python3-torch 1.13 predates
FSDP2 (torch >= 2.4), so there this test is skipped with that reason."""
import _torch_or_skip  # noqa: F401

import unittest

import torch
import torch.nn as nn

from shardscope import hooks


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


class Fsdp2Tests(unittest.TestCase):
    def test_units_and_reshard_policy(self):
        import torch.distributed as dist

        # A store on port 0: the system picks a free port, so no other test can hold it.
        store = dist.TCPStore("127.0.0.1", 0, 1, True)
        dist.init_process_group("gloo", store=store, rank=0, world_size=1)
        try:
            fully_shard = _fully_shard()
            from torch.distributed.device_mesh import init_device_mesh

            mesh = init_device_mesh("cpu", (1,))
            model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))
            fully_shard(model[0], mesh=mesh, reshard_after_forward=False)
            fully_shard(model[1], mesh=mesh, reshard_after_forward=True)
            fully_shard(model, mesh=mesh)
            self.assertEqual(hooks.fsdp_info(model[0]), (True, "false"))
            self.assertEqual(hooks.fsdp_info(model[1]), (True, "true"))
            count, nbytes = hooks.module_params(model[0])
            self.assertEqual(count, 20)
            self.assertEqual(nbytes, 80)
        finally:
            dist.destroy_process_group()


if __name__ == "__main__":
    unittest.main()
