"""Containers: which runtime a process runs in, by the runtime's own markers, and what a
job in it should have and does not.

A runtime started with a clean environment (Apptainer's ``--cleanenv``/``--containall``,
a podman or docker image without ``--env``) drops every scheduler and GPU variable: each
rank of an srun step then reads as a local run of its own, rank 0 of 1, without a word.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping

from clusterenv._core.finding import Finding
from clusterenv._core.spec import ResourceSpec, Role

__all__ = ["container_findings", "container_runtime"]

#: (runtime, variables it sets inside, files it leaves in the container's root), in order.
_MARKERS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("Apptainer", ("APPTAINER_CONTAINER", "APPTAINER_NAME"), ()),
    ("Singularity", ("SINGULARITY_CONTAINER", "SINGULARITY_NAME"), ("/.singularity.d",)),
    ("podman", (), ("/run/.containerenv",)),
    ("docker", (), ("/.dockerenv",)),
)


@functools.cache
def _in_root(path: str) -> bool:
    """Whether the container's marker ``path`` exists: looked at once per process (the
    pre-flight check runs in every adapter; a container's root does not change under it)."""
    return os.path.exists(path)


def container_runtime(
    env: Mapping[str, str], exists: Callable[[str], bool] = _in_root
) -> str | None:
    """The runtime this process runs in, or ``None``; ``container=<name>`` (set by podman
    and systemd's container convention) where no runtime-specific marker is there."""
    for runtime, variables, files in _MARKERS:
        if any(name in env for name in variables) or any(exists(path) for path in files):
            return runtime
    return env.get("container", "").strip() or None


def container_findings(spec: ResourceSpec, runtime: str | None) -> list[Finding]:
    """A container whose process has no job: if a launcher started it, the runtime dropped
    the launcher's variables."""
    if runtime is None or spec.role is not Role.STANDALONE or spec.job_id is not None:
        return []
    return [
        Finding(
            id="container-without-job",
            message=f"inside a {runtime} container with no scheduler or launcher variable: "
            "if srun, torchrun or mpirun started it, the runtime dropped their variables "
            "(SLURM_*, RANK, CUDA_VISIBLE_DEVICES) and every rank trains alone as rank 0 of 1",
            fix="pass the job's environment into the container (apptainer exec without "
            "--cleanenv/--containall; podman/docker run --env-host or -e for each variable)",
            level="info",
        )
    ]
