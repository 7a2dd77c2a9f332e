"""Short names for the builders of :mod:`clusterenv.testing` used throughout the tests.

The builders themselves are checked against real captures (tests/test_testing.py).
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from importlib import import_module
from pathlib import Path
from typing import Any

from clusterenv import ResourceSpec, Source, detect_environment, expand_hostlist
from clusterenv.testing import Launch, slurm_env, task_counts, torchrun_env

__all__ = [
    "HERE",
    "batch_step",
    "detect",
    "examples",
    "fields",
    "salloc_shell",
    "srun_task",
    "task_counts",
    "torchrun_worker",
]

#: The node list of a two-node job whose first node is this machine: the pre-flight check
#: judges this node's facts there (a job of other hosts, a mock, gets the launch's only).
HERE = f"{socket.gethostname().partition('.')[0]},cn002"


def examples(source: Source) -> list[Launch]:
    """The example launches of ``source``'s builder module (``clusterenv/_models/<source>.py``)."""
    builders = import_module(f"clusterenv._models.{source.value}")
    launches: list[Launch] = builders.examples()
    return launches


def detect(env: Mapping[str, str], gpus: Sequence[str] = ()) -> ResourceSpec:
    """The one detection helper of the tests: ``gpus`` is what the GPU probe finds, and a
    builder's host files and launcher answers (Flux's taskmap) come from the
    :class:`~clusterenv.testing.Launch`: no command runs."""
    launch = env if isinstance(env, Launch) else Launch({})
    return detect_environment(
        env, gpu_probe=lambda: tuple(gpus), read_file=launch.read_file, ask=launch.ask
    )


def fields(spec: ResourceSpec, expected: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of ``spec`` named in ``expected``, enums as their values: compare the two."""
    values = {name: getattr(spec, name) for name in expected}
    return {name: getattr(value, "value", value) for name, value in values.items()}


def srun_task(
    tasks_per_node: list[int],
    procid: int = 0,
    *,
    nodelist: str | None = None,
    job_id: str = "4242",
    cyclic: bool = False,
    gpus_on_node: int | None = None,
    job_name: str = "python",
) -> Launch:
    """Task ``procid`` of ``srun -n`` whose node i runs tasks_per_node[i] tasks."""
    return slurm_env(
        len(tasks_per_node),
        tasks_per_node,
        procid,
        nodelist=nodelist,
        job_id=job_id,
        distribution="cyclic" if cyclic else None,
        gpus_per_node=gpus_on_node,
        job_name=job_name,
    )


def batch_step(
    nodelist: str = "cn[001-002]",
    *,
    job_id: str = "4242",
    ntasks_per_node: int | None = None,
    gpus_per_node: int | None = None,
) -> dict[str, str]:
    """The body of an sbatch script (Slurm's batch step), on the first node."""
    return slurm_env(
        len(expand_hostlist(nodelist)),
        ntasks_per_node,
        step="batch",
        nodelist=nodelist,
        job_id=job_id,
        gpus_per_node=gpus_per_node,
        job_name="job.sh",
    )


def salloc_shell(nodelist: str = "cn[001-002]", *, job_id: str = "4242") -> dict[str, str]:
    """The shell salloc opens on the submit host: no task, no step."""
    return slurm_env(
        len(expand_hostlist(nodelist)), step="salloc", nodelist=nodelist, job_id=job_id
    )


def torchrun_worker(
    rank: int = 0,
    *,
    nproc_per_node: int = 2,
    nnodes: int = 1,
    master_addr: str = "localhost",
    master_port: int = 29400,
    run_id: str = "none",
) -> dict[str, str]:
    """Worker ``rank`` of ``torchrun --nnodes=N --nproc_per_node=P``."""
    return torchrun_env(
        nnodes,
        nproc_per_node,
        rank,
        master_addr=master_addr,
        master_port=master_port,
        run_id=run_id,
    )


def clusterenv_command(
    *args: str, env: Mapping[str, str], timeout: float = 120, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m clusterenv ARGS`` in a fresh process that has ``env`` and a plain PATH
    only: nothing of the test process's environment leaks in."""
    return subprocess.run(
        [sys.executable, "-m", "clusterenv", *args],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", **env},
        timeout=timeout,
        cwd=cwd,
    )
