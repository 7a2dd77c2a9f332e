"""The launch fixes the geometry: checks that a framework's settings agree with it."""

from __future__ import annotations

from collections.abc import Mapping

from clusterenv._core.spec import Accelerator, ResourceSpec
from clusterenv._engine.detect import launch_facts
from clusterenv.exceptions import LaunchMismatchError

__all__ = ["check_gpu_visible", "check_launch", "count", "where"]


def count(devices: int | list[int]) -> int:
    return devices if isinstance(devices, int) else len(devices)


def where(spec: ResourceSpec) -> str:
    """What this process is, in words (``the srun step of job 42``)."""
    return launch_facts(spec).description


def check_launch(
    spec: ResourceSpec, origins: Mapping[str, str], num_nodes: int, devices: int, whose: str
) -> None:
    """A started launch fixes the geometry; Lightning's must be the same."""
    hints = launch_facts(spec).hints

    def origin(field: str) -> str:
        return f" ({origins[field]})" if field in origins else ""

    if spec.world_size != spec.num_nodes * spec.devices_per_node:
        raise LaunchMismatchError(
            f"{where(spec)} runs {spec.world_size} ranks on {spec.num_nodes} nodes with "
            f"{spec.devices_per_node} on this one; Lightning needs the same number on every node",
            hint=hints.uneven,
        )
    if num_nodes != spec.num_nodes:
        raise LaunchMismatchError(
            f"{whose}num_nodes={num_nodes} contradicts {where(spec)}, which runs on "
            f"{spec.num_nodes} node(s){origin('num_nodes')}",
            hint="let num_nodes follow the launch: leave it unset (in a Hydra/OmegaConf config: "
            f"${{clusterenv:num_nodes}}), or {hints.num_nodes}",
        )
    if devices != spec.devices_per_node:
        raise LaunchMismatchError(
            f"{whose}devices={devices} per node contradicts {where(spec)}, which started "
            f"{spec.devices_per_node} rank(s) on this node{origin('devices_per_node')}",
            hint="let devices follow the launch: leave it unset (in a Hydra/OmegaConf config: "
            f"${{clusterenv:devices_per_node}}), or {hints.devices}",
        )


def check_gpu_visible(spec: ResourceSpec, devices: int | list[int]) -> None:
    """Lightning puts a rank on ``cuda:<devices[local_rank]>`` (``xpu:`` on Intel); that
    GPU must be visible."""
    if spec.accelerator is not Accelerator.GPU or not spec.visible_devices:
        return
    index = spec.local_rank if isinstance(devices, int) else devices[spec.local_rank]
    if index >= len(spec.visible_devices):
        raise LaunchMismatchError(
            f"local rank {spec.local_rank} would run on cuda:{index}, but this task sees "
            f"{len(spec.visible_devices)} GPU(s) ({', '.join(spec.visible_devices)})",
            hint=launch_facts(spec).hints.gpus,
        )
