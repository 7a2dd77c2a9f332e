"""Warnings about the things that actually break multi-node jobs, each with a one-line fix."""

from __future__ import annotations

from collections.abc import Mapping

from clusterenv._spec import ResourceSpec, Role, Source
from clusterenv.sources.slurm import SlurmDetector

__all__ = ["JOB_SCRIPTS", "diagnose", "launcher_for"]

#: Schedulers whose job script is a ``batch`` process: how it is called, and what starts
#: the ranks from it.
JOB_SCRIPTS = {
    Source.SLURM: ("the batch step of an sbatch script", "srun"),
    Source.PBS: ("the job script of a PBS job", "mpirun"),
    Source.LSF: ("the job script of an LSF job", "jsrun"),
}

# Ports that many scripts hard-code: two jobs sharing a node then collide.
_COMMON_PORTS = frozenset({12910, 29500, 1234, 12345})


def launcher_for(spec: ResourceSpec) -> str:
    """The command that starts the ranks, for a process that is not one (e.g. ``srun``)."""
    return JOB_SCRIPTS[spec.source][1] if spec.role is Role.BATCH else "srun"


def diagnose(spec: ResourceSpec, env: Mapping[str, str]) -> list[str]:
    """Human-readable warnings for ``spec`` detected from ``env``; empty when all is well."""
    warnings = []
    slurm = SlurmDetector().present(env)  # also when torchrun or mpirun runs inside the job
    if spec.role is Role.BATCH:
        script, launcher = JOB_SCRIPTS[spec.source]
        warnings.append(
            f"this is {script}: one process, not the ranks. Fix: start them with "
            f"`{launcher} python train.py` (or `{launcher} clusterenv inspect`)"
        )
        uneven = spec.world_size != spec.num_nodes * spec.devices_per_node
        if uneven and spec.source is not Source.SLURM:  # Slurm's: the --ntasks warning
            warnings.append(
                f"{spec.world_size} slots over {spec.num_nodes} nodes is not the same number "
                "on every node, which Lightning needs. Fix: request the same slots per node "
                "(PBS select=N:mpiprocs=P, LSF span[ptile=P])"
            )
    elif spec.role is Role.SHELL:
        warnings.append(
            "this is the salloc shell on the submit host, outside the allocation's nodes. "
            "Fix: run `srun clusterenv inspect` to see what each task gets"
        )
    if spec.gpus_per_node and not spec.visible_devices and spec.role is not Role.SHELL:
        shown = repr(env["CUDA_VISIBLE_DEVICES"]) if "CUDA_VISIBLE_DEVICES" in env else "unset"
        warnings.append(
            f"{spec.gpus_per_node} GPUs per node are allocated but CUDA_VISIBLE_DEVICES is "
            f"{shown} and none is visible. Fix: do not set CUDA_VISIBLE_DEVICES in the job script"
        )
    if (
        spec.source is Source.SLURM
        and spec.role is Role.RANK
        and spec.gpus_per_node
        and spec.devices_per_node != spec.gpus_per_node
    ):
        warnings.append(
            f"{spec.devices_per_node} tasks on this node but {spec.gpus_per_node} GPUs: "
            f"Lightning expects one task per GPU. Fix: --ntasks-per-node={spec.gpus_per_node}"
        )
    if (
        slurm
        and "SLURM_NTASKS" in env
        and "SLURM_NTASKS_PER_NODE" not in env
        and spec.num_nodes > 1
    ):
        warnings.append(
            "--ntasks without --ntasks-per-node: Slurm may spread tasks unevenly and "
            "Lightning's own SLURMEnvironment refuses the job. Fix: use --ntasks-per-node"
        )
    if spec.source is Source.MPI and slurm:
        warnings.append(
            "mpirun inside a Slurm job: no MPI variable names the node, so each rank's node "
            "is derived assuming the same number of ranks per node. Fix: srun --mpi=pmix "
            "(Slurm then names the nodes), or keep --ntasks-per-node"
        )
    if spec.source is Source.KUBEFLOW and len(spec.visible_devices) > 1:
        warnings.append(
            f"this pod sees {len(spec.visible_devices)} GPUs but the PyTorchJob starts one "
            "process per pod, so all but one GPU stay idle. Fix: run torchrun "
            f"--nproc_per_node={len(spec.visible_devices)} in the pod (nprocPerNode)"
        )
    step_tasks = env.get("SLURM_STEP_TASKS_PER_NODE", "")
    if (
        spec.source is Source.TORCHELASTIC
        and "SLURM_STEP_ID" in env
        and step_tasks not in ("", "1")
    ):
        warnings.append(
            f"torchrun runs inside an srun step with SLURM_STEP_TASKS_PER_NODE={step_tasks!r}: "
            "every task starts its own torchrun (a double launch). Fix: srun --ntasks-per-node=1"
        )
    if slurm and spec.master_port in _COMMON_PORTS and "MASTER_PORT" in env:
        warnings.append(
            f"MASTER_PORT={env['MASTER_PORT']!r} is a common default; two jobs on one node will "
            "collide. Fix: unset MASTER_PORT and clusterenv derives one from the job id"
        )
    if (
        spec.source is Source.MPI
        and spec.job_id is None  # MPICH's hydra names no job to derive a port from
        and spec.world_size > 1
        and "MASTER_PORT" not in env
    ):
        warnings.append(
            "neither MASTER_PORT nor a job id is set, so the ranks meet on the default port "
            f"{spec.master_port}; two such jobs on one node collide. Fix: export MASTER_PORT "
            "(a port unique to the job) to every rank"
        )
    job_name = env.get("SLURM_JOB_NAME")
    if job_name in ("bash", "interactive") and spec.role is Role.RANK and spec.world_size > 1:
        warnings.append(
            f"SLURM_JOB_NAME={job_name!r}: Lightning's own SLURM detection then treats every "
            "task as rank 0. Fix: pass clusterenv's cluster environment to the Trainer, or "
            "name the job (--job-name)"
        )
    return warnings
