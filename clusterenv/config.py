"""The allocation inside a framework's own configuration: OmegaConf's ``${clusterenv:...}``.

Frameworks configured with Hydra/OmegaConf (ECMWF's anemoi-training among them) read the
number of nodes and devices from their config, and derive more from them than the
Trainer's arguments (anemoi scales its learning rate by both). The config must carry the
allocation before the trainer is built, so clusterenv offers it as config values::

    system.hardware.num_nodes: ${clusterenv:num_nodes}
    system.hardware.num_gpus_per_node: ${clusterenv:devices_per_node}

or on a Hydra command line (quote it for the shell)::

    clusterenv run -m anemoi.training train --config-name=debug \\
        'system.hardware.num_nodes=${clusterenv:num_nodes}' \\
        'system.hardware.num_gpus_per_node=${clusterenv:devices_per_node}'

``clusterenv run`` registers the resolver before it runs the script; elsewhere call
:func:`register_resolver` first (``import clusterenv.config`` alone does not import
OmegaConf). Values are those of :func:`~clusterenv.detect_environment` in the process
that resolves the config, so every rank of a launch gets the same ``num_nodes`` and
``devices_per_node``.
"""

from __future__ import annotations

import importlib.util

from clusterenv._core.spec import Accelerator, GpuVendor, ResourceSpec
from clusterenv._engine.detect import detect_environment
from clusterenv.exceptions import ClusterEnvError, MissingDependencyError

__all__ = ["RESOLVER", "VALUES", "accelerator", "num_workers", "register_resolver", "value"]

#: The resolver's name: ``${clusterenv:NAME}``.
RESOLVER = "clusterenv"
#: What ``${clusterenv:NAME}`` can give, and what each is.
VALUES = {
    "num_nodes": "nodes of the launch (Lightning's num_nodes)",
    "devices_per_node": "ranks on this node (Lightning's devices): one per GPU where each has one",
    "world_size": "ranks in the whole launch",
    "gpus_per_node": "GPUs allocated per node (0 on CPU)",
    "cpus_per_rank": "CPUs each rank may use (1 when unknown)",
    "num_workers": "a DataLoader num_workers for this rank: its CPUs less one",
    "accelerator": "Lightning's accelerator: cuda (NVIDIA, AMD), xpu (Intel) or cpu",
    "master_addr": "the main address (rank 0's host)",
    "master_port": "the main port",
}


def accelerator(spec: ResourceSpec) -> str:
    """Lightning's accelerator name: ``cuda`` for NVIDIA and AMD GPUs (PyTorch's ROCm build
    is ``torch.cuda``), ``xpu`` for Intel's (registered by an XPU plugin for Lightning,
    not by Lightning itself), else ``cpu``."""
    if spec.accelerator is not Accelerator.GPU:
        return "cpu"
    return "xpu" if spec.gpu_vendor is GpuVendor.INTEL else "cuda"


def num_workers(spec: ResourceSpec | None = None) -> int:
    """A DataLoader ``num_workers`` for this rank: its CPUs less one for the training
    process itself (0: load in the training process). Detects the spec when not given."""
    cpus = (spec or detect_environment()).cpus_per_rank
    return max(0, (cpus or 1) - 1)


def value(name: str, spec: ResourceSpec | None = None) -> int | str:
    """The value of ``${clusterenv:name}`` for ``spec`` (detected when not given)."""
    if name not in VALUES:
        raise ClusterEnvError(
            f"${{{RESOLVER}:{name}}} is not a clusterenv value",
            hint=f"use one of {', '.join(VALUES)}",
        )
    spec = spec or detect_environment()
    if name == "num_workers":
        return num_workers(spec)
    if name == "cpus_per_rank":
        return spec.cpus_per_rank or 1
    if name == "accelerator":
        return accelerator(spec)
    found: int | str = getattr(spec, name)
    return found


def register_resolver() -> None:
    """Register ``${clusterenv:NAME}`` with OmegaConf (idempotent).

    Raises :class:`~clusterenv.MissingDependencyError` when OmegaConf is not installed.
    """
    if importlib.util.find_spec("omegaconf") is None:
        raise MissingDependencyError(
            "the ${clusterenv:...} resolver needs OmegaConf", hint="pip install omegaconf"
        )
    import omegaconf  # noqa: PLC0415 - optional, only when registering

    config = omegaconf.OmegaConf
    if not config.has_resolver(RESOLVER):
        # OmegaConf 2.4 deprecates register_new_resolver (a warning in every run) for
        # register_resolver, which before 2.4 was the legacy string-only API.
        major, minor = (int(part) for part in omegaconf.__version__.split(".")[:2])
        register = (
            config.register_resolver if (major, minor) >= (2, 4) else config.register_new_resolver
        )
        # Not cached: a config resolved in another process (a spawned rank) detects anew.
        register(RESOLVER, _resolve, use_cache=False)


def _resolve(name: str) -> int | str:
    """``${clusterenv:NAME}``: one argument, the name (never a spec from the config)."""
    return value(name)
