"""Warnings about the things that actually break multi-node jobs, each with a one-line fix.

What is true of every source lives here; what one scheduler or launcher knows is its
detector's ``diagnose`` hook, asked for the detected source and for every source around it.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from clusterenv._adapters.frameworks import launcher_for, torchrun_arguments
from clusterenv._core.finding import Finding
from clusterenv._core.spec import ResourceSpec, Role
from clusterenv._engine.detect import launch_facts
from clusterenv._node.gpu import gpu_findings
from clusterenv.sources import findings

__all__ = ["diagnose"]


def diagnose(spec: ResourceSpec, env: Mapping[str, str]) -> list[Finding]:
    """The warnings for ``spec`` detected from ``env``; empty when all is well."""
    launch = launch_facts(spec)
    found = []
    if spec.role is Role.BATCH:
        launcher = launcher_for(spec)
        found.append(
            Finding(
                id="batch-step",
                message=f"this is {launch.description}: one process, not the ranks",
                fix=f"start them with `{launcher} python train.py` (or `{launcher} clusterenv "
                "inspect`)",
                level="info",
            )
        )
    elif spec.role is Role.NODE:
        torchrun = f"torchrun {shlex.join(torchrun_arguments(spec))}"
        found.append(
            Finding(
                id="node-process",
                message=f"this is {launch.description}: one process for this node's "
                f"{spec.devices_per_node} ranks",
                fix=f"start them with `{torchrun} train.py`, or let Lightning "
                "start them (`clusterenv run train.py`)",
                level="info",
            )
        )
    elif spec.role is Role.SHELL:
        found.append(
            Finding(
                id="submit-shell",
                message=f"this is {launch.description}, on the submit host outside the "
                "allocation's nodes",
                fix=f"run `{launcher_for(spec)} clusterenv inspect` to see what each task gets",
                level="info",
            )
        )
    if spec.role is Role.BATCH and spec.world_size != spec.num_nodes * spec.devices_per_node:
        found.append(
            Finding(
                id="uneven-slots",
                message=f"{spec.world_size} slots over {spec.num_nodes} nodes is not the same "
                "number on every node, which Lightning needs",
                fix=launch.hints.uneven,
            )
        )
    return [*found, *_process_findings(spec, env), *gpu_findings(spec, env), *findings(spec, env)]


def _process_findings(spec: ResourceSpec, env: Mapping[str, str]) -> list[Finding]:
    """What breaks any launch: an empty main address, threads beyond the CPUs."""
    found = []
    given = env.get("MASTER_ADDR")
    if given is not None and not given.strip():
        found.append(
            Finding(
                id="main-address-empty",
                message="MASTER_ADDR is set but empty (a command substitution such as "
                "$(scontrol show hostnames ...) that printed nothing, in a container "
                f"without it): torch.distributed reads it as it is, clusterenv uses "
                f"{spec.master_addr}",
                fix="unset MASTER_ADDR, or export it from clusterenv (eval $(clusterenv env))",
                level="error" if spec.world_size > 1 else "warning",
            )
        )
    threads = env.get("OMP_NUM_THREADS", "").strip()
    cpus = spec.cpus_per_rank
    if threads.isdigit() and len(threads) < 6 and cpus and int(threads) > cpus:
        found.append(
            Finding(
                id="omp-oversubscribed",
                message=f"OMP_NUM_THREADS={threads} threads in each of this node's "
                f"{spec.devices_per_node} rank(s), which may run on {cpus} CPU(s) each: the "
                "threads fight over the cores",
                fix=f"export OMP_NUM_THREADS={cpus}",
            )
        )
    return found
