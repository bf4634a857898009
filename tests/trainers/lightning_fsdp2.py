#!/usr/bin/env python3
"""PyTorch Lightning's FSDP2 path (ModelParallelStrategy) on CPU with gloo, 2 ranks:

    torchrun --nproc_per_node=2 tests/trainers/lightning_fsdp2.py --steps 3 --summary FILE

The fast record tests' small model (tests/python/trainer_patterns.py) whose blocks and root are
sharded with fully_shard in `configure_model` (Lightning's way), trained by `lightning.Trainer` on
random tokens, as Lightning is used: the loss logged with sync_dist (an all-reduce a step) and a
validation batch after every second training batch (`val_check_interval=2`, a forward under
no_grad between optimizer steps). --summary writes, from rank 0, the FSDP units, the collectives
each training batch issues and those of each validation, as the job counts them (job_counts.py).
"""
import argparse
import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(os.path.dirname(HERE), "python")]
import job_counts  # noqa: E402
from trainer_patterns import DIM, LAYERS, VOCAB, Block  # noqa: E402  (the fast record tests' model)

BATCH, SEQ = 4, 32


def main():
    import lightning as L
    from lightning.pytorch.strategies import ModelParallelStrategy

    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--summary", default="")
    a = ap.parse_args()
    collectives, validations, units = [], [], {}
    job_counts.count_fsdp_collectives(collectives)

    class LM(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(VOCAB, DIM)
            self.layers = nn.ModuleList(Block() for _ in range(LAYERS))
            self.head = nn.Linear(DIM, VOCAB, bias=False)

        def configure_model(self):
            from torch.distributed.fsdp import fully_shard

            mesh = self.device_mesh["data_parallel"]
            for b in self.layers:
                fully_shard(b, mesh=mesh)
            fully_shard(self, mesh=mesh)

        def forward(self, ids):
            x = self.tok(ids)
            for b in self.layers:
                x = b(x)
            return self.head(x)

        def on_train_batch_start(self, batch, batch_idx):
            if not units:
                units.update(job_counts.fsdp_units(self))
            collectives.append([])

        def training_step(self, batch, batch_idx):
            (ids,) = batch
            loss = F.cross_entropy(self(ids).flatten(0, 1), ids.flatten())
            self.log("loss", loss, sync_dist=True)
            return loss

        # A validation's collectives are counted apart from the training batch before it.
        def on_validation_start(self):
            collectives.append([])

        def on_validation_end(self):
            validations.append(collectives.pop())

        def validation_step(self, batch, batch_idx):
            (ids,) = batch
            self.log("val_loss", F.cross_entropy(self(ids).flatten(0, 1), ids.flatten()), sync_dist=True)

        def configure_optimizers(self):
            return torch.optim.AdamW(self.parameters(), lr=1e-3)

    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randint(0, VOCAB, (BATCH * 2 * a.steps, SEQ)))
    loader = torch.utils.data.DataLoader(data, batch_size=BATCH)
    strategy = ModelParallelStrategy(data_parallel_size=2, tensor_parallel_size=1, process_group_backend="gloo")
    trainer = L.Trainer(accelerator="cpu", devices=2, strategy=strategy, max_steps=a.steps, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                        val_check_interval=2, check_val_every_n_epoch=None, limit_val_batches=1, num_sanity_val_steps=0)
    trainer.fit(LM(), loader, loader)
    if a.summary and trainer.global_rank == 0:
        with open(a.summary, "w") as f:
            json.dump({"units": units, "collectives": [sorted(c) for c in collectives],
                       "validations": [sorted(c) for c in validations]}, f)


if __name__ == "__main__":
    main()
