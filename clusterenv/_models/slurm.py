"""Slurm: a task of an srun step, the batch step of an sbatch script, or an salloc shell."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from clusterenv._models.launch import Launch, check, ids, positive
from clusterenv.hostlist import compress_hostlist, expand_hostlist

__all__ = ["examples", "slurm_env", "task_counts"]

Step = Literal["srun", "batch", "salloc"]

# Values that depend on the site or machine, not on the topology: plausible stand-ins.
_SITE = {
    "SLURM_CLUSTER_NAME": "cluster",
    "SLURM_CONF": "/etc/slurm/slurm.conf",
    "SLURM_JOB_PARTITION": "gpu",
    "SLURM_SUBMIT_DIR": "/home/user",
    "SLURM_SUBMIT_HOST": "login1",
}
_NODE = {
    "SLURM_JOB_GID": "1000",
    "SLURM_JOB_UID": "1000",
    "SLURM_JOB_USER": "user",
    "SLURM_PRIO_PROCESS": "0",
    "SLURM_TOPOLOGY_ADDR_PATTERN": "node",
    "SLURM_WORKING_CLUSTER": "cluster:10.0.0.254:6817:9728:109",
}
_SRUN = {
    "SLURM_LAUNCH_NODE_IPADDR": "10.0.0.1",
    "SLURM_SRUN_COMM_HOST": "10.0.0.1",
    "SLURM_SRUN_COMM_PORT": "40271",
    "SLURM_STEP_LAUNCHER_PORT": "40271",
    "SLURM_UMASK": "0022",
}
_DEFAULT_JOB_NAMES = {"srun": "python", "batch": "train.sbatch", "salloc": "interactive"}


def task_counts(counts: Sequence[int]) -> str:
    """Slurm's compressed per-node list: ``[2, 2, 1]`` -> ``'2(x2),1'``."""
    items: list[list[int]] = []
    for count in counts:
        if items and items[-1][0] == count:
            items[-1][1] += 1
        else:
            items.append([count, 1])
    return ",".join(str(c) if n == 1 else f"{c}(x{n})" for c, n in items)


def _placement(counts: Sequence[int], cyclic: bool) -> list[tuple[int, int]]:
    """(node, local id) of each global rank, as srun's block or cyclic distribution."""
    if not cyclic:
        return [(node, local) for node, count in enumerate(counts) for local in range(count)]
    placement: list[tuple[int, int]] = []
    given = [0] * len(counts)
    while len(placement) < sum(counts):
        for node, count in enumerate(counts):
            if given[node] < count:
                placement.append((node, given[node]))
                given[node] += 1
    return placement


def slurm_env(
    nodes: int = 1,
    tasks_per_node: int | Sequence[int] | None = None,
    procid: int = 0,
    *,
    step: Step = "srun",
    within: Literal["sbatch", "salloc"] | None = None,
    nodelist: str | None = None,
    gpus_per_node: int | None = None,
    gpu_type: str | None = None,
    gpus_per_task: int | None = None,
    distribution: Literal["block", "cyclic"] | None = None,
    cpus_per_task: int | None = None,
    gpu_vendor: Literal["nvidia", "amd", "intel"] | None = None,
    job_id: int | str = 4242,
    job_name: str | None = None,
    mpi: Literal["cray_shasta"] | None = None,
) -> Launch:
    """The environment of one process of a Slurm job.

    ``step``: ``"srun"`` — task ``procid`` of an srun step over the whole job (a job of
    its own, or inside an allocation made by ``within`` = ``"sbatch"``/``"salloc"``);
    ``"batch"`` — the body of an sbatch script; ``"salloc"`` — the shell salloc opens.
    ``tasks_per_node``: ``None`` is no task option (one task per node); an int is
    ``--ntasks-per-node`` (Slurm then sets ``SLURM_NTASKS_PER_NODE``); a list gives the
    tasks of each node as ``-n`` placed them (Slurm's placement depends on the nodes'
    CPUs, so it is not guessed here).
    ``gpus_per_node`` is ``--gpus-per-node`` (``gpu_type``: ``--gpus-per-node=TYPE:N``) or
    ``--gres=gpu:N``; ``gpus_per_task`` is ``--gpus-per-task`` (each task sees its own).
    ``gpu_vendor`` is the vendor gres.conf declares (``Flags=amd_gpu_env``: only its
    variable is set); ``None`` is Slurm's default, every vendor's variable.
    ``cpus_per_task`` is ``--cpus-per-task`` (``None``: not given, one CPU per task).
    ``mpi="cray_shasta"`` is ``srun --mpi=cray_shasta`` (the default MPI plugin of HPE Cray
    EX machines), which adds ``PALS_*`` to every task (as recorded from Slurm 22.05 and
    24.11). ``nodelist`` defaults to ``cn[001-N]``. Contradictory parameters raise
    :class:`~clusterenv.ClusterEnvError`.
    """
    positive(
        "slurm_env",
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        gpus_per_task=gpus_per_task,
        cpus_per_task=cpus_per_task,
    )
    given = 1 if tasks_per_node is None else tasks_per_node
    counts = [given] * nodes if isinstance(given, int) else list(given)
    hosts = expand_hostlist(nodelist) if nodelist else [f"cn{i:03d}" for i in range(1, nodes + 1)]
    srun_only = bool(within or gpus_per_task or distribution)
    _check(nodes, counts, hosts, procid, step=step, srun_only=srun_only)
    _require(
        not (gpus_per_task and gpus_per_node),
        "gpus_per_node and gpus_per_task are both given",
        "pass one of them",
    )
    _require(
        not gpu_type or bool(gpus_per_node),
        "gpu_type needs gpus_per_node",
        "pass gpus_per_node=N as well",
    )
    _require(
        str(job_id).isdigit(),
        f"job_id={job_id!r} is not a Slurm job id",
        "pass a number: Slurm's job ids are integers",
    )
    job, cpus = str(job_id), [count * (cpus_per_task or 1) for count in counts]
    env = {
        **_SITE,
        "SLURM_JOB_ID": job,
        "SLURM_JOBID": job,
        "SLURM_JOB_NAME": job_name or _DEFAULT_JOB_NAMES["salloc" if within == "salloc" else step],
        "SLURM_JOB_NODELIST": compress_hostlist(hosts),
        "SLURM_NODELIST": compress_hostlist(hosts),
        "SLURM_JOB_NUM_NODES": str(nodes),
        "SLURM_NNODES": str(nodes),
        "SLURM_JOB_CPUS_PER_NODE": task_counts(cpus),
        "SLURM_TASKS_PER_NODE": task_counts(counts),
    }
    if step != "srun" or within:
        env["SLURM_NODE_ALIASES"] = "(null)"
    if step == "batch" or within == "sbatch":
        env["ENVIRONMENT"] = "BATCH"
    if isinstance(tasks_per_node, int):
        env["SLURM_NTASKS_PER_NODE"] = str(tasks_per_node)
    if cpus_per_task:
        env["SLURM_CPUS_PER_TASK"] = str(cpus_per_task)
    if step == "srun" or tasks_per_node is not None:  # given as an option, or srun's own
        env["SLURM_NTASKS"] = env["SLURM_NPROCS"] = str(sum(counts))
    typed = f"{gpu_type}:{gpus_per_node}" if gpu_type else str(gpus_per_node)
    if step == "salloc":  # what was asked for; nothing is bound on the submit host
        return Launch(env | _asked_gpus(typed if gpus_per_node else None, gpus_per_task))
    placement = _placement(counts, distribution == "cyclic")
    node, local = placement[procid]
    env |= {
        **_NODE,
        "SLURMD_NODENAME": hosts[node],
        "SLURM_TOPOLOGY_ADDR": hosts[node],
        "SLURM_CPUS_ON_NODE": str(cpus[node]),
        "SLURM_PROCID": str(procid),
        "SLURM_LOCALID": str(local),
        "SLURM_NODEID": str(node),
        "SLURM_TASK_PID": str(4000 + procid),
        "SLURM_GTIDS": ids([rank for rank, (n, _) in enumerate(placement) if n == node]),
    }
    if step == "batch":
        env["SLURM_GTIDS"] = "0"  # the batch step is one task, whatever the job's layout
        if gpus_per_node:
            env["SLURM_GPUS_PER_NODE"] = typed
            env["SLURM_GPUS_ON_NODE"] = str(gpus_per_node)
            env["SLURM_JOB_GPUS"] = ids(range(gpus_per_node))
            env |= _visible(env["SLURM_JOB_GPUS"], gpu_vendor)
        return Launch(env)
    env |= {
        **_SRUN,
        "SLURM_STEP_ID": "0",
        "SLURM_STEPID": "0",
        "SLURM_STEP_NODELIST": compress_hostlist(hosts),
        "SLURM_STEP_NUM_NODES": str(nodes),
        "SLURM_STEP_NUM_TASKS": str(sum(counts)),
        "SLURM_STEP_TASKS_PER_NODE": task_counts(counts),
    }
    if within or distribution:
        env["SLURM_DISTRIBUTION"] = distribution or "block"
    if mpi == "cray_shasta":
        spool = f"/var/spool/slurmd/mpi_cray_shasta/{job}.0"
        env |= {
            "SLURM_MPI_TYPE": mpi,
            "PALS_APID": f"{job}.0",
            "PALS_RANKID": str(procid),
            "PALS_NODEID": str(node),
            "PALS_SPOOL_DIR": spool,
            "PALS_APINFO": f"{spool}/apinfo",
        }
    if within:
        env["SLURM_JOB_CPUS_PER_NODE_PACK_GROUP_0"] = env["SLURM_JOB_CPUS_PER_NODE"]
    return Launch(env | _step_gpus(gpus_per_node, gpus_per_task, local, counts[node], gpu_vendor))


def _check(
    nodes: int, counts: list[int], hosts: list[str], procid: int, *, step: Step, srun_only: bool
) -> None:
    _require(
        len(counts) == nodes and min(counts) >= 1,
        f"tasks per node {counts} do not give 1 or more tasks on each of {nodes} nodes",
        "pass an int (--ntasks-per-node) or one count per node",
    )
    _require(
        len(hosts) == nodes,
        f"the nodelist names {len(hosts)} hosts, not nodes={nodes}",
        "name one host per node",
    )
    _require(
        step == "srun" or not (procid or srun_only),
        f"step={step!r} is one process with no srun options",
        "use procid/within/gpus_per_task/distribution with step='srun' only",
    )
    _require(
        0 <= procid < sum(counts),
        f"procid={procid} is not a rank of {sum(counts)} tasks",
        "pass 0 <= procid < tasks",
    )


def _require(ok: bool, message: str, hint: str) -> None:
    check("slurm_env", ok, message, hint)


# The variable each gres.conf vendor flag sets (gres.conf(5): nvidia_gpu_env, amd_gpu_env,
# intel_gpu_env); without flags Slurm sets them all.
_VENDOR_VARIABLES = {
    "nvidia": ("CUDA_VISIBLE_DEVICES",),
    "amd": ("ROCR_VISIBLE_DEVICES",),
    "intel": ("ZE_AFFINITY_MASK",),
}


def _visible(devices: str, vendor: str | None) -> dict[str, str]:
    names = _VENDOR_VARIABLES[vendor] if vendor else sum(_VENDOR_VARIABLES.values(), ())
    return dict.fromkeys(names, devices)


def _asked_gpus(per_node: str | None, per_task: int | None) -> dict[str, str]:
    """What salloc sets of --gpus-per-node (``TYPE:N`` or ``N``) and --gpus-per-task."""
    asked = {"SLURM_GPUS_PER_NODE": per_node, "SLURM_GPUS_PER_TASK": per_task}
    return {name: str(value) for name, value in asked.items() if value}


def _step_gpus(
    per_node: int | None, per_task: int | None, local: int, tasks_here: int, vendor: str | None
) -> dict[str, str]:
    """What srun binds: every GPU of the node, or (--gpus-per-task) this task's own."""
    if per_node:
        every = ids(range(per_node))
        return {
            "SLURM_GPUS_ON_NODE": str(per_node),
            "SLURM_STEP_GPUS": every,
            **_visible(every, vendor),
        }
    if per_task:
        own = ids(range(local * per_task, (local + 1) * per_task))
        return {
            "SLURMD_TRES_BIND": f"gpu:per_task:{per_task}",
            "SLURM_GPUS_ON_NODE": str(per_task * tasks_here),
            "SLURM_STEP_GPUS": own,
            **_visible(own, vendor),
        }
    return {}


def examples() -> list[Launch]:
    """One launch per role this source produces: the contract tests run every source's."""
    return [
        slurm_env(2, 2, 3, gpus_per_node=2),
        slurm_env(2, step="batch", gpus_per_node=2),
        slurm_env(2, step="salloc"),
    ]
