"""Processes that Python's multiprocessing started inside a rank (``mp.spawn``, a
``Process``, Lightning's ``ddp_spawn``): they inherit the launcher's variables of the process
that started them, so each claims that process's rank (``SLURM_PROCID=0`` in every child of
a one-task step).

A child is told apart from a rank by two facts: multiprocessing started it (its
``parent_process()``), and its launcher variables are all its parent's, as the parent was
started (``/proc/PID/environ``) — a launcher written in Python that gives each child its own
``RANK`` before starting it changes one, and is silent here.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Mapping

from clusterenv._core.finding import Finding
from clusterenv._core.hostfile import read_bytes
from clusterenv._core.spec import ResourceSpec, Role
from clusterenv.sources import read_by_a_source

__all__ = ["spawned_by", "spawned_findings"]


def spawned_by(
    env: Mapping[str, str],
    started_by_multiprocessing: Callable[[], object] = multiprocessing.parent_process,
    read: Callable[[str], bytes] = read_bytes,
) -> int | None:
    """The pid of the process that started this one with multiprocessing, where every
    launcher variable of ``env`` is that process's own; ``None`` otherwise, or where that
    process's environment cannot be read."""
    if started_by_multiprocessing() is None:
        return None
    pid = os.getppid()
    try:
        data = read(f"/proc/{pid}/environ")
    except OSError:
        return None
    entries = (entry.partition("=") for entry in data.decode(errors="replace").split("\0"))
    theirs = {name: value for name, _, value in entries if name}
    ours = {name: value for name, value in env.items() if read_by_a_source(name, env)}
    return pid if ours and all(theirs.get(n) == v for n, v in ours.items()) else None


def spawned_findings(spec: ResourceSpec, parent: int | None) -> list[Finding]:
    """A rank's process that multiprocessing copied: every copy claims the same rank."""
    if parent is None or spec.role is not Role.RANK:
        return []
    rank = f"rank {spec.global_rank} of {spec.world_size}"
    many = spec.world_size > 1
    return [
        Finding(
            id="spawned-child",
            message=f"Python's multiprocessing started this process in process {parent}, "
            f"whose launcher variables it has unchanged: it, its siblings and process "
            f"{parent} all claim {rank}"
            + (", so the process group waits for ranks that never come" if many else ""),
            fix="start one process per rank with the launcher (srun --ntasks-per-node=N, "
            "torchrun --nproc-per-node=N, mpirun -np N) rather than multiprocessing (with "
            "Lightning: strategy='ddp', not 'ddp_spawn'); or give each child its own RANK, "
            "LOCAL_RANK and WORLD_SIZE before starting it",
            level="error" if many else "warning",
        )
    ]
