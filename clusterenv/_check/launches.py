"""What the launch lines of a job script share: the batch shell they run in, what a
command line starts (a launcher, python, srun), and how one predicted process is judged:
detected from its modelled environment and diagnosed as the pre-flight check would."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from clusterenv._check.report import Allocation, NotModelled, Predicted
from clusterenv._core.finding import Finding
from clusterenv._core.safe import shorten
from clusterenv._core.spec import ResourceSpec
from clusterenv._diagnosis.diagnose import diagnose
from clusterenv._engine.detect import detect_environment
from clusterenv.exceptions import ClusterEnvError
from clusterenv.sources import Detector, command_counts, command_findings

__all__ = ["Prediction", "Shell", "counts", "judge", "launcher_of", "refused", "unwrapped"]

_TORCHRUN = ("torch.distributed.run", "torch.distributed.launch")


@dataclass
class Prediction:
    """The allocation, launches, findings (line, finding) and what was not modelled."""

    allocation: Allocation
    launches: list[Predicted] = field(default_factory=list)
    findings: list[tuple[int, Finding]] = field(default_factory=list)
    not_modelled: list[NotModelled] = field(default_factory=list)


@dataclass
class Shell:
    """The batch shell: its variables (exported or not), the allocation's task layout and
    the scheduler whose commands it runs."""

    alloc: Allocation
    tasks_per_node: int | None
    variables: dict[str, tuple[str, bool]]
    scheduler: Detector
    depth: int = 0

    def value(self, name: str) -> str | None:
        return self.variables.get(name, (None, False))[0]

    def exported(self) -> dict[str, str]:
        return {name: value for name, (value, out) in self.variables.items() if out}


def launcher_of(texts: list[str]) -> str | None:
    """What ``texts`` starts: ``srun``, ``torchrun`` (torchrun, ``python -m
    torch.distributed.run``, accelerate launch, deepspeed), ``python``, ``mpirun``; ``None``
    for any other command. ``clusterenv run`` is seen through."""
    texts = unwrapped(texts)
    if not texts:
        return None
    name = os.path.basename(texts[0])
    if name == "srun":
        return "srun"
    if name in ("mpirun", "mpiexec"):
        return "mpirun"
    if name in ("torchrun", "deepspeed") or texts[:2] == ["accelerate", "launch"]:
        return "torchrun"
    if name.startswith("python"):
        module = texts[texts.index("-m") + 1] if "-m" in texts[:-1] else ""
        return "torchrun" if module in _TORCHRUN else "python"
    return None


def unwrapped(texts: list[str]) -> list[str]:
    """The command ``clusterenv run`` (or ``python -m clusterenv run``) wraps, as python
    would run it (``clusterenv run -m MODULE``: ``python -m MODULE``), or ``texts``."""
    python = bool(texts) and os.path.basename(texts[0]).startswith("python")
    if texts[:2] == ["clusterenv", "run"]:
        rest = texts[2:]
    elif python and texts[1:4] == ["-m", "clusterenv", "run"]:
        rest = texts[4:]
    else:
        return texts
    while rest[:1] == ["--debug"] or rest[:1] == ["--ignore"]:
        rest = rest[2:] if rest[0] == "--ignore" else rest[1:]
    if rest[:1] == ["-m"]:
        return ["python", *rest]
    if rest and rest[0].endswith(".py"):
        return ["python", *rest]
    return rest


def judge(
    env: Mapping[str, str], command: list[str], *, diagnosed: bool = True, cpus: int | None = None
) -> tuple[ResourceSpec, list[Finding]]:
    """The spec a process of ``env`` running ``command`` gets (on ``cpus`` CPUs, where
    known), and what the pre-flight check's launch-level findings say of it: the diagnosis
    of a rank (``diagnosed``), and of its launcher's options (a torchrun agent's)."""
    spec = detect_environment(env, gpu_probe=tuple, cpu_probe=lambda: cpus)
    found = diagnose(spec, env) if diagnosed else []
    return spec, [*found, *command_findings(spec, _launcher_words(command), env)]


def _launcher_words(command: list[str]) -> list[str]:
    """``command`` as its launcher's parser takes it: ``clusterenv run`` seen through,
    ``python -m torch.distributed.run ...`` as ``torch.distributed.run ...``."""
    run = unwrapped(command)
    if run and os.path.basename(run[0]).startswith("python") and run[1:2] == ["-m"]:
        return run[2:]
    return run


def counts(command: list[str], gpus: int | None) -> tuple[str, int] | None:
    """The node count torchrun's ``--nnodes`` asks for, as written (``"1:4"``), and its
    workers per node (``--nproc-per-node``; ``gpu``/``auto``: the node's GPUs), as the
    torchrun source reads them; ``None`` where it does not read ``command``."""
    found = command_counts(_launcher_words(command))
    if found is None:
        return None
    nnodes, written = found
    if written in ("gpu", "auto"):
        return nnodes, gpus or 1
    return nnodes, int(written) if written.isdigit() and 0 < int(written) < 4096 else 1


def refused(error: ClusterEnvError) -> Finding:
    return Finding(
        id="check.refused",
        message=f"the process this line starts would be refused: {shorten(str(error), 400)}",
        fix=error.hint or "see the message",
        level="error",
    )
