"""Warnings about the things that actually break multi-node jobs, each with a one-line fix.

What is true of every source lives here; what one scheduler or launcher knows is its
detector's ``diagnose`` hook, asked for the detected source and for every source around it.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from clusterenv._detect import launch_facts
from clusterenv._finding import Finding
from clusterenv._frameworks import launcher_for, torchrun_arguments
from clusterenv._gpu import VENDOR_VARIABLES
from clusterenv._safe import shorten
from clusterenv._spec import GpuVendor, ResourceSpec, Role
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
            )
        )
    elif spec.role is Role.SHELL:
        found.append(
            Finding(
                id="submit-shell",
                message=f"this is {launch.description}, on the submit host outside the "
                "allocation's nodes",
                fix=f"run `{launcher_for(spec)} clusterenv inspect` to see what each task gets",
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
    if spec.gpus_per_node and not spec.visible_devices and spec.role is not Role.SHELL:
        names = VENDOR_VARIABLES[spec.gpu_vendor or GpuVendor.NVIDIA]
        name = next((name for name in names if name in env), names[0])
        shown = repr(shorten(env[name])) if name in env else "unset"
        found.append(
            Finding(
                id="gpus-hidden",
                message=f"{spec.gpus_per_node} GPUs per node are allocated but {name} is "
                f"{shown} and none is visible",
                fix=f"do not set {name} in the job script",
            )
        )
    return found + findings(spec, env)
