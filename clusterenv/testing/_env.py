"""Processes of a launch that follows the ``env://`` contract (DeepSpeed's launcher,
``torch.distributed.launch``, a launch script)."""

from __future__ import annotations

from clusterenv.testing._launch import Launch, port, positive, rank_of

__all__ = ["env_launch", "examples"]


def env_launch(
    nnodes: int = 1,
    nproc_per_node: int = 1,
    rank: int = 0,
    *,
    master_addr: str = "10.0.0.1",
    master_port: int = 29500,
) -> Launch:
    """Process ``rank`` of ``nnodes`` x ``nproc_per_node`` with exactly the variables
    ``init_method="env://"`` reads (torch.distributed documentation, "Environment
    variable initialization"), ranks placed by node."""
    positive("env_launch", nnodes=nnodes, nproc_per_node=nproc_per_node)
    rank_of("env_launch", rank, nnodes * nproc_per_node)
    port("env_launch", master_port)
    return Launch(
        {
            "RANK": str(rank),
            "WORLD_SIZE": str(nnodes * nproc_per_node),
            "LOCAL_RANK": str(rank % nproc_per_node),
            "LOCAL_WORLD_SIZE": str(nproc_per_node),
            "MASTER_ADDR": master_addr,
            "MASTER_PORT": str(master_port),
        }
    )


def examples() -> list[Launch]:
    """One launch per role this source produces: the contract tests run every source's."""
    return [env_launch(2, 4, 5)]
