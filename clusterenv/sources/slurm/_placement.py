"""Where Slurm placed task 0, whose node is the main address."""

from __future__ import annotations

from clusterenv._core.reader import EnvReader
from clusterenv._core.safe import shorten
from clusterenv.exceptions import InconsistentEnvironmentError

__all__ = ["rank_zero_node"]


def rank_zero_node(reader: EnvReader, hostnames: tuple[str, ...], *, step: bool) -> str:
    """Task 0's node: the first of the node list, except in a step with
    ``--distribution=arbitrary``, whose tasks follow the lines of ``SLURM_HOSTFILE``
    (the node list is sorted, so its first node need not hold task 0)."""
    arbitrary = reader.env.get("SLURM_DISTRIBUTION", "").startswith("arbitrary")
    if not (step and arbitrary):
        reader.derive("master_addr", "hostnames")
        return hostnames[0]
    hint = (
        "srun --distribution=arbitrary places task 0 on the first line of SLURM_HOSTFILE; "
        "make the file readable on every node, or export MASTER_ADDR as that host"
    )
    first = reader.hosts("master_addr", "SLURM_HOSTFILE", hint=hint)[:1]
    if not first or first[0] not in hostnames:
        raise InconsistentEnvironmentError(
            f"SLURM_HOSTFILE's first host {shorten(first[0] if first else '')!r} is not "
            f"a node of the step ({shorten(','.join(hostnames))})",
            variables=("SLURM_HOSTFILE", "SLURM_STEP_NODELIST"),
            hint=hint,
        )
    reader.note("master_addr", "SLURM_HOSTFILE", "SLURM_DISTRIBUTION")
    return first[0]
