"""PBS Pro / Torque job scripts, their node files, and the tasks pbsdsh starts, as OpenPBS
23.06 sets them (tests/data/captures/pbs-*)."""

from __future__ import annotations

from collections.abc import Sequence

from clusterenv._models.launch import Launch, check, positive

__all__ = ["examples", "pbs_env"]


def pbs_env(
    nodes: int = 1,
    ppn: int = 1,
    *,
    job_id: str = "4242.pbs01",
    hosts: Sequence[str] | None = None,
    torque: bool = False,
    ncpus: int | None = None,
    ompthreads: int | None = None,
    job_name: str = "train",
    array_index: int | None = None,
    pbsdsh: tuple[int, str] | None = None,
    interactive: bool = False,
) -> Launch:
    """The job script of ``qsub -l select=NODES:ncpus=NCPUS:mpiprocs=PPN`` (``torque``:
    ``nodes=N:ppn=P``), and its ``PBS_NODEFILE``: one line per slot, so each host appears
    ``ppn`` times. PBS Pro sets ``NCPUS`` and ``OMP_NUM_THREADS`` to the chunk's
    ``ompthreads``, by default its ``ncpus`` (default ``ppn``), as OpenPBS 23.06 does.
    ``array_index``: subjob N of ``qsub -J`` (give ``job_id`` as ``21[N].server``).
    ``pbsdsh=(node, task id)``: a task pbsdsh started on that node, with PBS's TM task id
    (``"00000002"``): PBS sets no node file for it on the first node. ``interactive``: the
    shell of ``qsub -I`` on the first node instead of the job script."""
    names = list(hosts or [f"node{i:02d}" for i in range(1, nodes + 1)])
    positive("pbs_env", nodes=nodes, ppn=ppn, ncpus=ncpus)
    check(
        "pbs_env",
        len(names) == nodes,
        f"{len(names)} hosts for nodes={nodes}",
        "name one host per node",
    )
    node, task = pbsdsh or (0, "1")
    check("pbs_env", 0 <= node < nodes, f"pbsdsh node {node} of {nodes}", "a node of the job")
    nodefile = f"/var/spool/pbs/aux/{job_id}"
    server = job_id.partition(".")[2] or "pbs01"
    cpus = str(ompthreads or ncpus or ppn)
    env = {
        "NCPUS": cpus,
        "OMP_NUM_THREADS": cpus,
        "PBS_ENVIRONMENT": "PBS_INTERACTIVE" if interactive else "PBS_BATCH",
        "PBS_JOBCOOKIE": "0123456789ABCDEF0123456789ABCDEF",
        "PBS_JOBDIR": "/home/user",
        "PBS_JOBID": job_id,
        "PBS_JOBNAME": job_name,
        "PBS_MOMPORT": "15003",
        "PBS_NODENUM": str(node),
        "PBS_O_HOME": "/home/user",
        "PBS_O_HOST": server,
        "PBS_O_LANG": "C.UTF-8",
        "PBS_O_LOGNAME": "user",
        "PBS_O_PATH": "/usr/bin:/bin",
        "PBS_O_QUEUE": "workq",
        "PBS_O_SYSTEM": "Linux",
        "PBS_O_WORKDIR": "/home/user",
        "PBS_QUEUE": "workq",
        "PBS_TASKNUM": task,
    }
    if not interactive:  # qsub -I's shell has PBS_ENVIRONMENT alone
        env["ENVIRONMENT"] = "BATCH"
    if pbsdsh is None or node > 0:
        env["PBS_NODEFILE"] = nodefile
    if array_index is not None:
        env |= {"PBS_ARRAY_INDEX": str(array_index), "PBS_ARRAY_ID": _array_id(job_id)}
    if torque:
        env |= {"PBS_NUM_NODES": str(nodes), "PBS_NUM_PPN": str(ppn), "PBS_NP": str(nodes * ppn)}
    return Launch(env, {nodefile: "".join(f"{host}\n" for host in names for _ in range(ppn))})


def _array_id(job_id: str) -> str:
    """``21[].server`` for subjob ``21[3].server``."""
    head, bracket, rest = job_id.partition("[")
    check("pbs_env", bool(bracket) and "]" in rest, f"{job_id!r} is no subjob id", "21[3].pbs01")
    return f"{head}[]{rest.partition(']')[2]}"


def examples() -> list[Launch]:
    """One launch per role this source produces: the contract tests run every source's."""
    return [pbs_env(2, 2)]
