"""Environment mappings in the shape real launchers produce, for unit tests.

Every builder copies the variable names and formats of captures recorded from real
Slurm 22.05 and torchrun (tests/data/captures/); only the values are parameters.
"""

from __future__ import annotations

from clusterenv import compress_hostlist, expand_hostlist


def task_counts(counts: list[int]) -> str:
    """Slurm's compressed task list: [2, 2, 1] -> '2(x2),1'."""
    items: list[list[int]] = []
    for count in counts:
        if items and items[-1][0] == count:
            items[-1][1] += 1
        else:
            items.append([count, 1])
    return ",".join(str(c) if n == 1 else f"{c}(x{n})" for c, n in items)


def _job(job_id: str, nodelist: str, name: str) -> dict[str, str]:
    nodes = str(len(expand_hostlist(nodelist)))
    return {
        "SLURM_CLUSTER_NAME": "clusterenv",
        "SLURM_JOB_ID": job_id,
        "SLURM_JOBID": job_id,
        "SLURM_JOB_NAME": name,
        "SLURM_JOB_NODELIST": nodelist,
        "SLURM_NODELIST": nodelist,
        "SLURM_JOB_NUM_NODES": nodes,
        "SLURM_NNODES": nodes,
        "SLURM_JOB_PARTITION": "debug",
        "SLURM_SUBMIT_HOST": "login1",
    }


def srun_task(
    tasks_per_node: list[int],
    procid: int = 0,
    *,
    nodelist: str | None = None,
    job_id: str = "4242",
    cyclic: bool = False,
    gpus_on_node: int | None = None,
    job_name: str = "python",
) -> dict[str, str]:
    """One task of an srun step whose node i runs tasks_per_node[i] tasks."""
    hosts = (
        expand_hostlist(nodelist)
        if nodelist
        else [f"cn{i + 1:03d}" for i in range(len(tasks_per_node))]
    )
    nodelist = compress_hostlist(hosts)
    placement = []  # (node, local id) of each global rank
    if cyclic:
        remaining = list(tasks_per_node)
        while any(remaining):
            for node, left in enumerate(remaining):
                if left:
                    placement.append((node, tasks_per_node[node] - left))
                    remaining[node] -= 1
    else:
        placement = [(n, i) for n, count in enumerate(tasks_per_node) for i in range(count)]
    node, local = placement[procid]
    ntasks, counts = str(sum(tasks_per_node)), task_counts(tasks_per_node)
    env = {
        **_job(job_id, nodelist, job_name),
        "SLURM_STEP_ID": "0",
        "SLURM_STEPID": "0",
        "SLURM_STEP_NODELIST": nodelist,
        "SLURM_STEP_NUM_NODES": str(len(hosts)),
        "SLURM_STEP_NUM_TASKS": ntasks,
        "SLURM_STEP_TASKS_PER_NODE": counts,
        "SLURM_NTASKS": ntasks,
        "SLURM_NPROCS": ntasks,
        "SLURM_TASKS_PER_NODE": counts,
        "SLURM_PROCID": str(procid),
        "SLURM_LOCALID": str(local),
        "SLURM_NODEID": str(node),
        "SLURMD_NODENAME": hosts[node],
        "SLURM_TOPOLOGY_ADDR": hosts[node],
        "SLURM_CPUS_ON_NODE": str(tasks_per_node[node]),
        "SLURM_LAUNCH_NODE_IPADDR": "10.0.0.1",
    }
    if gpus_on_node is not None:
        env["SLURM_GPUS_ON_NODE"] = str(gpus_on_node)
        env["SLURM_STEP_GPUS"] = ",".join(map(str, range(gpus_on_node)))
        env["CUDA_VISIBLE_DEVICES"] = env["SLURM_STEP_GPUS"]
    return env


def batch_step(
    nodelist: str = "cn[001-002]",
    *,
    job_id: str = "4242",
    ntasks_per_node: int | None = None,
    gpus_per_node: int | None = None,
) -> dict[str, str]:
    """The body of an sbatch script (Slurm's batch step), on the first node."""
    hosts = expand_hostlist(nodelist)
    per_node = ntasks_per_node or 1
    env = {
        **_job(job_id, nodelist, "job.sh"),
        "ENVIRONMENT": "BATCH",
        "SLURM_PROCID": "0",
        "SLURM_LOCALID": "0",
        "SLURM_NODEID": "0",
        "SLURMD_NODENAME": hosts[0],
        "SLURM_TASKS_PER_NODE": task_counts([per_node] * len(hosts)),
    }
    if ntasks_per_node is not None:
        env["SLURM_NTASKS_PER_NODE"] = str(ntasks_per_node)
        env["SLURM_NTASKS"] = env["SLURM_NPROCS"] = str(ntasks_per_node * len(hosts))
    if gpus_per_node is not None:
        env["SLURM_GPUS_PER_NODE"] = str(gpus_per_node)
        env["SLURM_GPUS_ON_NODE"] = str(gpus_per_node)
        env["SLURM_JOB_GPUS"] = env["CUDA_VISIBLE_DEVICES"] = ",".join(
            map(str, range(gpus_per_node))
        )
    return env


def salloc_shell(nodelist: str = "cn[001-002]", *, job_id: str = "4242") -> dict[str, str]:
    """The shell salloc opens on the submit host: no task, no step."""
    hosts = expand_hostlist(nodelist)
    return {
        **_job(job_id, nodelist, "interactive"),
        "SLURM_TASKS_PER_NODE": task_counts([1] * len(hosts)),
        "SLURM_JOB_CPUS_PER_NODE": task_counts([1] * len(hosts)),
    }


def torchrun_worker(
    rank: int = 0,
    *,
    nproc_per_node: int = 2,
    nnodes: int = 1,
    master_addr: str = "localhost",
    master_port: int = 29400,
    run_id: str = "none",
) -> dict[str, str]:
    """One worker of ``torchrun --nnodes=N --nproc_per_node=P``."""
    world = nproc_per_node * nnodes
    return {
        "RANK": str(rank),
        "LOCAL_RANK": str(rank % nproc_per_node),
        "WORLD_SIZE": str(world),
        "LOCAL_WORLD_SIZE": str(nproc_per_node),
        "GROUP_RANK": str(rank // nproc_per_node),
        "GROUP_WORLD_SIZE": str(nnodes),
        "ROLE_RANK": str(rank),
        "ROLE_WORLD_SIZE": str(world),
        "ROLE_NAME": "default",
        "MASTER_ADDR": master_addr,
        "MASTER_PORT": str(master_port),
        "TORCHELASTIC_RUN_ID": run_id,
        "TORCHELASTIC_RESTART_COUNT": "0",
        "TORCHELASTIC_MAX_RESTARTS": "0",
        "TORCHELASTIC_USE_AGENT_STORE": "True",
        "OMP_NUM_THREADS": "1",
    }
