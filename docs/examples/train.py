"""A minimal Lightning training script whose Trainer follows the allocation.

    python train.py                                   # local: CPU, or every visible GPU
    torchrun --nproc_per_node=2 train.py              # one node, 2 ranks
    srun -N2 --ntasks-per-node=4 python train.py      # inside an sbatch/salloc allocation

--num_nodes and --devices are neural-lam's options; left out, they come from the launch.
"""

from __future__ import annotations

import argparse

import lightning.pytorch as pl
import torch

import clusterenv.lightning as cl


class Regression(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(8, 1)

    def training_step(self, batch: list[torch.Tensor], _: int) -> torch.Tensor:
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cl.add_trainer_args(parser)
    parser.add_argument("--max_steps", type=int, default=20)
    args = parser.parse_args()

    trainer = pl.Trainer(
        **cl.trainer_kwargs(args),
        max_steps=args.max_steps,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
    )
    cl.rank_zero_print(f"training on {trainer.num_nodes} node(s) x {trainer.num_devices} device(s)")
    data = torch.utils.data.TensorDataset(torch.randn(256, 8), torch.randn(256, 1))
    trainer.fit(Regression(), torch.utils.data.DataLoader(data, batch_size=16))
    cl.rank_zero_print(f"done after {trainer.global_step} steps, world size {trainer.world_size}")


if __name__ == "__main__":
    main()
