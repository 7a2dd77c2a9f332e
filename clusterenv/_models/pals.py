"""Ranks of ``mpiexec`` on HPE PALS, with or without Cray PMI."""

from __future__ import annotations

from clusterenv._models.launch import Launch, positive, rank_of

__all__ = ["examples", "pals_env"]


def pals_env(
    nodes: int = 1,
    ranks_per_node: int = 1,
    rank: int = 0,
    *,
    cray_pmi: bool = True,
    job_id: str = "4242.aurora-pbs-0001",
    master_addr: str | None = None,
    nodefile: bool = False,
) -> Launch:
    """Rank ``rank`` of ``mpiexec -n NODES*PPN --ppn PPN`` in a PBS job on HPE PALS (ranks
    placed by node), as ALCF documents for Aurora and Polaris: PALS's rank, local rank,
    local size and node id, and with ``cray_pmi`` Cray PMI's, which add the world size.
    ``nodefile``: the job's ``PBS_NODEFILE`` (one line per node, ``x1000c0s0b0n0``...) in
    the launch's ``files``; pass ``read_file=launch.read_file``."""
    positive("pals_env", nodes=nodes, ranks_per_node=ranks_per_node)
    rank_of("pals_env", rank, nodes * ranks_per_node)
    env = {
        "PALS_APID": "c2f7a6e1-2b5d-4e44-9b7c-0f3c2a9d1e55",
        "PALS_RANKID": str(rank),
        "PALS_LOCAL_RANKID": str(rank % ranks_per_node),
        "PALS_LOCAL_SIZE": str(ranks_per_node),
        "PALS_NODEID": str(rank // ranks_per_node),
        "PALS_DEPTH": "1",
        "PBS_JOBID": job_id,
    }
    if cray_pmi:
        env |= {
            "PMI_RANK": str(rank),
            "PMI_SIZE": str(nodes * ranks_per_node),
            "PMI_LOCAL_RANK": str(rank % ranks_per_node),
            "PMI_LOCAL_SIZE": str(ranks_per_node),
        }
    files = {}
    if nodefile:
        env["PBS_NODEFILE"] = f"/var/spool/pbs/aux/{job_id}"
        files[env["PBS_NODEFILE"]] = "".join(f"x1000c0s{n}b0n0\n" for n in range(nodes))
    return Launch(env | ({"MASTER_ADDR": master_addr} if master_addr else {}), files=files)


def examples() -> list[Launch]:
    """One launch per role this source produces: the contract tests run every source's."""
    return [pals_env(2, 6, 7, master_addr="x1921c0s0b0n0")]
