"""The Lightning ``ClusterEnvironment`` plugin answered from a :class:`ResourceSpec`.

``lightning`` and ``pytorch_lightning`` have separate class trees: a plugin must subclass
the ``ClusterEnvironment`` of the package whose Trainer receives it (see
:func:`resolve_package`). Nothing here imports either before a function asks for it.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import signal
import sys
from typing import Any, Literal

from clusterenv._core.spec import ResourceSpec, Role, Source
from clusterenv._engine.detect import explain_environment
from clusterenv.exceptions import ClusterEnvError, MissingDependencyError
from clusterenv.lightning._checks import check_launch

__all__ = [
    "ENVIRONMENTS",
    "TRAINERS",
    "Package",
    "cluster_environment",
    "import_module",
    "resolve_package",
]

Package = Literal["lightning", "pytorch_lightning"]
#: Where each package keeps its cluster environments (``pytorch_lightning`` re-exports
#: those of ``lightning_fabric``).
#: Where each package's Trainer and Callback live.
TRAINERS: dict[Package, str] = {
    "lightning": "lightning.pytorch",
    "pytorch_lightning": "pytorch_lightning",
}
ENVIRONMENTS: dict[str, str] = {
    "lightning": "lightning.fabric.plugins.environments",
    "pytorch_lightning": "lightning_fabric.plugins.environments",
}
#: The Lightning environment that clusterenv's extends, where it is not the plain
#: ``ClusterEnvironment``: ``SLURMEnvironment`` brings Lightning's auto-requeue handler.
_BASES: dict[Source, str] = {Source.SLURM: "SLURMEnvironment"}


def resolve_package(package: Package | None = None) -> Package:
    """The Lightning package whose Trainer will receive the plugin.

    ``None`` means: the one the script has imported; if it imported neither, the first
    installed of ``lightning`` and ``pytorch_lightning``. Both imported is ambiguous.
    """
    if package is not None:
        if package not in ENVIRONMENTS:
            raise ClusterEnvError(
                f"package={package!r} is not a Lightning package",
                hint="pass 'lightning' (lightning.pytorch, lightning.fabric) or "
                "'pytorch_lightning'",
            )
        return package
    imported = [name for name in ENVIRONMENTS if name in sys.modules]
    if len(imported) == 2:
        raise ClusterEnvError(
            "both lightning and pytorch_lightning are imported, and their Trainers accept "
            "different ClusterEnvironment classes",
            hint="pass package='lightning' or package='pytorch_lightning', whichever "
            "package's Trainer you construct",
        )
    if imported:
        return imported[0]  # type: ignore[return-value]
    for name in ("lightning", "pytorch_lightning"):
        if importlib.util.find_spec(name) is not None:
            return name
    raise MissingDependencyError(
        "neither lightning nor pytorch_lightning is installed",
        hint="pip install 'clusterenv-hpc[lightning]' (or 'clusterenv-hpc[pytorch-lightning]'; "
        "from a checkout: pip install '.[lightning]')",
    )


class _SpecAddress:
    """The main address and port of a :class:`ResourceSpec`, as Lightning asks for them."""

    spec: ResourceSpec

    @property
    def main_address(self) -> str:
        return self.spec.master_addr

    @property
    def main_port(self) -> int:
        return self.spec.master_port


class _SpecEnvironment(_SpecAddress):
    """Lightning's ``ClusterEnvironment`` interface, answered from a :class:`ResourceSpec`.

    Combined with Lightning's base class by :func:`_environment_class`. ``__init__`` does not
    call ``SLURMEnvironment.__init__`` on purpose: that one rejects valid ``--ntasks`` jobs
    and warns about srun from the environment, where the spec has already decided.
    """

    def __init__(
        self,
        spec: ResourceSpec,
        *,
        auto_requeue: bool = True,
        requeue_signal: signal.Signals | None = signal.SIGUSR1,
    ) -> None:
        self.spec = spec
        # Read by Lightning's signal connector for SLURMEnvironment instances only.
        self.auto_requeue = auto_requeue
        self.requeue_signal = requeue_signal

    @property
    def creates_processes_externally(self) -> bool:
        return True  # srun or torchrun started every rank

    @staticmethod
    def detect() -> bool:
        """Whether this process is one rank of a started launch."""
        try:
            return explain_environment().spec.role is Role.RANK
        except ClusterEnvError:
            return False

    def world_size(self) -> int:
        return self.spec.world_size

    def set_world_size(self, size: int) -> None:
        """Ignored: the launcher fixed it (``validate_settings`` checked the Trainer agrees)."""

    def global_rank(self) -> int:
        return self.spec.global_rank

    def set_global_rank(self, rank: int) -> None:
        """Ignored, like :meth:`set_world_size`."""

    def local_rank(self) -> int:
        return self.spec.local_rank

    def node_rank(self) -> int:
        return self.spec.node_rank

    def validate_settings(self, num_devices: int, num_nodes: int) -> None:
        """Called by Lightning when it launches: its ``devices``/``num_nodes`` must match."""
        check_launch(self.spec, {}, num_nodes, num_devices, "the Trainer's ")

    def teardown(self) -> None:
        pass

    def __repr__(self) -> str:
        spec = self.spec
        return (
            f"{type(self).__name__}(source={spec.source.value}, rank={spec.global_rank}/"
            f"{spec.world_size}, main={spec.master_addr}:{spec.master_port})"
        )


class _NodeEnvironment(_SpecAddress):
    """Lightning's own ``LightningEnvironment`` (Lightning starts this node's ranks and
    numbers them) at the platform's main address, port and node rank: the ``node`` role,
    one process a platform started on each node. Lightning hands these to the ranks it
    starts (``MASTER_ADDR``, ``NODE_RANK``, ``LOCAL_RANK``)."""

    def __init__(self, spec: ResourceSpec) -> None:
        super().__init__()
        self.spec = spec

    def node_rank(self) -> int:
        return self.spec.node_rank


@functools.cache
def _environment_class(package: Package, base: str, mixin: type[Any] = _SpecEnvironment) -> Any:
    prefix = "ClusterEnvNode" if mixin is _NodeEnvironment else "ClusterEnv"
    name = prefix + base.removeprefix("Cluster")
    environments = import_module(ENVIRONMENTS[package])
    return type(name, (mixin, getattr(environments, base)), {"__module__": __name__})


def import_module(module: str) -> Any:
    """``module`` of a Lightning package; ``MissingDependencyError`` naming the extra."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise MissingDependencyError(
            f"cannot import {module} ({error})",
            hint="pip install 'clusterenv-hpc[lightning]' for lightning, or "
            "'clusterenv-hpc[pytorch-lightning]' for pytorch_lightning (from a checkout: "
            "pip install '.[lightning]')",
        ) from None


def cluster_environment(
    spec: ResourceSpec | None = None,
    *,
    package: Package | None = None,
    auto_requeue: bool = True,
    requeue_signal: signal.Signals | None = signal.SIGUSR1,
) -> Any:
    """The Lightning ``ClusterEnvironment`` for ``spec`` (default: detected now).

    A rank of a started launch gets clusterenv's environment (a ``SLURMEnvironment``
    subclass under Slurm, keeping ``auto_requeue``). The one process a platform starts on
    each node (role ``node``) gets Lightning's ``LightningEnvironment`` at the platform's
    main address and node rank; any other process (local run, sbatch script body) gets
    Lightning's own: Lightning then starts the local ranks itself.
    """
    spec = spec or explain_environment().spec
    package = resolve_package(package)
    if spec.role is Role.NODE:
        return _environment_class(package, "LightningEnvironment", _NodeEnvironment)(spec)
    if spec.role is not Role.RANK:
        return import_module(ENVIRONMENTS[package]).LightningEnvironment()
    cls = _environment_class(package, _BASES.get(spec.source, "ClusterEnvironment"))
    return cls(spec, auto_requeue=auto_requeue, requeue_signal=requeue_signal)
