"""Vertex AI custom jobs: each replica's CLUSTER_SPEC."""

from __future__ import annotations

import json

from clusterenv._models.launch import Launch, check, rank_of

__all__ = ["examples", "vertex_env"]

_POOLS = ("workerpool0", "workerpool1", "workerpool2", "workerpool3")


def vertex_env(
    workers: int = 0,
    pool: str = "workerpool0",
    index: int = 0,
    *,
    servers: int = 0,
    job: str = "1234567890123456789",
) -> Launch:
    """Replica ``index`` of ``pool`` in a custom job of one primary replica
    (``workerpool0``), ``workers`` workers (``workerpool1``) and ``servers`` reduction
    servers (``workerpool2``): ``CLUSTER_SPEC`` as Vertex AI documents it."""
    counts = {"workerpool0": 1, "workerpool1": workers, "workerpool2": servers}
    check("vertex_env", pool in counts, f"pool={pool!r} is not a pool", "pass workerpool0..2")
    check("vertex_env", workers >= 0 and servers >= 0, "a negative count", "pass counts >= 0")
    rank_of("vertex_env", index, counts[pool])
    cluster = {
        name: [f"cmle-training-{name}-{job[:10]}-{i}:2222" for i in range(count)]
        for name, count in counts.items()
        if count
    }
    spec = {
        "cluster": cluster,
        "environment": "cloud",
        "task": {"type": pool, "index": index},
        "job": json.dumps({"worker_pool_specs": [{"replica_count": n} for n in counts.values()]}),
    }
    return Launch({"CLUSTER_SPEC": json.dumps(spec), "CLOUD_ML_JOB_ID": job})


def examples() -> list[Launch]:
    """One launch per role this source produces: the contract tests run every source's."""
    return [vertex_env(2, "workerpool1", 1), vertex_env(1, "workerpool2", 0, servers=1)]
