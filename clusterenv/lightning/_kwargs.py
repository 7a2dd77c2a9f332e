"""``Trainer``/``Fabric`` keyword arguments, and neural-lam's command-line options."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from clusterenv._adapters.frameworks import launcher_for
from clusterenv._core.spec import Accelerator, ResourceSpec, Role
from clusterenv._diagnosis.preflight import preflight
from clusterenv._engine.detect import explain_environment
from clusterenv.config import accelerator
from clusterenv.exceptions import ClusterEnvError, LaunchMismatchError
from clusterenv.lightning._checks import check_gpu_visible, check_launch, count, where
from clusterenv.lightning._environment import Package, cluster_environment

__all__ = [
    "Devices",
    "add_trainer_args",
    "fabric_kwargs",
    "parse_devices",
    "trainer_kwargs",
]

Devices = int | str | Sequence[int | str] | None
_Parser = TypeVar("_Parser", bound=argparse._ActionsContainer)


def add_trainer_args(parser: _Parser) -> _Parser:
    """Add neural-lam's ``--num_nodes`` and ``--devices``, defaulting to the allocation.

    ``parser`` may also be an argument group (``parser.add_argument_group(...)``).
    """
    parser.add_argument(
        "--num_nodes",
        type=int,
        default=None,
        help="nodes to train on (default: those of the srun step or torchrun launch)",
    )
    parser.add_argument(
        "--devices",
        nargs="+",
        default=["auto"],
        help="'auto' (default: one per rank the launcher started, or every visible GPU), "
        "a count such as 2, or GPU indices such as 0 1",
    )
    return parser


def trainer_kwargs(
    spec_or_args: ResourceSpec | argparse.Namespace | None = None,
    *,
    evaluation: bool = False,
    package: Package | None = None,
    **overrides: Any,
) -> dict[str, Any]:
    """Keyword arguments for ``lightning.pytorch.Trainer`` / ``pytorch_lightning.Trainer``.

    ``spec_or_args`` is a spec, parsed arguments with ``num_nodes``/``devices`` (from
    :func:`add_trainer_args`), or ``None`` to detect. Explicit ``num_nodes``/``devices``
    (in the arguments or in ``overrides``) win over the detected ones, but must agree
    with a started launch; a contradiction raises :class:`~clusterenv.ClusterEnvError`
    saying how to fix the sbatch/srun/torchrun line. The pre-flight check
    (:func:`clusterenv.preflight`) prints the launch's warnings once and raises
    :class:`~clusterenv.PreflightError` where a hang is certain. ``use_distributed_sampler`` is off
    for ``evaluation``, as neural-lam does. Other ``overrides`` are passed through.
    """
    kwargs = _kwargs(spec_or_args, package, overrides)
    kwargs.setdefault("use_distributed_sampler", not evaluation)
    return kwargs


def fabric_kwargs(
    spec_or_args: ResourceSpec | argparse.Namespace | None = None,
    *,
    package: Package | None = None,
    **overrides: Any,
) -> dict[str, Any]:
    """Like :func:`trainer_kwargs`, for ``lightning.fabric.Fabric`` (no sampler flag)."""
    return _kwargs(spec_or_args, package, overrides)


def _kwargs(
    spec_or_args: ResourceSpec | argparse.Namespace | None,
    package: Package | None,
    overrides: dict[str, Any],
) -> dict[str, Any]:
    if isinstance(spec_or_args, ResourceSpec):
        spec, origins = spec_or_args, {}
    else:
        detection = explain_environment()
        spec, origins = detection.spec, detection.origins
    args = vars(spec_or_args) if isinstance(spec_or_args, argparse.Namespace) else {}
    num_nodes = overrides.pop("num_nodes", args.get("num_nodes"))
    devices = parse_devices(overrides.pop("devices", args.get("devices")))
    num_nodes, devices = _geometry(spec, origins, num_nodes, devices)
    preflight(spec)
    count = devices if isinstance(devices, int) else len(devices)
    return {
        "num_nodes": num_nodes,
        "devices": devices,
        "accelerator": accelerator(spec),
        "strategy": "ddp" if num_nodes * count > 1 else "auto",
        "plugins": [cluster_environment(spec, package=package)],
        **overrides,
    }


def parse_devices(value: Devices) -> int | list[int] | None:
    """``None`` for auto; a count (``2``, ``"2"``, ``["2"]``); or indices (``0 1``, ``"0,"``)."""
    raw = [value] if isinstance(value, int | str) or value is None else list(value)
    text = [str(item).strip() for item in raw]
    if len(text) == 1 and text[0].lower() in ("none", "auto", "-1"):
        return None
    try:
        numbers = [int(part) for item in text for part in item.split(",") if part.strip()]
    except ValueError:
        numbers = []
    if not numbers:
        raise ClusterEnvError(
            f"devices={value!r} is not 'auto', a count or a list of GPU indices",
            hint="pass --devices auto, --devices 2 or --devices 0 1",
        )
    if len(text) == 1 and "," not in text[0]:  # Lightning's rule: "2" counts, "2," indexes
        if numbers[0] < 1:
            raise ClusterEnvError(
                f"devices={value!r} asks for no device", hint="pass --devices auto or a count >= 1"
            )
        return numbers[0]
    if len(set(numbers)) != len(numbers) or min(numbers) < 0:
        raise ClusterEnvError(
            f"devices={value!r} repeats a GPU index or has a negative one",
            hint="list each GPU index once, e.g. --devices 0 1",
        )
    return numbers


def _geometry(
    spec: ResourceSpec,
    origins: Mapping[str, str],
    num_nodes: int | None,
    devices: int | list[int] | None,
) -> tuple[int, int | list[int]]:
    """``num_nodes``/``devices`` for the Trainer, explicit values checked against ``spec``."""
    if spec.role in (Role.RANK, Role.NODE):  # a node's ranks: Lightning starts them
        nodes = spec.num_nodes if num_nodes is None else num_nodes
        chosen = spec.devices_per_node if devices is None else devices
        check_launch(spec, origins, nodes, count(chosen), "")
        check_gpu_visible(spec, chosen)
        return nodes, chosen
    here = where(spec)
    if spec.role is Role.SHELL:
        raise ClusterEnvError(
            f"this is {here}, which runs on the submit host, not on a node of the allocation",
            hint=f"start the script inside the allocation: {launcher_for(spec)} python train.py",
        )
    launcher = launcher_for(spec)
    if num_nodes is None and spec.num_nodes > 1:
        raise ClusterEnvError(
            f"this is {here}, over {spec.num_nodes} nodes; training here would use this node only",
            hint=f"start the ranks with {launcher}: {launcher} python train.py ... "
            "(or pass --num_nodes 1 to train on this node alone)",
        )
    if num_nodes not in (None, 1):
        raise LaunchMismatchError(
            f"num_nodes={num_nodes} but this is {here}: one process on one node",
            hint=f"start the ranks with {launcher} (or torchrun --nnodes on every node)",
        )
    gpus = len(spec.visible_devices) if spec.accelerator is Accelerator.GPU else 0
    if devices is None:
        return 1, gpus or (1 if spec.role is Role.STANDALONE else spec.devices_per_node)
    if gpus and count(devices) > gpus:
        raise LaunchMismatchError(
            f"devices={devices} but this process sees {gpus} GPU(s) "
            f"({', '.join(spec.visible_devices)})",
            hint="pass --devices auto, or fewer devices",
        )
    if isinstance(devices, list) and (not gpus or max(devices) >= gpus):
        raise LaunchMismatchError(
            f"devices={devices} names GPU indices but this process sees {gpus} GPU(s)",
            hint="pass a count (--devices 2) on CPU, or indices below the number of GPUs",
        )
    return 1, devices
