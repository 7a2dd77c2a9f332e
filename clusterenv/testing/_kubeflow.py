"""Kubeflow PyTorchJob pods."""

from __future__ import annotations

from clusterenv.testing._launch import Launch, port, positive, rank_of

__all__ = ["examples", "kubeflow_env"]


def kubeflow_env(
    replicas: int = 1,
    rank: int = 0,
    *,
    job: str = "pytorchjob",
    master_port: int = 23456,
) -> Launch:
    """Pod ``rank`` of a PyTorchJob with ``replicas`` pods (master and workers), one process
    each: the training operator's variables plus those Kubernetes sets in every pod."""
    positive("kubeflow_env", replicas=replicas)
    rank_of("kubeflow_env", rank, replicas)
    port("kubeflow_env", master_port)
    return Launch(
        {
            "KUBERNETES_SERVICE_HOST": "10.96.0.1",
            "KUBERNETES_SERVICE_PORT": "443",
            "MASTER_ADDR": f"{job}-master-0",
            "MASTER_PORT": str(master_port),
            "WORLD_SIZE": str(replicas),
            "RANK": str(rank),
            "PYTHONUNBUFFERED": "1",
        }
    )


def examples() -> list[Launch]:
    """One launch per role this source produces: the contract tests run every source's."""
    return [kubeflow_env(2, 1)]
