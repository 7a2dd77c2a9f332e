"""The sources: one module per scheduler or launcher, each owning all that clusterenv knows
about it (variables, roles, launcher, hints, diagnostics). Internal: not part of the public
API; docs/adding-a-source.md walks through adding one.

The registry is :class:`~clusterenv.Source`: each member names its module here
(``Source.SLURM`` -> ``slurm.py``, whose ``DETECTOR`` is the instance). The detection order
is derived from each detector's :class:`Kind` (:func:`ordered`), never typed.

Sources may import :mod:`clusterenv._core` and :mod:`clusterenv._node` only: the engine
above asks them, never the other way round."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from importlib import import_module

from clusterenv._core.finding import Finding
from clusterenv._core.spec import ResourceSpec, Source
from clusterenv.sources._detector import Detector, Fields, Hints, Kind, Roles
from clusterenv.sources._script import Directives

__all__ = [
    "DETECTORS",
    "Detector",
    "Directives",
    "Fields",
    "Hints",
    "Kind",
    "Roles",
    "command_counts",
    "command_findings",
    "detector_for",
    "findings",
    "node_names",
    "ordered",
    "present",
    "read_by_a_source",
    "script_scheduler",
]

_DECLARED = {source: index for index, source in enumerate(Source)}


def ordered(detectors: Iterable[Detector]) -> tuple[Detector, ...]:
    """``detectors`` highest priority first: by :class:`Kind` (launchers, schedulers,
    platforms, generic contracts, the plain machine), then by :class:`~clusterenv.Source`'s
    declaration order within a kind."""
    return tuple(sorted(detectors, key=lambda d: (d.kind, _DECLARED[d.source])))


#: Every source, highest priority first.
DETECTORS: tuple[Detector, ...] = ordered(
    import_module(f"{__name__}.{source.value}").DETECTOR for source in Source
)


_BY_SOURCE = {detector.source: detector for detector in DETECTORS}
_PREFIXES = tuple(v for d in DETECTORS for v in d.variables if v.endswith("_"))
_NAMES = frozenset(v for d in DETECTORS for v in d.variables if not v.endswith("_"))
_SHARING = tuple(d for d in DETECTORS if d.shared_variables)


def read_by_a_source(name: str, env: Mapping[str, str]) -> bool:
    """Whether variable ``name`` of ``env`` is one that some source reads (and `capture`
    records): a source's own names always, its generic ``shared_variables`` where it is
    present in ``env``."""
    if name.startswith(_PREFIXES) or name in _NAMES:
        return True
    return any(name in detector.shared_variables and detector.present(env) for detector in _SHARING)


def detector_for(source: Source) -> Detector:
    """The detector of ``source``."""
    return _BY_SOURCE[source]


def present(env: Mapping[str, str]) -> list[Detector]:
    """The sources whose variables ``env`` has, highest priority first (local, always
    present, last). In a task that a scheduler started itself, the variables its task
    launcher's MPI plugins set (PMI, PALS) are the scheduler's, not another launcher's; a
    rank that a launcher started inside a platform's node process, or in a batch job's
    script, is the launcher's (in a job script even an incomplete set of its variables is:
    the launcher's source then names what is missing)."""
    return _arbitrated(_having(env), env)


def _having(env: Mapping[str, str]) -> list[Detector]:
    return [detector for detector in DETECTORS if detector.present(env)]


def _arbitrated(found: list[Detector], env: Mapping[str, str]) -> list[Detector]:
    if any(detector.runs_task(env) for detector in found):
        found = [detector for detector in found if not detector.borrowable(env)]
    if any(detector.starts_ranks(env) for detector in found):
        found = [detector for detector in found if not detector.hosts_launchers(env)]
    elif any(detector.claims_ranks(env) for detector in found):
        found = [detector for detector in found if not detector.in_job_script(env)]
    return found


def findings(spec: ResourceSpec, env: Mapping[str, str]) -> list[Finding]:
    """What the sources know breaks ``spec``'s job: the detected source's findings, then
    those of every other source whose variables ``env`` has (a scheduler around a launcher,
    a batch step a launcher runs in)."""
    found = _having(env)
    around = _arbitrated(found, env)
    detector = detector_for(spec.source)
    hooks = [detector, *(d for d in found if d is not detector)]
    return [finding for hook in hooks for finding in hook.diagnose(spec, env, around)]


def script_scheduler(physical: Sequence[str]) -> Detector:
    """The scheduler whose directives the job script ``physical`` (its lines) holds most
    often; Slurm's where none is there (sbatch reads a script with no directive too)."""
    readers = [d for d in DETECTORS if d.directive]
    counts = {d: sum(line.startswith(d.directive) for line in physical) for d in readers}
    return max(readers, key=lambda d: (counts[d], d.source is Source.SLURM))


def node_names(env: Mapping[str, str]) -> list[str]:
    """The names the schedulers of ``env`` give the node this process runs on."""
    named = (env.get(name, "").strip() for d in _having(env) for name in d.node_name_variables)
    return [name for name in named if name]


def command_counts(command: Sequence[str]) -> tuple[str, str] | None:
    """The node count and workers per node the launcher of ``command`` asks for, as
    written; ``None`` where no source reads that command line."""
    return next(filter(None, (d.command_counts(command) for d in DETECTORS)), None)


def command_findings(
    spec: ResourceSpec, command: Sequence[str], env: Mapping[str, str] | None = None
) -> list[Finding]:
    """What the sources know breaks ``command``, a launcher about to start in ``spec``'s
    process (`clusterenv run` wrapping torchrun): the launcher's own findings, then what the
    schedulers of ``env`` (that process's variables) know of the host it makes the ranks
    meet at."""
    found = [finding for d in DETECTORS for finding in d.command_findings(spec, command)]
    meets = next(filter(None, (d.command_main_address(command) for d in DETECTORS)), None)
    if meets is None:
        return found
    given, named = meets
    env = {} if env is None else env
    around = _having(env)
    return found + [f for d in around for f in d.main_address_findings(spec, env, named, given)]
