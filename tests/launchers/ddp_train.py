"""A plain PyTorch DDP script (CPU, gloo) that trains three steps and records, per rank,
what torch.distributed says beside what clusterenv detected: ``ddp_train.py OUT`` uses
``clusterenv.torch``; ``ddp_train.py OUT --plain`` only ``env://`` (for ``eval "$(clusterenv
env)"``) and proves it never imported clusterenv."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist


def main(out: Path, plain: bool) -> None:
    if plain:
        dist.init_process_group("gloo")  # env://, from the shell's exports
        spec = None
    else:
        import clusterenv  # noqa: PLC0415 - the plain run must not import it
        import clusterenv.torch  # noqa: PLC0415

        spec = clusterenv.torch.init_process_group(timeout=120)
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)  # different data per rank: DDP must still agree on the weights
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    weight = model.module.weight.detach().flatten()
    everyone = [torch.zeros_like(weight) for _ in range(world)]
    dist.all_gather(everyone, weight)
    record = {
        "torch": {"rank": rank, "world_size": world},
        "same_weights": all(torch.equal(other, everyone[0]) for other in everyone),
        "imported_clusterenv": "clusterenv" in sys.modules,
        "spec": None if spec is None else json.loads(spec.model_dump_json()),
        # What the pre-flight check of init_process_group found (a correct launch: nothing).
        "preflight": None if spec is None else [f.id for f in clusterenv.preflight(spec)],
    }
    (out / f"{rank}.json").write_text(json.dumps(record))
    dist.barrier()  # leave together: rank 0 holds the store the others still use
    # torch 2.13's gloo threads are sometimes still joinable when C++ statics are destroyed
    # at exit ("terminate called without an active exception", 1 run in 5 under srun):
    # leave without that teardown, the record written and flushed.
    os._exit(0)


if __name__ == "__main__":
    # The DeepSpeed launcher puts --local_rank=N before the script's own arguments.
    folder = next(arg for arg in sys.argv[1:] if not arg.startswith("--"))
    main(Path(folder), "--plain" in sys.argv[1:])
