"""The interface of a source: everything clusterenv knows about one scheduler or launcher."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from clusterenv._finding import Finding
from clusterenv._reader import EnvReader, GpuProbe
from clusterenv._spec import Fields, ResourceSpec, Source

__all__ = ["Detector", "Fields", "Hints", "Roles"]


@dataclass(frozen=True)
class Roles:
    """What a process of each role is called, ``{job}`` standing for `` <job id>``.

    ``None``: the generic "the <launcher> launch".
    """

    rank: str | None = None
    batch: str | None = None
    shell: str | None = None
    standalone: str | None = None
    node: str | None = None


@dataclass(frozen=True)
class Hints:
    """What to change when a framework's settings contradict a launch of this source.

    Each completes "drop the setting to use the launch's, or ...".
    """

    num_nodes: str = "start the ranks on as many nodes as you ask for"
    devices: str = "start as many ranks on each node as you ask devices for"
    uneven: str = "start the same number of ranks on every node"
    gpus: str = "let every rank see all GPUs of its node"
    #: How to start MPI ranks so that this scheduler names their nodes ("" where mpirun is
    #: the scheduler's own way).
    mpi: str = ""


class Detector(ABC):
    """One scheduler or launcher. The registry (:class:`~clusterenv.Source`) orders them."""

    source: ClassVar[Source]
    #: The scheduler's or launcher's own name, for messages ("Slurm").
    name: ClassVar[str]
    #: Why this source was chosen, in words, for `clusterenv inspect`.
    reason: ClassVar[str]
    #: The variables it reads, which `clusterenv capture` records; a name ending in ``_``
    #: stands for every variable with that prefix.
    variables: ClassVar[tuple[str, ...]]
    #: Generic names (``JOB_ID``) that other programs set too: read, captured and cleared by
    #: the pytest plugin only where this source is present, never on their own.
    shared_variables: ClassVar[tuple[str, ...]] = ()
    #: The command that starts this source's ranks (``srun``); ``""`` where there is none.
    launcher: ClassVar[str] = ""
    roles: ClassVar[Roles] = Roles()
    hints: ClassVar[Hints] = Hints()
    #: Variables whose values every rank of one launch shares but other users do not see:
    #: they go into the probe's launch key (:mod:`clusterenv._probe._protocol`).
    launch_keys: ClassVar[tuple[str, ...]] = ()
    #: Whether this source describes the one process a platform starts on each node (a
    #: SageMaker host, a Kubernetes pod), inside which a launcher may start the ranks: a
    #: rank that launcher :meth:`started <starts_ranks>` is then not this source's.
    per_node: ClassVar[bool] = False
    #: Whether this source is a batch scheduler: a process of its job that it did not start
    #: as a task (:meth:`runs_task`) is its job script or allocation shell, from which a
    #: launcher may start the ranks (``deepspeed`` in an sbatch script): a rank that
    #: launcher :meth:`started <starts_ranks>` is then not this source's either.
    schedules_jobs: ClassVar[bool] = False
    #: Whether the launcher itself listens on ``MASTER_PORT`` (torchrun's agent store).
    holds_main_port: ClassVar[bool] = False
    #: Lightning's ``ClusterEnvironment`` subclass that the adapter's plugin extends:
    #: ``SLURMEnvironment`` gets Lightning's auto-requeue signal handler.
    lightning_base: ClassVar[str] = "ClusterEnvironment"
    #: A command whose first line of output names the scheduler's or launcher's version
    #: (for `clusterenv inspect`); empty where the packages' versions say it (torchrun).
    version_command: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def present(self, env: Mapping[str, str]) -> bool:
        """Whether ``env`` comes from this source (cheap; no parsing, no errors)."""

    def runs_task(self, env: Mapping[str, str]) -> bool:
        """Whether ``env`` is a task this scheduler started itself (a task of an srun step,
        of ``flux run``, of ``jsrun``). Its task launcher's MPI plugins then set the
        variables of other sources too (``srun --mpi=pmi2`` ``PMI_RANK``, ``--mpi=cray_shasta``
        ``PALS_RANKID``): those belong to this task, see :meth:`borrowable`."""
        return False

    def borrowable(self, env: Mapping[str, str]) -> bool:
        """Whether this source's variables in ``env`` may have been set by a scheduler's own
        task launcher rather than by this launcher (PMI, PMIx, PALS): inside a task that a
        scheduler :meth:`runs <runs_task>`, the scheduler then wins."""
        return False

    def starts_ranks(self, env: Mapping[str, str]) -> bool:
        """Whether ``env`` is a rank that this launcher started, one process per rank, with
        all it needs to say so (the DeepSpeed launcher's complete ``env://`` set). Inside a
        :attr:`per_node` platform's node process or a batch scheduler's job script
        (:attr:`schedules_jobs`) the launcher then wins, though those come first otherwise
        (their process may carry a stray ``RANK``)."""
        return False

    def hosts_launchers(self, env: Mapping[str, str]) -> bool:
        """Whether ``env``'s process is one a launcher may start ranks from: a
        :attr:`per_node` platform's node process, or a batch scheduler's job script (one it
        did not start as a task). A rank a launcher :meth:`started <starts_ranks>` is then
        the launcher's."""
        return self.per_node or (self.schedules_jobs and not self.runs_task(env))

    @abstractmethod
    def read(self, reader: EnvReader, gpu_probe: GpuProbe) -> Fields:
        """The ``ResourceSpec`` fields; raises ``ClusterEnvError`` for bad or missing values."""

    def diagnose(
        self, spec: ResourceSpec, env: Mapping[str, str], present: Sequence[Detector]
    ) -> list[Finding]:
        """Warnings, each with a fix, about ``spec`` detected from ``env``.

        Called for the detected source and for every other source ``present`` in ``env``
        (a scheduler around a launcher), so a scheduler can warn about what runs inside it.
        """
        return []

    def describe(self, spec: ResourceSpec) -> str:
        """What this process is, in words: ``the srun step of job 42``."""
        job = f" {spec.job_id}" if spec.job_id else ""
        name: str | None = getattr(self.roles, spec.role.value)
        return (name or f"the {self.launcher or self.source.value} launch").format(job=job)
