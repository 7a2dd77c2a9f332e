"""The interface of a source: everything clusterenv knows about one scheduler or launcher."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import ClassVar

from clusterenv._core.finding import Finding
from clusterenv._core.launch import Hints, LaunchFacts
from clusterenv._core.reader import EnvReader
from clusterenv._core.spec import Fields, ResourceSpec, Source
from clusterenv._node.gpu import Gpus
from clusterenv.sources._script import Directives, Options

__all__ = ["Detector", "Fields", "Gpus", "Hints", "Kind", "Roles"]


class Kind(IntEnum):
    """What a source is; the detection order follows it, never a typed list. A launcher
    (torchrun, mpirun) started this process inside whatever scheduler holds the job, so it
    comes first; then the HPC schedulers; then the platforms, which start one process per
    node inside which a launcher may run; then the generic rank contracts (``RANK``,
    ``WORLD_SIZE``), which any of them may set; the plain machine always matches, last.
    Within a kind, :class:`~clusterenv.Source`'s declaration order decides."""

    LAUNCHER = 0
    SCHEDULER = 1
    PLATFORM = 2
    CONTRACT = 3
    MACHINE = 4


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


class Detector(ABC):
    """One scheduler or launcher. Its :attr:`kind` places it in the detection order."""

    source: ClassVar[Source]
    #: Launcher, scheduler, platform, generic contract or the plain machine: its place in
    #: the detection order (:class:`Kind`).
    kind: ClassVar[Kind]
    #: The scheduler's or launcher's own name, for messages ("Slurm").
    name: ClassVar[str]
    #: Why this source was chosen, in words, for `clusterenv inspect`.
    reason: ClassVar[str]
    #: How clusterenv knows it reads this source right, for the proof table of
    #: docs/detection.md: ``live: <the real launches>`` or ``documented: <the cited docs>``.
    proof: ClassVar[str]
    #: The variables it reads, which `clusterenv capture` records; a name ending in ``_``
    #: stands for every variable with that prefix.
    variables: ClassVar[tuple[str, ...]]
    #: Generic names (``JOB_ID``) that other programs set too: read, captured and cleared by
    #: the pytest plugin only where this source is present, never on their own.
    shared_variables: ClassVar[tuple[str, ...]] = ()
    #: Variables in which the scheduler names the node this process runs on, where that
    #: name may differ from the host's own (Slurm's ``NodeName`` against its ``NodeHostname``):
    #: with the host's name they tell whether this machine is a node of the job at all.
    node_name_variables: ClassVar[tuple[str, ...]] = ()
    #: The ids of the findings this source writes (``slurm.job-name``): what
    #: ``CLUSTERENV_IGNORE`` may name.
    finding_ids: ClassVar[tuple[str, ...]] = ()
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
    #: Whether the launcher exports ``MASTER_ADDR`` and ``MASTER_PORT`` to every rank
    #: itself (torchrun, the ``env://`` contract): without them the launch is broken and
    #: nothing is derived (the error's hint is ``hints.main``).
    exports_main: ClassVar[bool] = False
    #: Whether the launcher itself listens on ``MASTER_PORT`` (torchrun's agent store).
    holds_main_port: ClassVar[bool] = False
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

    def claims_ranks(self, env: Mapping[str, str]) -> bool:
        """Whether ``env`` carries this launcher's rank variables at all, complete or not
        (``RANK`` and ``WORLD_SIZE`` without ``LOCAL_WORLD_SIZE``). In a job script only a
        launcher starts ranks, so this launcher then reads them, and refuses an incomplete
        set by name, rather than every rank reading as the job script; a :attr:`per_node`
        platform yields only to a complete set (:meth:`starts_ranks`)."""
        return self.starts_ranks(env)

    @property
    def schedules_jobs(self) -> bool:
        """Whether this source is a batch scheduler, which its ``batch`` or ``shell`` role
        says: a process of its job that it did not start as a task (:meth:`runs_task`) is
        its job script or allocation shell, from which a launcher may start the ranks
        (``deepspeed`` in an sbatch script)."""
        return self.roles.batch is not None or self.roles.shell is not None

    def hosts_launchers(self, env: Mapping[str, str]) -> bool:
        """Whether ``env``'s process is one a launcher may start ranks from: a
        :attr:`per_node` platform's node process, or a batch scheduler's job script (one it
        did not start as a task). A rank a launcher :meth:`started <starts_ranks>` is then
        the launcher's."""
        return self.per_node or self.in_job_script(env)

    def in_job_script(self, env: Mapping[str, str]) -> bool:
        """Whether ``env``'s process is this batch scheduler's job script or allocation
        shell: a process of its job that it did not start as a task."""
        return self.schedules_jobs and not self.runs_task(env)

    def main_address(self, reader: EnvReader, fields: Fields) -> str | None:
        """Rank 0's host as this scheduler names it (``None``: it does not), asked only
        where ``MASTER_ADDR`` is not set; by default the ``master_addr`` :meth:`read` gave.
        A source whose answer costs a file read or may fail says it here."""
        return fields.get("master_addr")

    @abstractmethod
    def read(self, reader: EnvReader, gpus: Gpus) -> Fields:
        """What this scheduler says of the process: its ``role``, ranks and nodes
        (``num_nodes``, ``devices_per_node``, ``world_size``, ``global_rank``,
        ``local_rank``, ``node_rank``), and where it knows them ``job_id``, ``hostnames``,
        its own ``master_addr`` and ``master_port`` (``MASTER_ADDR``/``MASTER_PORT`` are the
        engine's: never read them), a ``port_seed``, its GPU grant (``gpus_per_node`` with
        ``accelerator``, ``visible_devices``, ``gpu_vendor``; else the visible GPUs, which
        ``gpus()`` gives where the geometry needs them) and ``cpus_per_rank``.

        Raises ``ClusterEnvError`` for bad or missing values.
        """

    def diagnose(
        self, spec: ResourceSpec, env: Mapping[str, str], present: Sequence[Detector]
    ) -> list[Finding]:
        """Warnings, each with a fix, about ``spec`` detected from ``env``.

        Called for the detected source and for every other source ``present`` in ``env``
        (a scheduler around a launcher), so a scheduler can warn about what runs inside it.
        """
        return []

    def command_findings(self, spec: ResourceSpec, command: Sequence[str]) -> list[Finding]:
        """Findings about ``command``, this launcher's own command line, about to run in the
        process ``spec`` describes (``clusterenv run -m torch.distributed.run ...``)."""
        return []

    def command_main_address(self, command: Sequence[str]) -> tuple[str, str] | None:
        """The option of ``command``, this launcher's command line, that names the host its
        ranks meet at, and that host (``("--rdzv-endpoint", "n1")``); ``None`` where the
        command names none."""
        return None

    def command_counts(self, command: Sequence[str]) -> tuple[str, str] | None:
        """The node count and the workers per node that ``command``, this launcher's
        command line, asks for, as written (``("2", "gpu")``, ``("1:4", "8")``); ``None``
        where it is not this launcher's, or its parser refuses it."""
        return None

    def main_address_findings(
        self, spec: ResourceSpec, env: Mapping[str, str], named: str, given: str
    ) -> list[Finding]:
        """What this scheduler knows of ``named``, the host that ``given`` (an option of a
        launcher's command line) makes the ranks of ``spec``'s job meet at."""
        return []

    # A job script, read before submission (`clusterenv check`): only a scheduler with
    # directives (``directive``) answers.

    #: The prefix of this scheduler's job-script directives (``#SBATCH``); "" for none.
    directive: ClassVar[str] = ""

    def directives(
        self, physical: Sequence[str], env: Mapping[str, str], argv: Sequence[str]
    ) -> Directives:
        """The options the job script ``physical`` (its lines), the input variables of the
        submit environment ``env`` and the submit command's options ``argv`` ask for."""
        return Directives()

    def options(self, words: Sequence[str], line: int, command: str) -> Options:
        """``words`` read as the options of this scheduler's ``command`` (``sbatch``,
        ``srun``) up to the first that is none, which begins ``rest``."""
        return Options(rest=list(words))

    def allocation(
        self, read: Directives, found: list[tuple[int, Finding]]
    ) -> dict[str, int | str | dict[str, int] | None]:
        """What ``read`` asks for: nodes, tasks_per_node, ntasks, gpus_per_node,
        gpus_per_task, cpus_per_task, job_name, array, and ``lines`` (each one's line)."""
        return {}

    def test_submit(self, path: str, argv: Sequence[str]) -> tuple[str, list[Finding]] | None:
        """What this scheduler, where one answers here, says of submitting the job script
        at ``path`` with ``argv`` without submitting it (``sbatch --test-only``), verbatim,
        and the findings that verdict is; ``None`` where none answers."""
        return None

    def command_output(self, words: Sequence[str], env: Mapping[str, str]) -> str | None:
        """What this scheduler's command ``words`` prints in a job of ``env``
        (``scontrol show hostnames``); ``None`` for commands it does not know."""
        return None

    def facts(self, spec: ResourceSpec) -> LaunchFacts:
        """What an adapter needs to know of ``spec``'s launch beyond the spec."""
        return LaunchFacts(
            launcher=self.launcher,
            holds_main_port=self.holds_main_port,
            launch_keys=self.launch_keys,
            hints=self.hints,
            description=self.describe(spec),
        )

    def describe(self, spec: ResourceSpec) -> str:
        """What this process is, in words: ``the srun step of job 42``."""
        job = f" {spec.job_id}" if spec.job_id else ""
        name: str | None = getattr(self.roles, spec.role.value)
        return (name or f"the {self.launcher or self.source.value} launch").format(job=job)
