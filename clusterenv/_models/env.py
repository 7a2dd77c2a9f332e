"""Processes of a launch that follows the ``env://`` contract (DeepSpeed's launcher,
``torch.distributed.launch``, a launch script)."""

from __future__ import annotations

from clusterenv._models.launch import Launch, port, positive, rank_of

__all__ = ["deepspeed_env", "env_launch", "examples"]


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


def deepspeed_env(
    nodes: int = 1,
    ranks_per_node: int = 1,
    rank: int = 0,
    *,
    master_addr: str = "10.0.0.1",
    master_port: int = 29500,
) -> Launch:
    """Rank ``rank`` of the DeepSpeed launcher (``deepspeed --num_nodes --num_gpus``, ranks
    placed by node), as ``deepspeed/launcher/launch.py`` 0.19.8 sets it and recorded from
    real launches: ``LOCAL_SIZE``, ``CROSS_RANK`` (the node) and ``CROSS_SIZE`` (nodes)
    instead of ``LOCAL_WORLD_SIZE``, and the node's devices in ``CUDA_VISIBLE_DEVICES``."""
    launch = env_launch(
        nodes, ranks_per_node, rank, master_addr=master_addr, master_port=master_port
    )
    del launch["LOCAL_WORLD_SIZE"]
    return Launch(
        launch
        | {
            "LOCAL_SIZE": str(ranks_per_node),
            "CROSS_RANK": str(rank // ranks_per_node),
            "CROSS_SIZE": str(nodes),
            "CUDA_VISIBLE_DEVICES": ",".join(str(i) for i in range(ranks_per_node)),
        }
    )


def examples() -> list[Launch]:
    """One launch per role this source produces: the contract tests run every source's."""
    return [env_launch(2, 4, 5), deepspeed_env(2, 2, 3)]
