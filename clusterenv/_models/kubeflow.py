"""Kubeflow PyTorchJob pods."""

from __future__ import annotations

from clusterenv._models.launch import Launch, port, positive, rank_of

__all__ = ["examples", "kubeflow_env"]


def kubeflow_env(
    replicas: int = 1,
    rank: int = 0,
    *,
    job: str = "pytorchjob",
    master_port: int = 23456,
    nproc_per_node: int | None = None,
) -> Launch:
    """Pod ``rank`` of a PyTorchJob with ``replicas`` pods (master and workers): the
    training operator's variables plus those Kubernetes sets in every pod. Without
    ``nproc_per_node`` each pod runs one process; with it (operator >= 1.7, Trainer v2)
    the pod also gets the ``PET_*`` variables of its torchrun and ``WORLD_SIZE`` counts
    every process."""
    positive("kubeflow_env", replicas=replicas, nproc_per_node=nproc_per_node)
    rank_of("kubeflow_env", rank, replicas)
    port("kubeflow_env", master_port)
    pet = {}
    if nproc_per_node is not None:
        pet = {
            "PET_NNODES": str(replicas),
            "PET_NPROC_PER_NODE": str(nproc_per_node),
            "PET_NODE_RANK": str(rank),
            "PET_MASTER_ADDR": f"{job}-master-0",
            "PET_MASTER_PORT": str(master_port),
        }
    return Launch(
        pet
        | {
            "KUBERNETES_SERVICE_HOST": "10.96.0.1",
            "KUBERNETES_SERVICE_PORT": "443",
            "MASTER_ADDR": f"{job}-master-0",
            "MASTER_PORT": str(master_port),
            "WORLD_SIZE": str(replicas * (nproc_per_node or 1)),
            "RANK": str(rank),
            "PYTHONUNBUFFERED": "1",
        }
    )


def examples() -> list[Launch]:
    """One launch per role this source produces: the contract tests run every source's."""
    return [kubeflow_env(2, 1), kubeflow_env(4, 1, nproc_per_node=2)]
