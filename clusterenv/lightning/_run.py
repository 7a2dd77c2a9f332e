"""Zero-code adoption: `clusterenv run` and :func:`follow_allocation` patch Lightning's
``Trainer`` so that the Trainers of unmodified scripts follow the allocation."""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import os
import runpy
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from clusterenv._core.spec import Accelerator, ResourceSpec
from clusterenv._diagnosis.preflight import preflight, suspended
from clusterenv._engine.detect import explain_environment
from clusterenv.config import register_resolver
from clusterenv.lightning._environment import ENVIRONMENTS, TRAINERS, Package, import_module
from clusterenv.lightning._kwargs import trainer_kwargs
from clusterenv.lightning._workers import worker_check

__all__ = ["follow_allocation", "run_script"]


@contextlib.contextmanager
def follow_allocation(
    spec: ResourceSpec | None = None, *, command: Sequence[str] = ()
) -> Iterator[ResourceSpec]:
    """Within the block, every Lightning ``Trainer`` follows the allocation.

    Patches ``__init__`` of ``lightning.pytorch.Trainer`` and ``pytorch_lightning.Trainer``
    (those installed), for scripts you do not control. Each call gets
    :func:`trainer_kwargs` merged in, changing only what the script left at Lightning's
    defaults: ``num_nodes`` (``1`` counts as the default), ``devices`` (``"auto"``),
    ``strategy`` and ``accelerator`` (``"auto"``); the cluster-environment plugin is added
    unless the script passes one, and a callback that warns when the training DataLoaders
    start more workers than the rank has CPUs (``cpus_per_rank``). Explicit values that
    contradict the allocation raise :class:`~clusterenv.ClusterEnvError`. The pre-flight
    check (:func:`clusterenv.preflight`) runs first, of ``command`` too where given (what the
    block will run: a launcher's own options are checked). On CPU a
    one-element device list such as neural-lam's ``--devices 2`` (``devices=[2]``) is read
    as a count, since there are no CPU device indices.
    """
    spec = spec or explain_environment().spec
    preflight(spec, command=command)  # before the script loads data: a hang stops here
    patched: list[tuple[Any, Any]] = []
    try:
        for package, module in TRAINERS.items():
            if importlib.util.find_spec(package) is None:
                continue
            trainer = importlib.import_module(module).Trainer
            patched.append((trainer, trainer.__init__))
            trainer.__init__ = _following(trainer.__init__, spec, package)
        yield spec
    finally:
        for trainer, original in patched:
            trainer.__init__ = original


def _following(original: Callable[..., None], spec: ResourceSpec, package: Package) -> Any:
    @functools.wraps(original)
    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **_merge(spec, package, kwargs))

    return init


def _merge(spec: ResourceSpec, package: Package, given: dict[str, Any]) -> dict[str, Any]:
    num_nodes = given.get("num_nodes", 1)
    devices = given.get("devices", "auto")
    cpu = spec.accelerator is Accelerator.CPU
    if cpu and isinstance(devices, list | tuple) and len(devices) == 1:
        devices = devices[0]  # neural-lam turns --devices 2 into [2]
    with suspended():  # follow_allocation checked the launch once, before the script ran
        ours = trainer_kwargs(
            spec, package=package, num_nodes=None if num_nodes == 1 else num_nodes, devices=devices
        )
    merged = {**given, "num_nodes": ours["num_nodes"], "devices": ours["devices"]}
    for name in ("strategy", "accelerator"):
        if given.get(name, "auto") == "auto":
            merged[name] = ours[name]
    plugins = given.get("plugins") or []
    plugins = list(plugins) if isinstance(plugins, list | tuple) else [plugins]
    base = import_module(ENVIRONMENTS[package]).ClusterEnvironment
    if not any(isinstance(plugin, base) for plugin in plugins):
        plugins += ours["plugins"]
    merged["plugins"] = plugins
    callbacks = given.get("callbacks") or []
    callbacks = list(callbacks) if isinstance(callbacks, list | tuple) else [callbacks]
    merged["callbacks"] = [*callbacks, worker_check(spec, package)]
    return merged


def run_script(target: str, args: Sequence[str], *, module: bool = False) -> None:
    """Run a script (or ``module`` with ``-m`` semantics) as ``__main__`` under
    :func:`follow_allocation`, as ``python`` would: ``sys.argv`` is ``[target, *args]`` and
    the script's directory (for ``-m``: the working directory) comes first on ``sys.path``,
    so modules beside the script import. Where OmegaConf is installed, ``${clusterenv:...}``
    resolves in the script's configs (:mod:`clusterenv.config`)."""
    if importlib.util.find_spec("omegaconf") is not None:
        register_resolver()
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [target, *args]
    sys.path.insert(0, os.getcwd() if module else os.path.dirname(os.path.abspath(target)))
    try:
        with follow_allocation(command=sys.argv):
            if module:
                runpy.run_module(target, run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(target, run_name="__main__")
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
