"""Environment mappings with the exact shape real launchers produce, for tests.

Each builder returns the *whole* variable set one process of a real launch sees — the
same names, the same formats (``SLURM_TASKS_PER_NODE='4(x2)'``), the step variables next
to the job ones — and nothing a real launcher would not set. They are checked against
environments recorded from real Slurm 22.05 and torchrun (``tests/data/captures/`` of the
clusterenv repository): same names, same values except those that depend on the machine
(ports, pids, paths, uids, the submit host), and the same ``detect_environment()``.

    >>> from clusterenv import detect_environment
    >>> from clusterenv.testing import slurm_env
    >>> env = slurm_env(nodes=2, tasks_per_node=4, gpus_per_node=4, procid=5)
    >>> env["SLURM_STEP_TASKS_PER_NODE"], env["CUDA_VISIBLE_DEVICES"]
    ('4(x2)', '0,1,2,3')
    >>> spec = detect_environment(env)
    >>> spec.world_size, spec.node_rank, spec.local_rank
    (8, 1, 1)

Flux, LSF, PBS and Kubeflow builders follow those schedulers' documentation (no real
launch runs here); PBS and LSF also return their host files, to pass as ``read_file``.

Not modelled (pass the variables yourself): heterogeneous jobs, job arrays, steps on
fewer nodes than their job, ``srun --mpi=pmi2/pmix``, and MPI launches over several
hosts with Open MPI (MPICH's are).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from clusterenv.exceptions import ClusterEnvError
from clusterenv.hostlist import compress_hostlist, expand_hostlist

__all__ = [
    "flux_env",
    "kubeflow_env",
    "local_env",
    "lsf_env",
    "mpich_env",
    "openmpi_env",
    "pbs_env",
    "slurm_env",
    "task_counts",
    "torchrun_env",
]

#: A builder's files, by path, for ``detect_environment(env, read_file=files.__getitem__)``.
Files = dict[str, str]

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


def _invalid(message: str, hint: str) -> ClusterEnvError:
    return ClusterEnvError(f"slurm_env: {message}", hint=hint)


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
    cpus_per_task: int = 1,
    job_id: int | str = 4242,
    job_name: str | None = None,
) -> dict[str, str]:
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
    ``nodelist`` defaults to ``cn[001-N]``. Contradictory parameters raise
    :class:`~clusterenv.ClusterEnvError`.
    """
    given = 1 if tasks_per_node is None else tasks_per_node
    counts = [given] * nodes if isinstance(given, int) else list(given)
    hosts = expand_hostlist(nodelist) if nodelist else [f"cn{i:03d}" for i in range(1, nodes + 1)]
    srun_only = bool(within or gpus_per_task or distribution)
    _check(nodes, counts, hosts, procid, step=step, srun_only=srun_only)
    if gpus_per_task and gpus_per_node:
        raise _invalid("gpus_per_node and gpus_per_task are both given", "pass one of them")
    if gpu_type and not gpus_per_node:
        raise _invalid("gpu_type needs gpus_per_node", "pass gpus_per_node=N as well")
    job, cpus = str(job_id), [count * cpus_per_task for count in counts]
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
    if step == "srun" or tasks_per_node is not None:  # given as an option, or srun's own
        env["SLURM_NTASKS"] = env["SLURM_NPROCS"] = str(sum(counts))
    if step == "salloc":
        return env
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
        "SLURM_GTIDS": _ids([rank for rank, (n, _) in enumerate(placement) if n == node]),
    }
    if step == "batch":
        env["SLURM_GTIDS"] = "0"  # the batch step is one task, whatever the job's layout
        if gpus_per_node:
            typed = f"{gpu_type}:{gpus_per_node}" if gpu_type else str(gpus_per_node)
            env["SLURM_GPUS_PER_NODE"] = typed
            env["SLURM_GPUS_ON_NODE"] = str(gpus_per_node)
            env["SLURM_JOB_GPUS"] = env["CUDA_VISIBLE_DEVICES"] = _ids(range(gpus_per_node))
        return env
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
    if within:
        env["SLURM_JOB_CPUS_PER_NODE_PACK_GROUP_0"] = env["SLURM_JOB_CPUS_PER_NODE"]
    return env | _step_gpus(gpus_per_node, gpus_per_task, local, counts[node])


def _check(
    nodes: int, counts: list[int], hosts: list[str], procid: int, *, step: Step, srun_only: bool
) -> None:
    if nodes < 1 or len(counts) != nodes or min(counts) < 1:
        raise _invalid(
            f"tasks per node {counts} do not give 1 or more tasks on each of {nodes} nodes",
            "pass an int (--ntasks-per-node) or one count per node",
        )
    if len(hosts) != nodes:
        raise _invalid(
            f"the nodelist names {len(hosts)} hosts, not nodes={nodes}", "name one host per node"
        )
    if step != "srun" and (procid or srun_only):
        raise _invalid(
            f"step={step!r} is one process with no srun options",
            "use procid/within/gpus_per_task/distribution with step='srun' only",
        )
    if not 0 <= procid < sum(counts):
        raise _invalid(
            f"procid={procid} is not a rank of {sum(counts)} tasks", "pass 0 <= procid < tasks"
        )


def _step_gpus(
    per_node: int | None, per_task: int | None, local: int, tasks_here: int
) -> dict[str, str]:
    """What srun binds: every GPU of the node, or (--gpus-per-task) this task's own."""
    if per_node:
        ids = _ids(range(per_node))
        return {
            "SLURM_GPUS_ON_NODE": str(per_node),
            "SLURM_STEP_GPUS": ids,
            "CUDA_VISIBLE_DEVICES": ids,
        }
    if per_task:
        ids = _ids(range(local * per_task, (local + 1) * per_task))
        return {
            "SLURMD_TRES_BIND": f"gpu:per_task:{per_task}",
            "SLURM_GPUS_ON_NODE": str(per_task * tasks_here),
            "SLURM_STEP_GPUS": ids,
            "CUDA_VISIBLE_DEVICES": ids,
        }
    return {}


def _ids(numbers: Sequence[int] | range) -> str:
    return ",".join(map(str, numbers))


def torchrun_env(
    nnodes: int = 1,
    nproc_per_node: int = 1,
    rank: int = 0,
    *,
    master_addr: str = "localhost",
    master_port: int = 29500,
    run_id: str = "none",
    restart_count: int = 0,
    max_restarts: int = 0,
) -> dict[str, str]:
    """The environment of worker ``rank`` of ``torchrun --nnodes --nproc_per_node``.

    ``run_id="none"`` is the static rendezvous (``--master_addr``/``--node_rank``); with
    ``--standalone`` or c10d, torchrun sets the run id and ``MASTER_ADDR`` is the rank-0
    agent's host name (``localhost`` for ``--standalone``). torchrun sets no
    ``CUDA_VISIBLE_DEVICES`` and no ``NODE_RANK``.
    """
    world = nnodes * nproc_per_node
    if nnodes < 1 or nproc_per_node < 1 or not 0 <= rank < world:
        raise ClusterEnvError(
            f"torchrun_env: rank={rank} is not a worker of {nnodes} x {nproc_per_node}",
            hint="pass nnodes >= 1, nproc_per_node >= 1 and 0 <= rank < nnodes * nproc_per_node",
        )
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
        "TORCHELASTIC_RESTART_COUNT": str(restart_count),
        "TORCHELASTIC_MAX_RESTARTS": str(max_restarts),
        "TORCHELASTIC_USE_AGENT_STORE": "True",
        "TORCHELASTIC_SIGNALS_TO_HANDLE": "SIGTERM,SIGINT,SIGHUP,SIGQUIT",
        "TORCHELASTIC_ERROR_FILE": f"/tmp/torchelastic_{run_id}/attempt_{restart_count}/"
        f"{rank}/error.json",
        "OMP_NUM_THREADS": "1",
    }


def openmpi_env(
    np: int = 1, rank: int = 0, *, slots: int | None = None, job_id: int = 4242 << 16
) -> dict[str, str]:
    """Rank ``rank`` of Open MPI 4.1's ``mpirun --oversubscribe -np NP`` on one host.

    ``slots`` is the host's slot count (its cores; default ``np``): more ranks than slots
    make Open MPI oversubscribe instead of binding. ``OMPI_COMM_WORLD_NODE_RANK`` is, as in
    the real thing, the rank within the node, not the node.
    """
    if not 0 <= rank < np:
        raise ClusterEnvError(
            f"openmpi_env: rank={rank} is not one of np={np} ranks", hint="pass 0 <= rank < np"
        )
    slots = slots or np
    daemon = f"{job_id - 1}.0;tcp://10.0.0.1:41813"
    session = f"/tmp/ompi.host.0/jf.{job_id >> 16}"
    env = {
        "OMPI_APP_CTX_NUM_PROCS": str(np),
        "OMPI_ARGV": "train.py",
        "OMPI_COMMAND": "python",
        "OMPI_COMM_WORLD_RANK": str(rank),
        "OMPI_COMM_WORLD_SIZE": str(np),
        "OMPI_COMM_WORLD_LOCAL_RANK": str(rank),
        "OMPI_COMM_WORLD_LOCAL_SIZE": str(np),
        "OMPI_COMM_WORLD_NODE_RANK": str(rank),
        "OMPI_FILE_LOCATION": f"{session}/1/{rank}",
        "OMPI_FIRST_RANKS": "0",
        "OMPI_MCA_ess": "^singleton",
        "OMPI_MCA_ess_base_jobid": str(job_id),
        "OMPI_MCA_ess_base_vpid": str(rank),
        "OMPI_MCA_initial_wdir": "/home/user",
        "OMPI_MCA_mpi_oversubscribe": "1" if np > slots else "0",
        "OMPI_MCA_orte_app_num": "0",
        "OMPI_MCA_orte_ess_node_rank": str(rank),
        "OMPI_MCA_orte_ess_num_procs": str(np),
        "OMPI_MCA_orte_hnp_uri": daemon,
        "OMPI_MCA_orte_jobfam_session_dir": session,
        "OMPI_MCA_orte_launch": "1",
        "OMPI_MCA_orte_local_daemon_uri": daemon,
        "OMPI_MCA_orte_num_nodes": "1",
        "OMPI_MCA_orte_precondition_transports": "0b535d86c88adf3a-31ea5102151c874c",
        "OMPI_MCA_orte_tmpdir_base": "/tmp",
        "OMPI_MCA_orte_top_session_dir": "/tmp/ompi.host.0",
        "OMPI_MCA_pmix": "^s1,s2,cray,isolated",
        "OMPI_MCA_rmaps_base_oversubscribe": "1",
        "OMPI_MCA_shmem_RUNTIME_QUERY_hint": "mmap",
        "OMPI_NUM_APP_CTX": "1",
        "OMPI_UNIVERSE_SIZE": str(slots),
    }
    if np <= slots:
        env["OMPI_MCA_orte_bound_at_launch"] = "1"
    server = f"{job_id - 1}.0;tcp4://127.0.0.1:46035"
    return env | {
        "PMIX_BFROP_BUFFER_TYPE": "PMIX_BFROP_BUFFER_NON_DESC",
        "PMIX_DSTORE_21_BASE_PATH": f"{session}/pmix_dstor_ds21",
        "PMIX_DSTORE_ESH_BASE_PATH": f"{session}/pmix_dstor_ds12",
        "PMIX_GDS_MODULE": "ds21,ds12,hash",
        "PMIX_HOSTNAME": "host",
        "PMIX_ID": f"{job_id}.{rank}",
        "PMIX_MCA_mca_base_component_show_load_errors": "1",
        "PMIX_NAMESPACE": str(job_id),
        "PMIX_RANK": str(rank),
        "PMIX_SECURITY_MODE": "munge,native",
        "PMIX_SERVER_TMPDIR": session,
        **{f"PMIX_SERVER_URI{v}": server for v in ("2", "21", "3", "4", "41")},
        "PMIX_SYSTEM_TMPDIR": "/tmp",
        "PMIX_VERSION": "4.2.2rc2",
    }


def mpich_env(
    np: int = 1, rank: int = 0, *, ranks_per_node: int | None = None, master_addr: str | None = None
) -> dict[str, str]:
    """Rank ``rank`` of MPICH's ``mpirun -np NP -ppn RANKS_PER_NODE`` (hydra).

    Hydra names neither the nodes nor the main host: a launch over several nodes needs
    ``MASTER_ADDR`` in the environment (``master_addr``), as it does for real.
    """
    per_node = ranks_per_node or np
    if not 0 <= rank < np or per_node < 1:
        raise ClusterEnvError(
            f"mpich_env: rank={rank} is not one of np={np} ranks", hint="pass 0 <= rank < np"
        )
    node_ranks = min(per_node, np - rank // per_node * per_node)  # the last node may run fewer
    env = {
        "PMI_RANK": str(rank),
        "PMI_SIZE": str(np),
        "PMI_FD": str(6 + rank % per_node),
        "MPI_LOCALRANKID": str(rank % per_node),
        "MPI_LOCALNRANKS": str(node_ranks),
    }
    return env | ({"MASTER_ADDR": master_addr} if master_addr else {})


def local_env(gpus: int | None = None) -> dict[str, str]:
    """A plain machine: nothing set, or ``CUDA_VISIBLE_DEVICES`` for ``gpus`` GPUs.

    With ``gpus=None`` detection asks the GPU probe; fake it with the ``fake_gpus``
    fixture of clusterenv's pytest plugin.
    """
    return {} if gpus is None else {"CUDA_VISIBLE_DEVICES": _ids(range(gpus))}


def _check_rank(builder: str, rank: int, world: int) -> None:
    if not 0 <= rank < world:
        raise ClusterEnvError(
            f"{builder}: rank={rank} is not one of {world} ranks", hint="pass 0 <= rank < ranks"
        )


def flux_env(
    nodes: int = 1,
    tasks_per_node: int = 1,
    rank: int = 0,
    *,
    job_id: str = "f2Xb8GNp3",
    master_addr: str | None = None,
) -> dict[str, str]:
    """Task ``rank`` of ``flux run -N NODES --tasks-per-node N`` (tasks placed by node)."""
    _check_rank("flux_env", rank, nodes * tasks_per_node)
    env = {
        "FLUX_JOB_ID": job_id,
        "FLUX_JOB_SIZE": str(nodes * tasks_per_node),
        "FLUX_JOB_NNODES": str(nodes),
        "FLUX_TASK_RANK": str(rank),
        "FLUX_TASK_LOCAL_ID": str(rank % tasks_per_node),
        "FLUX_URI": f"local:///run/flux/jobtmp-0-{job_id}/flux",
        "FLUX_KVS_NAMESPACE": f"job-{job_id}",
    }
    return env | ({"MASTER_ADDR": master_addr} if master_addr else {})


def kubeflow_env(
    replicas: int = 1,
    rank: int = 0,
    *,
    job: str = "pytorchjob",
    master_port: int = 23456,
) -> dict[str, str]:
    """Pod ``rank`` of a PyTorchJob with ``replicas`` pods (master and workers), one process
    each: the training operator's variables plus those Kubernetes sets in every pod."""
    _check_rank("kubeflow_env", rank, replicas)
    return {
        "KUBERNETES_SERVICE_HOST": "10.96.0.1",
        "KUBERNETES_SERVICE_PORT": "443",
        "MASTER_ADDR": f"{job}-master-0",
        "MASTER_PORT": str(master_port),
        "WORLD_SIZE": str(replicas),
        "RANK": str(rank),
        "PYTHONUNBUFFERED": "1",
    }


def pbs_env(
    nodes: int = 1,
    ppn: int = 1,
    *,
    job_id: str = "4242.pbs01",
    hosts: Sequence[str] | None = None,
    torque: bool = False,
) -> tuple[dict[str, str], Files]:
    """The job script of ``qsub -l select=NODES:mpiprocs=PPN`` (``torque``: ``nodes=N:ppn=P``),
    and its ``PBS_NODEFILE``: one line per slot, so each host appears ``ppn`` times."""
    names = list(hosts or [f"node{i:02d}" for i in range(1, nodes + 1)])
    if len(names) != nodes:
        raise ClusterEnvError(
            f"pbs_env: {len(names)} hosts for nodes={nodes}", hint="name one host per node"
        )
    nodefile = f"/var/spool/pbs/aux/{job_id}"
    env = {
        "PBS_JOBID": job_id,
        "PBS_JOBNAME": "train",
        "PBS_NODEFILE": nodefile,
        "PBS_O_WORKDIR": "/home/user",
        "PBS_QUEUE": "workq",
        "NCPUS": str(ppn),
    }
    if torque:
        env |= {"PBS_NUM_NODES": str(nodes), "PBS_NUM_PPN": str(ppn), "PBS_NP": str(nodes * ppn)}
    return env, {nodefile: "".join(f"{host}\n" for host in names for _ in range(ppn))}


def lsf_env(
    nodes: int = 1,
    slots_per_node: int = 1,
    rank: int | None = None,
    *,
    job_id: int = 4242,
    launch_node: str | None = None,
) -> tuple[dict[str, str], Files]:
    """An LSF job on ``nodes`` compute hosts: the job script (``rank=None``) or task ``rank``
    of ``jsrun`` with ``slots_per_node`` ranks per host; and its ``LSB_DJOB_HOSTFILE``.
    ``launch_node`` adds the Summit-like launch host, listed first, that runs no rank."""
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
        _check_rank("lsf_env", rank, nodes * slots_per_node)
        env |= {
            "JSM_NAMESPACE_RANK": str(rank),
            "JSM_NAMESPACE_SIZE": str(nodes * slots_per_node),
            "JSM_NAMESPACE_LOCAL_RANK": str(rank % slots_per_node),
            "JSM_NAMESPACE_LOCAL_SIZE": str(slots_per_node),
        }
    return env, {hostfile: "".join(f"{host}\n" for host in listed)}
