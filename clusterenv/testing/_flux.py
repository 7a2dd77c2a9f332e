"""Flux tasks."""

from __future__ import annotations

from clusterenv.testing._launch import Launch, positive, rank_of

__all__ = ["examples", "flux_env"]


def flux_env(
    nodes: int = 1,
    tasks_per_node: int = 1,
    rank: int = 0,
    *,
    job_id: str = "f2Xb8GNp3",
    master_addr: str | None = None,
    pals: bool = False,
) -> Launch:
    """Task ``rank`` of ``flux run -N NODES --tasks-per-node N`` (tasks placed by node).

    ``pals``: with Flux's ``cray-pals`` shell plugin (``-o pmi=cray-pals``, HPE Cray EX),
    which adds PALS's rank variables as PALS's own mpiexec would (flux-coral2's
    documentation of the plugin)."""
    positive("flux_env", nodes=nodes, tasks_per_node=tasks_per_node)
    rank_of("flux_env", rank, nodes * tasks_per_node)
    env = {
        "FLUX_JOB_ID": job_id,
        "FLUX_JOB_SIZE": str(nodes * tasks_per_node),
        "FLUX_JOB_NNODES": str(nodes),
        "FLUX_TASK_RANK": str(rank),
        "FLUX_TASK_LOCAL_ID": str(rank % tasks_per_node),
        "FLUX_URI": f"local:///run/flux/jobtmp-0-{job_id}/flux",
        "FLUX_KVS_NAMESPACE": f"job-{job_id}",
    }
    if pals:
        env |= {
            "PALS_APID": job_id,
            "PALS_RANKID": str(rank),
            "PALS_NODEID": str(rank // tasks_per_node),
            "PALS_APINFO": f"/var/run/flux/jobtmp-0-{job_id}/libpals_apinfo",
            "PALS_SPOOL_DIR": f"/var/run/flux/jobtmp-0-{job_id}",
        }
    return Launch(env | ({"MASTER_ADDR": master_addr} if master_addr else {}))


def examples() -> list[Launch]:
    """One launch per role this source produces: the contract tests run every source's."""
    return [flux_env(2, 2, 1, master_addr="n1")]
