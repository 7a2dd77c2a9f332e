"""A real DDP fit (gloo, 2 steps) of a tiny model with clusterenv's Trainer kwargs.

Usage: fit.py OUT_DIR {lightning|pytorch_lightning}. Every rank writes OUT_DIR/<rank>.json
with what the Trainer and torch.distributed saw next to clusterenv's spec.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path
from typing import Any, cast

import torch

import clusterenv.lightning as cl
from clusterenv import detect_environment

out, package = Path(sys.argv[1]), cast(cl.Package, sys.argv[2])
pl: Any = importlib.import_module(
    {"lightning": "lightning.pytorch", "pytorch_lightning": "pytorch_lightning"}[package]
)
seen: dict[str, Any] = {}


class Tiny(pl.LightningModule):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch: list[torch.Tensor], _: int) -> torch.Tensor:
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def on_train_start(self) -> None:
        seen["distributed"] = [torch.distributed.get_rank(), torch.distributed.get_world_size()]

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.1)


kwargs = cl.trainer_kwargs(package=package)
trainer = pl.Trainer(
    **kwargs,
    max_steps=2,
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
    default_root_dir=out,
)
data = torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
trainer.fit(Tiny(), torch.utils.data.DataLoader(data, batch_size=8))
environment = trainer._accelerator_connector.cluster_environment
record = {
    "spec": detect_environment().model_dump(mode="json"),
    "trainer": {
        name: getattr(trainer, name)
        for name in ("world_size", "global_rank", "local_rank", "node_rank", "num_nodes")
    },
    "distributed": seen.get("distributed"),
    "steps": trainer.global_step,
    "environment": [cls.__name__ for cls in type(environment).__mro__],
    "auto_requeue": getattr(environment, "auto_requeue", None),
}
(out / f"{trainer.global_rank}.json").write_text(json.dumps(record))
torch.distributed.barrier()  # leave together: rank 0 holds the store the others still use
# torch 2.13's gloo sometimes aborts in its exit teardown ("terminate called without an
# active exception", exit 134 under srun; see ddp_train.py): leave without it, all flushed.
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
