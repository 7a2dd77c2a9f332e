"""LSF job scripts and jsrun tasks, with their host files."""

from __future__ import annotations

from clusterenv._models.launch import Launch, positive, rank_of

__all__ = ["examples", "lsf_env"]


def lsf_env(
    nodes: int = 1,
    slots_per_node: int = 1,
    rank: int | None = None,
    *,
    job_id: int = 4242,
    launch_node: str | None = None,
) -> Launch:
    """An LSF job on ``nodes`` compute hosts: the job script (``rank=None``) or task ``rank``
    of ``jsrun`` with ``slots_per_node`` ranks per host; and its ``LSB_DJOB_HOSTFILE``.
    ``launch_node`` adds the Summit-like launch host, listed first, that runs no rank."""
    positive("lsf_env", nodes=nodes, slots_per_node=slots_per_node)
    hosts = [f"h{i:02d}" for i in range(1, nodes + 1)]
    listed = ([launch_node] if launch_node else []) + [
        h for h in hosts for _ in range(slots_per_node)
    ]
    hostfile = f"/home/user/.lsbatch/{job_id}.hostfile"
    counts = ([f"{launch_node} 1"] if launch_node else []) + [
        f"{h} {slots_per_node}" for h in hosts
    ]
    env = {
        "LSB_JOBID": str(job_id),
        "LSB_JOBNAME": "train",
        "LSB_DJOB_HOSTFILE": hostfile,
        "LSB_MCPU_HOSTS": " ".join(counts),
        "LSB_HOSTS": " ".join(listed),
    }
    if rank is not None:
        rank_of("lsf_env", rank, nodes * slots_per_node)
        env |= {
            "JSM_NAMESPACE_RANK": str(rank),
            "JSM_NAMESPACE_SIZE": str(nodes * slots_per_node),
            "JSM_NAMESPACE_LOCAL_RANK": str(rank % slots_per_node),
            "JSM_NAMESPACE_LOCAL_SIZE": str(slots_per_node),
        }
    return Launch(env, {hostfile: "".join(f"{host}\n" for host in listed)})


def examples() -> list[Launch]:
    """One launch per role this source produces: the contract tests run every source's."""
    return [lsf_env(2, 2), lsf_env(2, 2, 3)]
