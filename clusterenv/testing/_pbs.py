"""PBS Pro / Torque job scripts and their node files."""

from __future__ import annotations

from collections.abc import Sequence

from clusterenv.testing._launch import Launch, check, positive

__all__ = ["examples", "pbs_env"]


def pbs_env(
    nodes: int = 1,
    ppn: int = 1,
    *,
    job_id: str = "4242.pbs01",
    hosts: Sequence[str] | None = None,
    torque: bool = False,
    ncpus: int | None = None,
) -> Launch:
    """The job script of ``qsub -l select=NODES:ncpus=NCPUS:mpiprocs=PPN`` (``torque``:
    ``nodes=N:ppn=P``), and its ``PBS_NODEFILE``: one line per slot, so each host appears
    ``ppn`` times. PBS Pro sets ``NCPUS`` to the chunk's ncpus (default ``ppn``)."""
    names = list(hosts or [f"node{i:02d}" for i in range(1, nodes + 1)])
    positive("pbs_env", nodes=nodes, ppn=ppn, ncpus=ncpus)
    check(
        "pbs_env",
        len(names) == nodes,
        f"{len(names)} hosts for nodes={nodes}",
        "name one host per node",
    )
    nodefile = f"/var/spool/pbs/aux/{job_id}"
    env = {
        "PBS_JOBID": job_id,
        "PBS_JOBNAME": "train",
        "PBS_NODEFILE": nodefile,
        "PBS_O_WORKDIR": "/home/user",
        "PBS_QUEUE": "workq",
        "NCPUS": str(ncpus or ppn),
    }
    if torque:
        env |= {"PBS_NUM_NODES": str(nodes), "PBS_NUM_PPN": str(ppn), "PBS_NP": str(nodes * ppn)}
    return Launch(env, {nodefile: "".join(f"{host}\n" for host in names for _ in range(ppn))})


def examples() -> list[Launch]:
    """One launch per role this source produces: the contract tests run every source's."""
    return [pbs_env(2, 2)]
