"""Volcano jobs: the pods of a job's tasks."""

from __future__ import annotations

from collections.abc import Mapping

from clusterenv._models.launch import Launch, check, port, positive, rank_of

__all__ = ["examples", "volcano_env"]


def volcano_env(
    tasks: Mapping[str, int] | None = None,
    task: str = "worker",
    index: int = 0,
    *,
    job: str = "train",
    pytorch: bool = False,
    master_port: int = 23456,
) -> Launch:
    """Pod ``index`` of ``task`` in a Volcano job whose tasks have the given replicas
    (default one task ``worker`` of 2), with the ``svc`` and ``env`` plugins; ``pytorch``
    adds the pytorch plugin (``--master=<first task> --worker=<second>``), whose ``RANK`` and
    ``WORLD_SIZE`` count pods."""
    replicas = dict(tasks or {"worker": 2})
    check("volcano_env", task in replicas, f"task={task!r} is not a task", "name one of tasks")
    positive("volcano_env", **replicas)
    rank_of("volcano_env", index, replicas[task])
    port("volcano_env", master_port)
    env = {
        "KUBERNETES_SERVICE_HOST": "10.96.0.1",
        "KUBERNETES_SERVICE_PORT": "443",
        "VC_TASK_INDEX": str(index),
        "VK_TASK_INDEX": str(index),
    }
    for name, count in replicas.items():
        key = name.upper().replace("-", "_")
        env[f"VC_{key}_HOSTS"] = ",".join(f"{job}-{name}-{i}.{job}" for i in range(count))
        env[f"VC_{key}_NUM"] = str(count)
    if pytorch:
        names = list(replicas)
        before = sum(replicas[name] for name in names[: names.index(task)])
        env |= {
            "MASTER_ADDR": f"{job}-{names[0]}-0.{job}",
            "MASTER_PORT": str(master_port),
            "WORLD_SIZE": str(sum(replicas.values())),
            "RANK": str(before + index),
        }
    return Launch(env)


def examples() -> list[Launch]:
    """One launch per role this source produces: the contract tests run every source's."""
    return [
        volcano_env(),
        volcano_env({"master": 1, "worker": 2}, "worker", 1, pytorch=True),
    ]
