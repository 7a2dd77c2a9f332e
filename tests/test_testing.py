"""clusterenv.testing against the real launches recorded in tests/data/captures/."""

from __future__ import annotations

import doctest
import importlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pytest

from clusterenv import ClusterEnvError, detect_environment
from clusterenv.testing import (
    Launch,
    deepspeed_env,
    flux_env,
    gridengine_env,
    local_env,
    mpich_env,
    openmpi_env,
    pbs_env,
    slurm_env,
    torchrun_env,
)

CAPTURES = Path(__file__).parent / "data" / "captures"

# Values set by the site or the machine, not by the topology (compared by name only).
MACHINE = frozenset(
    {
        *("SLURM_CLUSTER_NAME", "SLURM_CONF", "SLURM_JOB_PARTITION", "SLURM_SUBMIT_DIR"),
        *("SLURM_SUBMIT_HOST", "SLURM_JOB_GID", "SLURM_JOB_UID", "SLURM_JOB_USER"),
        *("SLURM_PRIO_PROCESS", "SLURM_WORKING_CLUSTER", "SLURM_LAUNCH_NODE_IPADDR"),
        *("SLURM_SRUN_COMM_HOST", "SLURM_SRUN_COMM_PORT", "SLURM_STEP_LAUNCHER_PORT"),
        *("SLURM_TASK_PID", "SLURM_UMASK", "TORCHELASTIC_ERROR_FILE"),
        # Open MPI / PMIx: paths, URIs, random ids and tokens, the host name, PMI's fd
        *("OMPI_ARGV", "OMPI_FILE_LOCATION", "OMPI_MCA_initial_wdir"),
        *("OMPI_MCA_orte_hnp_uri", "OMPI_MCA_orte_local_daemon_uri"),
        *("OMPI_MCA_orte_jobfam_session_dir", "OMPI_MCA_orte_precondition_transports"),
        *("OMPI_MCA_orte_tmpdir_base", "OMPI_MCA_orte_top_session_dir"),
        *("PMIX_DSTORE_21_BASE_PATH", "PMIX_DSTORE_ESH_BASE_PATH", "PMIX_HOSTNAME"),
        *("PMIX_SERVER_TMPDIR", "PMIX_SYSTEM_TMPDIR", "PMI_FD"),
        *(f"PMIX_SERVER_URI{version}" for version in ("2", "21", "3", "4", "41")),
        # srun --mpi=cray_shasta: its spool folder on the node
        *("PALS_SPOOL_DIR", "PALS_APINFO"),
        # Grid Engine: its paths, ports and submit host
        *("PE_HOSTFILE", "SGE_ROOT", "SGE_BINARY_PATH", "SGE_JOB_SPOOL_DIR", "SGE_CWD_PATH"),
        *("SGE_O_HOME", "SGE_O_HOST", "SGE_O_PATH", "SGE_O_WORKDIR", "SGE_STDIN_PATH"),
        *("SGE_STDOUT_PATH", "SGE_STDERR_PATH", "SGE_QMASTER_PORT", "SGE_EXECD_PORT"),
        # Flux: the instance's paths and URIs, the job's folders, the terminus session
        *("FLUX_CONNECTOR_PATH", "FLUX_EXEC_PATH", "FLUX_MODULE_PATH", "FLUX_START_URI"),
        *("FLUX_TERMINUS_SESSION", "FLUX_URI", "FLUX_JOB_TMPDIR", "FLUX_PMI_LIBRARY_PATH"),
        *("FLUX_JOB_ID_PATH", "OMPI_MCA_btl_vader_backing_directory"),
        # PBS: the submitter's host, home, path and user, the job's cookie, folder, ports
        *("PBS_JOBCOOKIE", "PBS_JOBDIR", "PBS_MOMPORT", "PBS_NODEFILE", "PBS_O_HOME"),
        *("PBS_O_HOST", "PBS_O_LOGNAME", "PBS_O_PATH", "PBS_O_WORKDIR"),
    }
)
Mock = Callable[[dict[str, str]], dict[str, str]]  # a captured task's env -> the mock of it


def slurm(**kwargs: Any) -> Mock:
    def build(real: dict[str, str]) -> dict[str, str]:
        return slurm_env(
            procid=int(real.get("SLURM_PROCID", "0")),
            job_id=real["SLURM_JOB_ID"],
            job_name=real["SLURM_JOB_NAME"],
            nodelist=real["SLURM_JOB_NODELIST"],
            **kwargs,
        )

    return build


def torchrun(nnodes: int, **kwargs: Any) -> Mock:
    def build(real: dict[str, str]) -> dict[str, str]:
        return torchrun_env(
            nnodes,
            int(real["LOCAL_WORLD_SIZE"]),
            int(real["RANK"]),
            master_addr=real["MASTER_ADDR"],
            master_port=int(real["MASTER_PORT"]),
            run_id=real["TORCHELASTIC_RUN_ID"],
            **kwargs,
        )

    return build


def flux(taskmap: Literal["block", "cyclic"] = "block") -> Mock:
    """A task (or a job's body) of the 4-broker test instance, whose brokers share one host
    name (what `flux job taskmap --hostname=0` answered there)."""

    def build(real: dict[str, str]) -> dict[str, str]:
        if "FLUX_ENCLOSING_ID" in real:
            return flux_env(2, job_id=real["FLUX_ENCLOSING_ID"], hosts=HOSTS, step="batch")
        nodes, size = int(real["FLUX_JOB_NNODES"]), int(real["FLUX_JOB_SIZE"])
        return flux_env(
            nodes,
            size // nodes,
            int(real["FLUX_TASK_RANK"]),
            job_id=real["FLUX_JOB_ID"],
            master_addr=real.get("MASTER_ADDR"),
            taskmap=taskmap,
            hosts=("flux-host",) * nodes,
        )

    HOSTS = ("flux-host", "flux-host")
    return build


def pbs(real: dict[str, str]) -> dict[str, str]:
    """A process of ``select=2:ncpus=2:mpiprocs=2:ompthreads=1 -l place=scatter`` on the
    2-MoM OpenPBS: its job script, or a task pbsdsh started."""
    task = real["PBS_TASKNUM"]
    return pbs_env(
        2,
        2,
        job_id=real["PBS_JOBID"],
        hosts=["pbs-n1", "pbs-n2"],
        ompthreads=1,
        job_name=real["PBS_JOBNAME"],
        pbsdsh=None if task == "1" else (int(real["PBS_NODENUM"]), task),
    )


MOCKS: dict[str, Mock] = {
    "pbs-job-script": pbs,
    "pbs-pbsdsh": pbs,
    "pbs-interactive": lambda real: pbs_env(
        2,
        1,
        job_id=real["PBS_JOBID"],
        hosts=["pbs-n1", "pbs-n2"],
        job_name=real["PBS_JOBNAME"],
        interactive=True,
    ),
    **{
        name: flux()
        for name in ("flux-run-1x2", "flux-run-2x2", "flux-run-2x2-main", "flux-4-nodes")
    },
    **{name: flux() for name in ("flux-tasks-per-node", "flux-submit", "flux-pmi2")},
    **{name: flux() for name in ("flux-batch", "flux-alloc")},
    **{name: flux("cyclic") for name in ("flux-cyclic", "flux-cyclic-3x2")},
    "export-none": slurm(nodes=2, tasks_per_node=1),
    "gpus-per-node": slurm(nodes=2, tasks_per_node=2, gpus_per_node=2),
    "gpus-per-node-typed": slurm(nodes=2, tasks_per_node=2, gpus_per_node=2, gpu_type="a100"),
    "gpus-per-task": slurm(nodes=2, tasks_per_node=2, gpus_per_task=1),
    "gpus-shared": slurm(nodes=1, tasks_per_node=2, gpus_per_node=1),
    "gres-gpu": slurm(nodes=2, tasks_per_node=2, gpus_per_node=2),
    "job-name-bash": slurm(nodes=2, tasks_per_node=2),
    "salloc-shell": slurm(nodes=2, step="salloc"),
    "salloc-shell-gpus": slurm(nodes=2, step="salloc", gpus_per_node=2),
    "salloc-srun-interactive-name": slurm(nodes=2, tasks_per_node=2, within="salloc"),
    "sbatch-batch-step": slurm(nodes=2, tasks_per_node=2, step="batch"),
    "sbatch-batch-step-typed-gpus": slurm(nodes=2, step="batch", gpus_per_node=2, gpu_type="a100"),
    "sbatch-srun": slurm(nodes=2, tasks_per_node=2, within="sbatch"),
    "srun-N2-n3-uneven": slurm(nodes=2, tasks_per_node=[2, 1]),
    "srun-N2-n4-cyclic": slurm(nodes=2, tasks_per_node=[3, 1], distribution="cyclic"),
    "srun-N2-ntasks-per-node2": slurm(nodes=2, tasks_per_node=2),
    "srun-four-nodes-uneven": slurm(nodes=4, tasks_per_node=[4, 1, 1, 1]),
    "srun-noncontiguous-nodes": slurm(nodes=3),
    "amd-gpus-per-task": slurm(nodes=1, tasks_per_node=2, gpus_per_task=1, gpu_vendor="amd"),
    "intel-gpus": slurm(nodes=1, tasks_per_node=2, gpus_per_node=2, gpu_vendor="intel"),
    "cpus-per-task": slurm(nodes=2, tasks_per_node=2, cpus_per_task=2),
    "torchrun-standalone": torchrun(1),
    "torchrun-static-2-nodes": torchrun(2),
    "torchrun-c10d-2-nodes": torchrun(2),
    "mpirun-np2": lambda real: openmpi_env(
        2,
        int(real["OMPI_COMM_WORLD_RANK"]),
        slots=int(real["OMPI_UNIVERSE_SIZE"]),
        job_id=int(real["OMPI_MCA_ess_base_jobid"]),
    ),
    "mpirun-np3": lambda real: openmpi_env(
        3,
        int(real["OMPI_COMM_WORLD_RANK"]),
        slots=int(real["OMPI_UNIVERSE_SIZE"]),
        job_id=int(real["OMPI_MCA_ess_base_jobid"]),
    ),
    "mpich-np3": lambda real: mpich_env(3, int(real["PMI_RANK"])),
    "mpich-2-nodes": lambda real: mpich_env(
        4, int(real["PMI_RANK"]), ranks_per_node=2, master_addr=real["MASTER_ADDR"]
    ),
    "cray-shasta-1x4": slurm(nodes=1, tasks_per_node=[4], mpi="cray_shasta"),
    "cray-shasta-2x2": slurm(nodes=2, tasks_per_node=2, mpi="cray_shasta"),
    "deepspeed-1-node": lambda real: deepspeed_env(
        1, 2, int(real["RANK"]), master_addr="127.0.0.1", master_port=int(real["MASTER_PORT"])
    ),
    "deepspeed-2-nodes": lambda real: deepspeed_env(
        2, 2, int(real["RANK"]), master_addr="127.0.0.1", master_port=int(real["MASTER_PORT"])
    ),
    "gridengine-pe": lambda real: gridengine_env(
        1, 4, job_id=real["JOB_ID"], names=["build-host"], job_name="python"
    ),
    "gridengine-no-pe": lambda real: gridengine_env(
        pe=None, job_id=real["JOB_ID"], job_name="python"
    ),
    "gridengine-array": lambda real: gridengine_env(
        pe=None,
        job_id=real["JOB_ID"],
        task=int(real["SGE_TASK_ID"]),
        last_task=3,
        job_name="python",
    ),
    "torchrun-inside-srun": lambda real: slurm(nodes=2, tasks_per_node=1)(real) | torchrun(2)(real),
}
NOT_MODELLED = {"array-job", "het-job", "mpi-pmi2", "mpi-pmix"}
NOT_MODELLED |= {"step-smaller-than-job", "cray-shasta-step-smaller-than-job", "het-salloc-shell"}
# Launchers whose tasks the builders do not model (their own shapes are in the captures).
NOT_MODELLED |= {"accelerate-cpu", "accelerate-multi", "ray-train", "intel-mpi-under-slurm"}
NOT_MODELLED |= {"openmpi-5-np4", "mpich-5-2-nodes", "intel-mpi-2-nodes"}
NOT_MODELLED |= {"sbatch-no-task-count", "srun-arbitrary-hostfile"}
# PBS's choice of host for one chunk (either MoM); torchrun's ranks inside a pbsdsh task
NOT_MODELLED |= {"pbs-pack", "pbs-one-chunk", "pbs-array", "pbs-torchrun-per-node"}
NOT_MODELLED |= {"pbs-mpich", "pbs-openmpi"}  # an MPI launcher's ranks inside a PBS job
# A GPU map per task, a job script's own CUDA_VISIBLE_DEVICES, and containers under srun
NOT_MODELLED |= {"gpu-bind-map", "gpus-outside-grant", "srun-podman", "srun-podman-env-host"}
NOT_MODELLED |= {"main-address-submit-host"}  # a MASTER_ADDR exported by hand
# A hostfile's task 0 with the node list's first host as MASTER_ADDR; GPU 0 held by another job
NOT_MODELLED |= {"main-address-not-rank-0", "gpus-not-from-zero"}
NOT_MODELLED |= {"cpus-not-inherited", "srun-cpus-per-task"}  # the emulated hosts' binding
NOT_MODELLED |= {"flux-manual"}  # a taskmap given by hand: flux_env models block and cyclic
# Flux started by srun: its tasks also carry SLURMD_NODENAME (that of rank 0's broker)
NOT_MODELLED |= {"flux-under-srun-3-hosts"}
NOT_MODELLED |= {
    "deepspeed-in-sbatch",
    "torchrun-in-batch-step",
}  # a batch step and a launcher's ranks in one process
NOT_MODELLED |= {
    "gridengine-qrsh",
    "gridengine-mpirun",
}  # qrsh's and mpirun's own variables  # a batch step and its srun step in one capture


def test_every_capture_is_mocked_or_declared_not_modelled() -> None:
    names = {path.stem for path in CAPTURES.glob("*.json")}
    assert names == set(MOCKS) | NOT_MODELLED


@pytest.mark.parametrize("name", sorted(MOCKS))
def test_mock_has_the_shape_of_the_real_launch(name: str) -> None:
    capture = json.loads((CAPTURES / f"{name}.json").read_text())
    for task in capture["tasks"]:
        real = task["env"]
        mock = MOCKS[name](real)
        assert sorted(mock) == sorted(real), "not the variable names the launcher sets"
        differ = {
            key: (mock[key], real[key])
            for key in real
            if key not in MACHINE and mock[key] != real[key]
        }
        assert not differ, f"(mock, real) values differ: {differ}"
        # Both set CUDA_VISIBLE_DEVICES where Slurm binds GPUs; elsewhere: no GPU here.
        recorded = Launch({}, task.get("files", {}), task.get("answers", {}))
        built = mock if isinstance(mock, Launch) else recorded
        assert _outcome(mock, built) == _outcome(real, recorded)


def _outcome(env: dict[str, str], launch: Launch) -> object:
    """The spec, or the refusal (its type and message): a mock must be refused alike."""
    try:
        return detect_environment(env, gpu_probe=tuple, read_file=launch.read_file, ask=launch.ask)
    except ClusterEnvError as error:
        return type(error), str(error)


def test_the_docstring_topology() -> None:
    env = slurm_env(nodes=2, tasks_per_node=4, gpus_per_node=4, procid=5)
    spec = detect_environment(env)
    assert (spec.world_size, spec.node_rank, spec.local_rank, spec.gpus_per_node) == (8, 1, 1, 4)
    assert env["SLURM_TASKS_PER_NODE"] == "4(x2)"


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"nodes": 2, "tasks_per_node": [1]}, "each of 2 nodes"),
        ({"nodes": 2, "nodelist": "cn[1-3]"}, "names 3 hosts"),
        ({"nodes": 1, "procid": 1}, "not a rank of 1"),
        ({"step": "batch", "procid": 1}, "no srun options"),
        ({"step": "salloc", "within": "sbatch"}, "no srun options"),
        ({"gpus_per_node": 2, "gpus_per_task": 1}, "both given"),
        ({"gpu_type": "a100"}, "needs gpus_per_node"),
    ],
)
def test_impossible_topologies_raise(kwargs: dict[str, Any], words: str) -> None:
    with pytest.raises(ClusterEnvError, match=words):
        slurm_env(**kwargs)


def test_torchrun_and_local() -> None:
    with pytest.raises(ClusterEnvError, match="not a worker"):
        torchrun_env(1, 2, 2)
    assert detect_environment(torchrun_env(2, 2, 3)).node_rank == 1
    assert local_env() == {}
    assert detect_environment(local_env(2)).world_size == 2


@pytest.mark.parametrize("module", ["clusterenv", "clusterenv.testing"])
def test_docstring_examples(module: str) -> None:
    """The examples in module docstrings are run, so they cannot rot."""
    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0
