"""Grid Engine job scripts, with or without a parallel environment."""

from __future__ import annotations

from collections.abc import Sequence

from clusterenv._models.launch import Launch, check, positive

__all__ = ["examples", "gridengine_env"]


def gridengine_env(
    hosts: int = 1,
    slots_per_host: int = 1,
    *,
    pe: str | None = "mpi",
    job_id: int | str = 4242,
    task: int | None = None,
    last_task: int | None = None,
    names: Sequence[str] | None = None,
    job_name: str = "train.sh",
) -> Launch:
    """The job script of ``qsub -pe PE HOSTS*SLOTS`` (a parallel environment whose
    allocation rule puts ``slots_per_host`` on each host) and its ``PE_HOSTFILE``, one line
    per host with its slot count, with the variables Son of Grid Engine 8.1.9 sets (checked
    against real jobs: ``node01 4 all.q@node01 UNDEFINED``). ``pe=None``: a job without a
    parallel environment (one slot, no host file); ``task``: that task of an array job
    ``qsub -t 1-LAST_TASK``; ``names``: the hosts (default ``node01``...)."""
    positive("gridengine_env", hosts=hosts, slots_per_host=slots_per_host, task=task)
    hostnames = list(names or [f"node{i:02d}" for i in range(1, hosts + 1)])
    check(
        "gridengine_env",
        pe is not None or hosts * slots_per_host == 1,
        f"{hosts} hosts x {slots_per_host} slots without a parallel environment",
        "pass pe='mpi' for more than one slot",
    )
    check("gridengine_env", len(hostnames) == hosts, f"{len(hostnames)} names", "one per host")
    spool = f"/var/spool/gridengine/execd/{hostnames[0]}/active_jobs/{job_id}.{task or 1}"
    array = ("undefined",) * 3 if task is None else ("1", str(task), str(last_task or task))
    env = {
        "JOB_ID": str(job_id),
        "JOB_NAME": job_name,
        "QUEUE": "all.q",
        "NSLOTS": str(hosts * slots_per_host),
        "NHOSTS": str(hosts),
        "NQUEUES": str(hosts),
        "SGE_TASK_FIRST": array[0],
        "SGE_TASK_ID": array[1],
        "SGE_TASK_LAST": array[2],
        "SGE_TASK_STEPSIZE": "undefined" if task is None else "1",
        "SGE_ACCOUNT": "sge",
        "SGE_ARCH": "lx-amd64",
        "SGE_BINARY_PATH": "/usr/sbin/lx-amd64",
        "SGE_CELL": "default",
        "SGE_ROOT": "/var/lib/gridengine",
        "SGE_QMASTER_PORT": "6444",
        "SGE_EXECD_PORT": "6445",
        "SGE_JOB_SPOOL_DIR": spool,
        "SGE_CWD_PATH": "/home/user",
        "SGE_O_HOME": "/home/user",
        "SGE_O_HOST": "login01",
        "SGE_O_PATH": "/usr/bin:/bin",
        "SGE_O_WORKDIR": "/home/user",
        "SGE_STDIN_PATH": "/dev/null",
        "SGE_STDOUT_PATH": f"/home/user/{job_name}.o{job_id}",
        "SGE_STDERR_PATH": f"/home/user/{job_name}.o{job_id}",
    }
    if pe is None:
        return Launch(env)
    hostfile = f"{spool}/pe_hostfile"
    env |= {"PE": pe, "PE_HOSTFILE": hostfile, "SGE_RSH_COMMAND": "builtin"}
    lines = "".join(f"{name} {slots_per_host} all.q@{name} UNDEFINED\n" for name in hostnames)
    return Launch(env, {hostfile: lines})


def examples() -> list[Launch]:
    """One launch per role this source produces: the contract tests run every source's."""
    return [gridengine_env(2, 4), gridengine_env(pe=None)]
