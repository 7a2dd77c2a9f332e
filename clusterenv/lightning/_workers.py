"""A warning when a rank's DataLoaders start more worker processes than it has CPUs.

`clusterenv run` adds this callback to every Trainer it follows: oversubscribed workers
starve the training process and each other, which on a shared node looks like a slow GPU.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from typing import Any

from clusterenv._core.spec import ResourceSpec
from clusterenv.config import num_workers
from clusterenv.lightning._environment import TRAINERS, Package, import_module

__all__ = ["oversubscribed", "worker_check"]


def oversubscribed(spec: ResourceSpec, loaders: Iterable[Any]) -> str | None:
    """The warning for ``loaders`` (objects with ``num_workers``) on a rank of ``spec``, or
    ``None`` when they fit: workers plus the training process within ``cpus_per_rank``."""
    if spec.cpus_per_rank is None:
        return None
    asked = max((getattr(loader, "num_workers", 0) or 0 for loader in loaders), default=0)
    if asked + 1 <= spec.cpus_per_rank:
        return None
    return (
        f"a DataLoader starts {asked} worker processes but this rank may use "
        f"{spec.cpus_per_rank} CPU(s): the workers and the training process compete for "
        f"them. Fix: num_workers={num_workers(spec)} (clusterenv.lightning.num_workers(), or "
        "${clusterenv:num_workers} in a Hydra config), or ask for more CPUs per task"
    )


def _loaders(value: Any) -> list[Any]:
    """The DataLoaders of a Trainer's ``train_dataloader``: one, a CombinedLoader's, or a
    dict or list of them (Lightning 2 returns the iterables as the script gave them)."""
    if value is None:
        return []
    if isinstance(value, Mapping):
        value = list(value.values())
    if isinstance(value, list | tuple):
        return [loader for item in value for loader in _loaders(item)]
    flattened = getattr(value, "flattened", None)
    return list(flattened) if flattened is not None else [value]


def worker_check(spec: ResourceSpec, package: Package) -> Any:
    """A Lightning callback (of ``package``'s class tree) that warns, once per job, when
    the training DataLoaders oversubscribe the rank's CPUs."""
    base = import_module(TRAINERS[package]).Callback

    class ClusterEnvWorkerCheck(base):  # type: ignore[misc,valid-type]
        def on_train_start(self, trainer: Any, pl_module: Any) -> None:
            problem = oversubscribed(spec, _loaders(trainer.train_dataloader))
            if problem and spec.is_main_process:
                warnings.warn(problem, stacklevel=1)

    return ClusterEnvWorkerCheck()
