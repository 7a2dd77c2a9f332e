"""What Slurm grants each node and task: GPUs and CPUs, from Slurm's own variables."""

from __future__ import annotations

from clusterenv._core.reader import EnvReader, parse_integer
from clusterenv.sources.slurm._values import parse_gpu_count, tres_count

__all__ = ["granted_cpus", "slurm_gpus"]


def slurm_gpus(reader: EnvReader, tasks_here: int) -> int | None:
    """GPUs per node from Slurm's own variables; ``None`` when Slurm says nothing."""
    found = reader.lookup("SLURM_GPUS_ON_NODE")
    if found:
        reader.note("gpus_per_node", found[0])
        return parse_integer(*found, hint="Slurm sets this to the GPUs of this node")
    found = reader.lookup("SLURM_STEP_GPUS", "SLURM_JOB_GPUS")
    if found:
        reader.note("gpus_per_node", found[0])
        ids = [item for item in found[1].split(",") if item.strip()]
        for item in ids:
            parse_integer(found[0], item, hint="Slurm lists GPU indices such as '0,1'")
        return len(ids)
    found = reader.lookup("SLURM_GPUS_PER_NODE")
    if found:
        reader.note("gpus_per_node", found[0])
        return parse_gpu_count(*found)
    found = reader.lookup("SLURM_GPUS_PER_TASK")
    if found:
        reader.note("gpus_per_node", found[0])
        return parse_gpu_count(*found) * tasks_here
    found = reader.lookup("SLURM_TRES_PER_TASK")  # 23.11+: "cpu=2,gres/gpu=1"
    per_task = tres_count(*found, "gres/gpu") if found else None
    if found and per_task is not None:
        reader.note("gpus_per_node", found[0])
        return per_task * tasks_here
    return None


def granted_cpus(reader: EnvReader) -> int | None:
    """CPUs per task: ``--cpus-per-task`` (``SLURM_CPUS_PER_TASK``), or the ``cpu=N`` of
    ``SLURM_TRES_PER_TASK`` (23.11+); ``None`` when the job asked for neither."""
    found = reader.lookup("SLURM_CPUS_PER_TASK")
    if found:
        reader.note("cpus_per_rank", found[0])
        return parse_integer(*found, hint="Slurm sets this from --cpus-per-task", minimum=1)
    found = reader.lookup("SLURM_TRES_PER_TASK")
    count = tres_count(*found, "cpu") if found else None
    if found and count is not None:
        reader.note("cpus_per_rank", found[0])
        return max(1, count)
    return None
