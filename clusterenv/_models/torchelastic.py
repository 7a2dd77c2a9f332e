"""torchrun (torch.distributed.run) workers."""

from __future__ import annotations

from clusterenv._models.launch import Launch, check, port, positive

__all__ = ["examples", "torchrun_env"]


def torchrun_env(
    nnodes: int = 1,
    nproc_per_node: int = 1,
    rank: int = 0,
    *,
    master_addr: str = "localhost",
    master_port: int = 29500,
    run_id: str = "none",
    restart_count: int = 0,
    max_restarts: int = 0,
) -> Launch:
    """The environment of worker ``rank`` of ``torchrun --nnodes --nproc_per_node``.

    ``run_id="none"`` is the static rendezvous (``--master_addr``/``--node_rank``); with
    ``--standalone`` or c10d, torchrun sets the run id and ``MASTER_ADDR`` is the rank-0
    agent's host name (``localhost`` for ``--standalone``). torchrun sets no
    ``CUDA_VISIBLE_DEVICES`` and no ``NODE_RANK``.
    """
    world = nnodes * nproc_per_node
    positive("torchrun_env", nnodes=nnodes, nproc_per_node=nproc_per_node)
    check(
        "torchrun_env",
        0 <= rank < world,
        f"rank={rank} is not a worker of {nnodes} x {nproc_per_node}",
        "pass 0 <= rank < nnodes * nproc_per_node",
    )
    port("torchrun_env", master_port)
    return Launch(
        {
            "RANK": str(rank),
            "LOCAL_RANK": str(rank % nproc_per_node),
            "WORLD_SIZE": str(world),
            "LOCAL_WORLD_SIZE": str(nproc_per_node),
            "GROUP_RANK": str(rank // nproc_per_node),
            "GROUP_WORLD_SIZE": str(nnodes),
            "ROLE_RANK": str(rank),
            "ROLE_WORLD_SIZE": str(world),
            "ROLE_NAME": "default",
            "MASTER_ADDR": master_addr,
            "MASTER_PORT": str(master_port),
            "TORCHELASTIC_RUN_ID": run_id,
            "TORCHELASTIC_RESTART_COUNT": str(restart_count),
            "TORCHELASTIC_MAX_RESTARTS": str(max_restarts),
            "TORCHELASTIC_USE_AGENT_STORE": "True",
            "TORCHELASTIC_SIGNALS_TO_HANDLE": "SIGTERM,SIGINT,SIGHUP,SIGQUIT",
            "TORCHELASTIC_ERROR_FILE": f"/tmp/torchelastic_{run_id}/attempt_{restart_count}/"
            f"{rank}/error.json",
            "OMP_NUM_THREADS": "1",
        }
    )


def examples() -> list[Launch]:
    """One launch per role this source produces: the contract tests run every source's."""
    return [torchrun_env(2, 2, 3)]
