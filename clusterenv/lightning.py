"""Lightning adapter: ``Trainer``/``Fabric`` keyword arguments that agree with the allocation.

A training script (neural-lam's ``train_model.py`` is the model) does::

    import clusterenv.lightning as cl

    parser = argparse.ArgumentParser()
    cl.add_trainer_args(parser)  # --num_nodes, --devices (default: auto)
    args = parser.parse_args()
    trainer = pl.Trainer(**cl.trainer_kwargs(args), max_epochs=10)
    cl.rank_zero_print("starting")  # once per job

``trainer_kwargs`` returns ``num_nodes``, ``devices``, ``accelerator``, ``strategy``,
``use_distributed_sampler`` and ``plugins=[environment]``. The environment is a Lightning
``ClusterEnvironment`` answering ranks, world size and main address from clusterenv's
spec, so Lightning's own detection (regex main host, job names ``bash``/``interactive``,
``--ntasks`` refused) never runs. For Slurm it is a subclass of Lightning's
``SLURMEnvironment``: Lightning installs its auto-requeue handler (``SIGUSR1`` → save an
HPC checkpoint, ``scontrol requeue``) only for such instances.

``lightning`` and ``pytorch_lightning`` have separate class trees: a plugin must subclass
the ``ClusterEnvironment`` of the package whose Trainer receives it (see
:func:`resolve_package`). Importing this module imports neither; the functions that build
an environment import the one chosen.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import importlib.util
import os
import runpy
import signal
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal, ParamSpec, TypeVar

from clusterenv._detect import explain_environment
from clusterenv._diagnose import JOB_SCRIPTS, launcher_for
from clusterenv._spec import Accelerator, ResourceSpec, Role, Source
from clusterenv.exceptions import ClusterEnvError, MissingDependencyError

__all__ = [
    "Package",
    "add_trainer_args",
    "cluster_environment",
    "fabric_kwargs",
    "follow_allocation",
    "is_rank_zero",
    "rank_zero_only",
    "rank_zero_print",
    "resolve_package",
    "run_script",
    "trainer_kwargs",
]

Package = Literal["lightning", "pytorch_lightning"]
#: Where each package keeps its cluster environments (``pytorch_lightning`` re-exports
#: those of ``lightning_fabric``).
_ENVIRONMENTS: dict[str, str] = {
    "lightning": "lightning.fabric.plugins.environments",
    "pytorch_lightning": "lightning_fabric.plugins.environments",
}
_TRAINERS: dict[Package, str] = {
    "lightning": "lightning.pytorch",
    "pytorch_lightning": "pytorch_lightning",
}
Devices = int | str | Sequence[int | str] | None

_P = ParamSpec("_P")
_Parser = TypeVar("_Parser", bound=argparse._ActionsContainer)
_R = TypeVar("_R")


def resolve_package(package: Package | None = None) -> Package:
    """The Lightning package whose Trainer will receive the plugin.

    ``None`` means: the one the script has imported; if it imported neither, the first
    installed of ``lightning`` and ``pytorch_lightning``. Both imported is ambiguous.
    """
    if package is not None:
        if package not in _ENVIRONMENTS:
            raise ClusterEnvError(
                f"package={package!r} is not a Lightning package",
                hint="pass 'lightning' (lightning.pytorch, lightning.fabric) or "
                "'pytorch_lightning'",
            )
        return package
    imported = [name for name in _ENVIRONMENTS if name in sys.modules]
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
        hint="pip install 'clusterenv[lightning]' (or 'clusterenv[pytorch-lightning]')",
    )


class _SpecEnvironment:
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

    @property
    def main_address(self) -> str:
        return self.spec.master_addr

    @property
    def main_port(self) -> int:
        return self.spec.master_port

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
        _check_launch(self.spec, {}, num_nodes, num_devices, "the Trainer's ")

    def teardown(self) -> None:
        pass

    def __repr__(self) -> str:
        spec = self.spec
        return (
            f"{type(self).__name__}(source={spec.source.value}, rank={spec.global_rank}/"
            f"{spec.world_size}, main={spec.master_addr}:{spec.master_port})"
        )


@functools.cache
def _environment_class(package: Package, slurm: bool) -> type[_SpecEnvironment]:
    base = "SLURMEnvironment" if slurm else "ClusterEnvironment"
    name = "ClusterEnvSLURMEnvironment" if slurm else "ClusterEnvEnvironment"
    environments = _import(_ENVIRONMENTS[package])
    cls: type[_SpecEnvironment] = type(
        name, (_SpecEnvironment, getattr(environments, base)), {"__module__": __name__}
    )
    return cls


def _import(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise MissingDependencyError(
            f"cannot import {module} ({error})",
            hint="pip install 'clusterenv[lightning]' for lightning, or "
            "'clusterenv[pytorch-lightning]' for pytorch_lightning",
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
    subclass under Slurm, keeping ``auto_requeue``). A process that is not a rank (local
    run, sbatch script body) gets Lightning's ``LightningEnvironment``: Lightning then
    starts the local ranks itself.
    """
    spec = spec or explain_environment().spec
    package = resolve_package(package)
    if spec.role is not Role.RANK:
        return _import(_ENVIRONMENTS[package]).LightningEnvironment()
    cls = _environment_class(package, spec.source is Source.SLURM)
    return cls(spec, auto_requeue=auto_requeue, requeue_signal=requeue_signal)


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
    saying how to fix the sbatch/srun/torchrun line. ``use_distributed_sampler`` is off
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
    devices = _parse_devices(overrides.pop("devices", args.get("devices")))
    num_nodes, devices = _geometry(spec, origins, num_nodes, devices)
    count = devices if isinstance(devices, int) else len(devices)
    return {
        "num_nodes": num_nodes,
        "devices": devices,
        "accelerator": "cuda" if spec.accelerator is Accelerator.GPU else "cpu",
        "strategy": "ddp" if num_nodes * count > 1 else "auto",
        "plugins": [cluster_environment(spec, package=package)],
        **overrides,
    }


def _parse_devices(value: Devices) -> int | list[int] | None:
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
    if spec.role is Role.RANK:
        nodes = spec.num_nodes if num_nodes is None else num_nodes
        chosen = spec.devices_per_node if devices is None else devices
        _check_launch(spec, origins, nodes, _count(chosen), "")
        _check_gpu_visible(spec, chosen)
        return nodes, chosen
    where = _where(spec)
    if spec.role is Role.SHELL:
        raise ClusterEnvError(
            f"this is {where}, which runs on the submit host, not on a node of the allocation",
            hint="start the script with srun inside the allocation: srun python train.py ...",
        )
    launcher = launcher_for(spec)
    if num_nodes is None and spec.num_nodes > 1:
        raise ClusterEnvError(
            f"this is {where}, over {spec.num_nodes} nodes; training here would use this node only",
            hint=f"start the ranks with {launcher}: {launcher} python train.py ... "
            "(or pass --num_nodes 1 to train on this node alone)",
        )
    if num_nodes not in (None, 1):
        raise ClusterEnvError(
            f"num_nodes={num_nodes} but this is {where}: one process on one node",
            hint=f"start the ranks with {launcher} (or torchrun --nnodes on every node)",
        )
    gpus = len(spec.visible_devices) if spec.accelerator is Accelerator.GPU else 0
    if devices is None:
        return 1, gpus or (1 if spec.role is Role.STANDALONE else spec.devices_per_node)
    if gpus and _count(devices) > gpus:
        raise ClusterEnvError(
            f"devices={devices} but this process sees {gpus} GPU(s) "
            f"({', '.join(spec.visible_devices)})",
            hint="pass --devices auto, or fewer devices",
        )
    if isinstance(devices, list) and (not gpus or max(devices) >= gpus):
        raise ClusterEnvError(
            f"devices={devices} names GPU indices but this process sees {gpus} GPU(s)",
            hint="pass a count (--devices 2) on CPU, or indices below the number of GPUs",
        )
    return 1, devices


def _count(devices: int | list[int]) -> int:
    return devices if isinstance(devices, int) else len(devices)


def _where(spec: ResourceSpec) -> str:
    job = f" {spec.job_id}" if spec.job_id else ""
    if spec.role is Role.RANK:
        slurm = spec.source is Source.SLURM
        return f"the srun step of job{job}" if slurm else f"the {spec.source.value} launch"
    if spec.role is Role.BATCH:
        return f"{JOB_SCRIPTS[spec.source][0]} (job{job})"
    if spec.role is Role.SHELL:
        return f"the salloc shell of job{job}"
    return "a local run without a launcher"


def _check_launch(
    spec: ResourceSpec, origins: Mapping[str, str], num_nodes: int, devices: int, whose: str
) -> None:
    """A started launch fixes the geometry; Lightning's must be the same."""
    slurm = spec.source is Source.SLURM

    def origin(field: str) -> str:
        return f" ({origins[field]})" if field in origins else ""

    if spec.world_size != spec.num_nodes * spec.devices_per_node:
        raise ClusterEnvError(
            f"{_where(spec)} runs {spec.world_size} ranks on {spec.num_nodes} nodes with "
            f"{spec.devices_per_node} on this one; Lightning needs the same number on every node",
            hint="use --ntasks-per-node instead of --ntasks"
            if slurm
            else "start the same --nproc_per_node on every node",
        )
    if num_nodes != spec.num_nodes:
        raise ClusterEnvError(
            f"{whose}num_nodes={num_nodes} contradicts {_where(spec)}, which runs on "
            f"{spec.num_nodes} node(s){origin('num_nodes')}",
            hint="drop --num_nodes to use the launch's, or change #SBATCH --nodes / srun -N"
            if slurm
            else "drop --num_nodes to use the launch's, or change torchrun --nnodes",
        )
    if devices != spec.devices_per_node:
        raise ClusterEnvError(
            f"{whose}devices={devices} per node contradicts {_where(spec)}, which started "
            f"{spec.devices_per_node} rank(s) on this node{origin('devices_per_node')}",
            hint="drop --devices to use the launch's, or start one task per device: "
            "#SBATCH --ntasks-per-node=N with --gpus-per-node=N"
            if slurm
            else "drop --devices to use the launch's, or change torchrun --nproc_per_node",
        )


def _check_gpu_visible(spec: ResourceSpec, devices: int | list[int]) -> None:
    """Lightning puts a rank on ``cuda:<devices[local_rank]>``; that GPU must be visible."""
    if spec.accelerator is not Accelerator.GPU or not spec.visible_devices:
        return
    index = spec.local_rank if isinstance(devices, int) else devices[spec.local_rank]
    if index >= len(spec.visible_devices):
        raise ClusterEnvError(
            f"local rank {spec.local_rank} would run on cuda:{index}, but this task sees "
            f"{len(spec.visible_devices)} GPU(s) (CUDA_VISIBLE_DEVICES="
            f"{','.join(spec.visible_devices)})",
            hint="let every task see all GPUs of its node (srun --gpu-bind=none, "
            "--gpus-per-node instead of --gpus-per-task)",
        )


def is_rank_zero(env: Mapping[str, str] | None = None) -> bool:
    """True in the one process per job that should print and save.

    Works before ``torch.distributed`` is initialised: a rank of a launch asks its spec;
    a process that Lightning started itself (it sets ``LOCAL_RANK`` in the ones it
    spawns) is rank zero only as the first of them.
    """
    env = os.environ if env is None else env
    spec = explain_environment(env).spec
    if spec.role is Role.RANK:
        return spec.is_main_process
    return env.get("LOCAL_RANK", "0") == "0"


def rank_zero_only(function: Callable[_P, _R]) -> Callable[_P, _R | None]:
    """Decorator: call ``function`` on rank zero only (see :func:`is_rank_zero`)."""

    @functools.wraps(function)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R | None:
        return function(*args, **kwargs) if is_rank_zero() else None

    return wrapper


@rank_zero_only
def rank_zero_print(*values: object, **kwargs: Any) -> None:
    """``print`` on rank zero only."""
    print(*values, **kwargs)


# -- zero-code adoption: `clusterenv run` ------------------------------------------------


@contextlib.contextmanager
def follow_allocation(spec: ResourceSpec | None = None) -> Iterator[ResourceSpec]:
    """Within the block, every Lightning ``Trainer`` follows the allocation.

    Patches ``__init__`` of ``lightning.pytorch.Trainer`` and ``pytorch_lightning.Trainer``
    (those installed), for scripts you do not control. Each call gets
    :func:`trainer_kwargs` merged in, changing only what the script left at Lightning's
    defaults: ``num_nodes`` (``1`` counts as the default), ``devices`` (``"auto"``),
    ``strategy`` and ``accelerator`` (``"auto"``); the cluster-environment plugin is added
    unless the script passes one. Explicit values that contradict the allocation raise
    :class:`~clusterenv.ClusterEnvError`. On CPU a one-element device list such as
    neural-lam's ``--devices 2`` (``devices=[2]``) is read as a count, since there are no
    CPU device indices.
    """
    spec = spec or explain_environment().spec
    patched: list[tuple[Any, Any]] = []
    try:
        for package, module in _TRAINERS.items():
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
    ours = trainer_kwargs(
        spec, package=package, num_nodes=None if num_nodes == 1 else num_nodes, devices=devices
    )
    merged = {**given, "num_nodes": ours["num_nodes"], "devices": ours["devices"]}
    for name in ("strategy", "accelerator"):
        if given.get(name, "auto") == "auto":
            merged[name] = ours[name]
    plugins = given.get("plugins") or []
    plugins = list(plugins) if isinstance(plugins, list | tuple) else [plugins]
    base = _import(_ENVIRONMENTS[package]).ClusterEnvironment
    if not any(isinstance(plugin, base) for plugin in plugins):
        plugins += ours["plugins"]
    merged["plugins"] = plugins
    return merged


def run_script(target: str, args: Sequence[str], *, module: bool = False) -> None:
    """Run a script (or ``module`` with ``-m`` semantics) as ``__main__`` under
    :func:`follow_allocation`, with ``sys.argv`` set to ``[target, *args]``."""
    saved = sys.argv
    sys.argv = [target, *args]
    try:
        with follow_allocation():
            if module:
                runpy.run_module(target, run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(target, run_name="__main__")
    finally:
        sys.argv = saved
