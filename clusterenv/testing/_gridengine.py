"""Grid Engine job scripts, with or without a parallel environment."""

from __future__ import annotations

from clusterenv.testing._launch import Launch, check, positive

__all__ = ["examples", "gridengine_env"]


def gridengine_env(
    hosts: int = 1,
    slots_per_host: int = 1,
    *,
    pe: str | None = "mpi",
    job_id: int = 4242,
    task: int | None = None,
    queue: str = "all.q",
) -> Launch:
    """The job script of ``qsub -pe PE HOSTS*SLOTS`` (a parallel environment whose
    allocation rule puts ``slots_per_host`` on each host) and its ``PE_HOSTFILE``, one line
    per host with its slot count, as Son of Grid Engine 8.1.9 writes them (recorded live:
    ``node01 4 all.q@node01 UNDEFINED``). ``pe=None``: a job without a parallel environment
    (one slot, no host file); ``task``: that task of an array job (``qsub -t``)."""
    positive("gridengine_env", hosts=hosts, slots_per_host=slots_per_host, task=task)
    check(
        "gridengine_env",
        pe is not None or hosts * slots_per_host == 1,
        f"{hosts} hosts x {slots_per_host} slots without a parallel environment",
        "pass pe='mpi' for more than one slot",
    )
    names = [f"node{i:02d}" for i in range(1, hosts + 1)]
    array = "undefined" if task is None else str(task)
    env = {
        "JOB_ID": str(job_id),
        "JOB_NAME": "train.sh",
        "QUEUE": queue,
        "NSLOTS": str(hosts * slots_per_host),
        "NHOSTS": str(hosts),
        "NQUEUES": str(hosts),
        "SGE_TASK_ID": array,
        "SGE_TASK_FIRST": array,
        "SGE_TASK_LAST": array,
        "SGE_TASK_STEPSIZE": "undefined" if task is None else "1",
        "SGE_ROOT": "/var/lib/gridengine",
        "SGE_CELL": "default",
        "ENVIRONMENT": "BATCH",
    }
    if pe is None:
        return Launch(env)
    hostfile = f"/var/spool/gridengine/execd/{names[0]}/active_jobs/{job_id}.1/pe_hostfile"
    env |= {"PE": pe, "PE_HOSTFILE": hostfile}
    lines = "".join(f"{name} {slots_per_host} {queue}@{name} UNDEFINED\n" for name in names)
    return Launch(env, {hostfile: lines})


def examples() -> list[Launch]:
    """One launch per role this source produces: the contract tests run every source's."""
    return [gridengine_env(2, 4), gridengine_env(pe=None)]
