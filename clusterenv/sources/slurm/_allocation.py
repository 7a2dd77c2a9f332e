"""The allocation a Slurm job script asks for, from its options as sbatch reads them
(:mod:`._script`): the counts `clusterenv check` builds every task from."""

from __future__ import annotations

from clusterenv._core.finding import Finding
from clusterenv._core.safe import shorten
from clusterenv.sources._script import Directives, Option

__all__ = ["allocation"]


def _count(option: Option | None, finding: list[tuple[int, Finding]]) -> int | None:
    """An option's positive count (``2``, the least of ``2-4``, the count of ``a100:2``)."""
    if option is None or option.value is None:
        return None
    written = option.value.split("-")[0].rsplit(":", 1)[-1]
    if written.isdigit() and 0 < int(written) < 1 << 20:
        return int(written)
    finding.append(
        (
            option.line,
            Finding(
                id="slurm.directive-refused",
                message=f"--{option.name}={shorten(option.value)!r} is not a count: sbatch "
                "refuses the job",
                fix=f"give --{option.name} a positive number",
                level="error",
            ),
        )
    )
    return None


def allocation(
    read: Directives, found: list[tuple[int, Finding]]
) -> dict[str, int | str | dict[str, int] | None]:
    """What the directives (and command line) ask for: nodes, tasks_per_node, ntasks,
    gpus_per_node, gpus_per_task, cpus_per_task, job_name, array, and ``lines`` (each
    field's line); a count sbatch refuses is a finding in ``found``."""
    given = read.given
    gres = given.get("gres")
    gpu_gres = gres if gres and gres.value and gres.value.startswith("gpu") else None
    per_node = given.get("gpus-per-node") or gpu_gres
    values: dict[str, int | None] = {
        "nodes": _count(given.get("nodes"), found),
        "tasks_per_node": _count(given.get("ntasks-per-node"), found),
        "ntasks": _count(given.get("ntasks"), found),
        "gpus_per_node": _count(per_node, found),
        "gpus_per_task": _count(given.get("gpus-per-task"), found),
        "cpus_per_task": _count(given.get("cpus-per-task"), found),
    }
    total = _count(given.get("gpus"), found)
    nodes = values["nodes"] or 1
    if total and values["gpus_per_node"] is None:
        if total % nodes:
            found.append((given["gpus"].line, _uneven_gpus(total, nodes)))
        else:
            values["gpus_per_node"] = total // nodes
    origins = {
        "nodes": "nodes",
        "tasks_per_node": "ntasks-per-node",
        "ntasks": "ntasks",
        "gpus_per_node": per_node.name if per_node else "gpus",
        "gpus_per_task": "gpus-per-task",
        "cpus_per_task": "cpus-per-task",
        "job_name": "job-name",
        "array": "array",
    }
    texts = {
        name: given[o].value
        for name, o in origins.items()
        if name in ("job_name", "array") and o in given
    }
    lines = {name: given[o].line for name, o in origins.items() if o in given}
    return {**values, **texts, "lines": lines}


def _uneven_gpus(total: int, nodes: int) -> Finding:
    return Finding(
        id="slurm.gpus-uneven",
        message=f"--gpus={total} over {nodes} nodes: Slurm may place them unevenly, and "
        "Lightning and torchrun start the same number of ranks on every node",
        fix=f"ask per node: --gpus-per-node={max(1, total // nodes)}",
    )
