"""Kubernetes Indexed Jobs and JobSets: the pods of a Job with ``completionMode: Indexed``."""

from __future__ import annotations

from clusterenv._models.launch import Launch, check, port, positive, rank_of

__all__ = ["examples", "kubernetes_env"]


def kubernetes_env(
    pods: int = 2,
    index: int = 0,
    *,
    job: str = "train",
    jobset: str | None = None,
    master_port: int = 29500,
) -> Launch:
    """Pod ``index`` of an Indexed Job of ``pods`` completions named ``job``, whose pod
    template sets ``PET_NNODES`` and ``MASTER_PORT``, and ``MASTER_ADDR`` (pod 0 in the Job's
    headless service, named like the Job). With ``jobset``, ``job`` is a replicated job of
    that JobSet (its first Job, ``<jobset>-<job>-0``), whose pods get ``JOBSET_NAME`` and
    ``JOBSET_RESTART_ATTEMPT`` from the downward API and no ``MASTER_ADDR``."""
    positive("kubernetes_env", pods=pods)
    rank_of("kubernetes_env", index, pods)
    port("kubernetes_env", master_port)
    check("kubernetes_env", bool(job), "job is empty", "name the Job")
    name = f"{jobset}-{job}-0" if jobset else job
    env = {
        "KUBERNETES_SERVICE_HOST": "10.96.0.1",
        "KUBERNETES_SERVICE_PORT": "443",
        "HOSTNAME": f"{name}-{index}",
        "JOB_COMPLETION_INDEX": str(index),
        "PET_NNODES": str(pods),
        "MASTER_PORT": str(master_port),
    }
    if jobset:
        env |= {"JOBSET_NAME": jobset, "JOBSET_RESTART_ATTEMPT": "0"}
    else:
        env["MASTER_ADDR"] = f"{name}-0.{name}"
    return Launch(env)


def examples() -> list[Launch]:
    """One launch per role this source produces: the contract tests run every source's."""
    return [kubernetes_env(2, 1), kubernetes_env(4, 0, jobset="era5")]
