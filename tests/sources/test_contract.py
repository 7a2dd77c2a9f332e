"""Every registered source against the whole contract of a source (docs/adding-a-source.md).

Parametrised over the registry, so a new source is checked here without a line of its own
beyond its builder in ``BUILT``: present and detected from its builder's environment, every
field it reads carries its variables, `capture` records every variable it reads, its roles
are described, its hints and diagnostics exist, and its docs page is there.
"""

from __future__ import annotations

import ast
import re
from collections.abc import ItemsView, Iterator, Mapping
from pathlib import Path

import pytest

from clusterenv import ResourceSpec, Role, Source, explain_environment, sources
from clusterenv._diagnosis.capture import launcher_variables
from clusterenv._diagnosis.diagnose import diagnose
from clusterenv.exceptions import MissingVariableError
from clusterenv.sources import DETECTORS, Detector, Kind, detector_for, present
from clusterenv.testing import Launch, lsf_env, pbs_env
from tests.available import require_modules
from tests.envs import examples

ROOT = Path(__file__).parents[2]

#: Each source's builder module (``clusterenv/_models/<source>.py``) gives its examples.
BUILT: dict[Source, list[Launch]] = {source: examples(source) for source in Source}
CASES = [(source, launch) for source, launches in BUILT.items() for launch in launches]
IDS = [f"{source.value}-{i}" for source, launches in BUILT.items() for i in range(len(launches))]


class _Recording(Mapping[str, str]):
    """An environment that remembers every variable detection looked at."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env, self.read = env, set[str]()

    def __getitem__(self, name: str) -> str:
        self.read.add(name)
        return self.env[name]

    def __contains__(self, name: object) -> bool:
        self.read.add(str(name))
        return name in self.env

    def get(self, name: str, default: str | None = None) -> str | None:  # type: ignore[override]
        self.read.add(name)
        return self.env.get(name, default)

    def items(self) -> ItemsView[str, str]:
        """Not a read: detection bounds the length of every value before it reads any."""
        return self.env.items()

    def __iter__(self) -> Iterator[str]:
        return iter(self.env)

    def __len__(self) -> int:
        return len(self.env)


def test_the_registry_is_the_source_enum_ordered_by_kind() -> None:
    """Issue 48: the order is derived from each source's kind, never typed: launchers,
    schedulers, platforms, generic contracts, the plain machine."""
    assert {detector.source for detector in DETECTORS} == set(Source)
    assert all(detector_for(source).source is source for source in Source)
    assert [d.kind for d in DETECTORS] == sorted(d.kind for d in DETECTORS)
    assert DETECTORS[-1].kind is Kind.MACHINE
    assert all(BUILT.values()), "every source's builder module gives examples()"


def test_a_source_declared_out_of_place_still_lands_among_its_kind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A scheduler declared first in ``Source`` (above the launchers), or a launcher last
    (below the env:// contract), is still placed by its kind."""
    declared = {source: index for index, source in enumerate(Source)}
    monkeypatch.setitem(declared, Source.PBS, -1)
    monkeypatch.setitem(declared, Source.MPI, len(declared))
    monkeypatch.setattr(sources, "_DECLARED", declared)
    order = [d.source for d in sources.ordered(reversed(DETECTORS))]
    launchers = [d.source for d in DETECTORS if d.kind is Kind.LAUNCHER]
    assert order.index(Source.PBS) == len(launchers)  # the first scheduler
    assert order.index(Source.MPI) == len(launchers) - 1  # the last launcher
    assert order.index(Source.PBS) < order.index(Source.SAGEMAKER) < order.index(Source.ENV)


@pytest.mark.parametrize(("source", "launch"), CASES, ids=IDS)
def test_present_detected_and_every_field_traced(source: Source, launch: Launch) -> None:
    detector = detector_for(source)
    assert detector.present(launch)
    probe = ("0", "1")
    detection = explain_environment(
        launch, gpu_probe=lambda: probe, read_file=launch.read_file, ask=launch.ask
    )
    spec, origins = detection.spec, detection.origins
    assert spec.source is source
    assert detection.reason == detector.reason
    # Every value that is not a launcher's fixed shape (one rank per pod, the batch step's
    # rank 0, the loopback address, the probe's GPUs) comes from variables.
    standalone = spec.role is Role.STANDALONE  # one process: its geometry is the machine's
    traced = set() if standalone else {"world_size", "num_nodes"}
    if spec.role is Role.RANK:
        traced |= {"global_rank", "node_rank"}
    if spec.local_rank:
        traced.add("local_rank")
    # A standalone or node process runs one rank per GPU of the machine (the probe's).
    per_gpu = spec.role in (Role.STANDALONE, Role.NODE) and spec.visible_devices == probe
    if spec.devices_per_node > 1 and not per_gpu:
        traced.add("devices_per_node")
    traced |= {name for name in ("hostnames", "job_id") if getattr(spec, name)}
    if spec.visible_devices != probe:
        traced |= {name for name in ("gpus_per_node", "visible_devices") if getattr(spec, name)}
    if spec.master_addr != "127.0.0.1":
        traced.add("master_addr")
    assert {field for field in traced if not origins.get(field)} == set()


@pytest.mark.parametrize("detector", DETECTORS, ids=[d.source.value for d in DETECTORS])
def test_absent_from_an_empty_environment(detector: Detector) -> None:
    assert detector.present({}) is (detector.source is Source.LOCAL)


@pytest.mark.parametrize(("source", "launch"), CASES, ids=IDS)
def test_capture_records_every_variable_detection_reads(source: Source, launch: Launch) -> None:
    env = _Recording(launch)
    explain_environment(env, gpu_probe=tuple, read_file=launch.read_file, ask=launch.ask)
    read = {name for name in env.read if name in launch}
    assert read - set(launcher_variables(launch)) == set()
    assert set(launch) - set(launcher_variables(launch)) <= {"PYTHONUNBUFFERED"}


@pytest.mark.parametrize(("source", "launch"), CASES, ids=IDS)
def test_roles_are_described_and_diagnosed(source: Source, launch: Launch) -> None:
    detector = detector_for(source)
    spec = explain_environment(
        launch, gpu_probe=tuple, read_file=launch.read_file, ask=launch.ask
    ).spec
    described = detector.describe(spec)
    assert described.startswith(("the ", "a "))
    assert "{" not in described
    if spec.role is Role.BATCH:
        assert detector.launcher, "a job script's warning names the command that starts ranks"
    for warning in diagnose(spec, launch):  # ids: "<what>" or "<source>.<what>"
        prefix, _, what = warning.id.rpartition(".")
        assert re.fullmatch(r"[a-z0-9-]+", what), warning.id
        assert prefix in ("", *(s.value for s in Source)), warning.id
        assert warning.message
        assert warning.fix
    assert detector in present(launch)


@pytest.mark.parametrize(("source", "launch"), CASES, ids=IDS)
def test_main_address_and_port_are_overridden(source: Source, launch: Launch) -> None:
    """The documented promise, for every source: MASTER_ADDR and MASTER_PORT win."""
    given = Launch(
        {**launch, "MASTER_ADDR": "198.18.0.9", "MASTER_PORT": "21212"},
        launch.files,
        launch.answers,
    )
    spec = explain_environment(
        given, gpu_probe=tuple, read_file=given.read_file, ask=given.ask
    ).spec
    assert (spec.master_addr, spec.master_port) == ("198.18.0.9", 21212)


#: What the DeepSpeed launcher sets in each rank it starts (launcher/launch.py, 0.19.8).
_DEEPSPEED = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "LOCAL_SIZE": "2"}
_DEEPSPEED |= {"MASTER_ADDR": "198.18.0.9", "MASTER_PORT": "29500"}


def _spec(launch: Launch) -> ResourceSpec:
    return explain_environment(
        launch, gpu_probe=tuple, read_file=launch.read_file, ask=launch.ask
    ).spec


#: One rank of every registered launcher (its builder's first rank), and DeepSpeed's.
LAUNCHED = {
    detector.source.value: next(
        launch for launch in BUILT[detector.source] if _spec(launch).role is Role.RANK
    )
    for detector in DETECTORS
    if detector.kind is Kind.LAUNCHER
} | {"deepspeed": Launch(_DEEPSPEED)}


@pytest.mark.parametrize("launcher", sorted(LAUNCHED))
@pytest.mark.parametrize(("source", "launch"), CASES, ids=IDS)
def test_a_launcher_started_in_a_job_script_owns_its_ranks(
    source: Source, launch: Launch, launcher: str
) -> None:
    """Precedence is derived, not declared: a rank that any registered launcher (torchrun,
    mpirun, PALS' mpiexec, `deepspeed train.py`) started from a job script or allocation
    shell (a source's batch or shell role) is the launcher's, never the job script's."""
    if _spec(launch).role not in (Role.BATCH, Role.SHELL):
        return
    started = LAUNCHED[launcher]
    alone = _spec(started)
    rank = Launch({**launch, **started}, launch.files | started.files, started.answers)
    inner = _spec(rank)
    assert (inner.source, inner.global_rank, inner.world_size) == (
        alone.source,
        alone.global_rank,
        alone.world_size,
    )


@pytest.mark.parametrize(("source", "launch"), CASES, ids=IDS)
def test_a_job_scripts_own_ranks_are_never_its_rank_0(source: Source, launch: Launch) -> None:
    """Issue 47: processes a job script starts itself (its own loop, a pbsdsh wrapper) with
    RANK, WORLD_SIZE, LOCAL_RANK and the main address but no LOCAL_WORLD_SIZE are refused by
    name in each of them, never read as the job script (rank 0 in every process)."""
    spec = explain_environment(
        launch, gpu_probe=tuple, read_file=launch.read_file, ask=launch.ask
    ).spec
    if spec.role not in (Role.BATCH, Role.SHELL):
        return
    for rank in range(2):
        given = {**_DEEPSPEED, "RANK": str(rank), "LOCAL_RANK": str(rank)}
        del given["LOCAL_SIZE"]
        task = Launch({**launch, **given}, launch.files, launch.answers)
        with pytest.raises(MissingVariableError, match="LOCAL_WORLD_SIZE") as refused:
            explain_environment(task, gpu_probe=tuple, read_file=task.read_file, ask=task.ask)
        assert refused.value.variables == ("LOCAL_WORLD_SIZE",)


@pytest.mark.parametrize("detector", DETECTORS, ids=[d.source.value for d in DETECTORS])
def test_hints_and_docs_page_exist(detector: Detector) -> None:
    hints = detector.hints
    assert all((hints.num_nodes, hints.devices, hints.uneven, hints.gpus, hints.main))
    assert all((detector.name, detector.reason, detector.variables))
    page = ROOT / "docs" / "sources" / f"{detector.source.value}.md"
    assert page.is_file(), f"{page} documents the source"
    assert f"sources/{detector.source.value}.md" in (ROOT / "mkdocs.yml").read_text()


@pytest.mark.parametrize("detector", DETECTORS, ids=[d.source.value for d in DETECTORS])
def test_its_proof_and_schema_entry_exist(detector: Detector) -> None:
    """The lists of sources in the docs are generated (tests/test_docs_lists.py); the proof
    each source states and its entry in the published schema are checked here."""
    assert detector.proof.startswith(("live: ", "documented: ")), detector.proof
    schema = (ROOT / "docs" / "schema" / "inspect-v1.json").read_text()
    assert f'"{detector.source.value}"' in schema, (
        "UPDATE_SNAPSHOTS=1 pytest tests/test_inspect_report.py"
    )
    assert (ROOT / "tests" / "sources" / f"test_{detector.source.value}.py").is_file()


def test_lightning_hints_are_the_launchers_own() -> None:
    """A --devices conflict in an LSF job names jsrun, not another launcher's option."""
    require_modules("lightning")
    import clusterenv.lightning as cl  # noqa: PLC0415 - imports torch

    spec = explain_environment(
        lsf_env(2, 2, 3), read_file=lsf_env(2, 2, 3).read_file, ask=lsf_env(2, 2, 3).ask
    ).spec
    with pytest.raises(ValueError, match="jsrun") as raised:
        cl.trainer_kwargs(spec, package="lightning", devices=4)
    assert "torchrun" not in str(raised.value)
    batch = pbs_env(2, 4)
    batch_spec: ResourceSpec = explain_environment(
        batch, read_file=batch.read_file, ask=batch.ask
    ).spec
    with pytest.raises(ValueError, match=r"job script of a PBS job.*start the ranks with mpirun"):
        cl.trainer_kwargs(batch_spec, package="lightning")


def test_no_module_outside_sources_imports_a_detector() -> None:
    """The package reaches a source only through the registry (``clusterenv.sources``)."""
    offenders = []
    for path in (ROOT / "clusterenv").rglob("*.py"):
        if "sources" in path.relative_to(ROOT / "clusterenv").parts[:-1]:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "clusterenv.sources."
            ):
                offenders.append(f"{path.name}: {node.module}")
    assert offenders == []


def test_no_adapter_asks_the_registry() -> None:
    """Launch facts travel with the result (``Detection.launch``, ``launch_facts``): the
    registry's ``detector_for`` is called only by the sources and the engine."""
    engine = {ROOT / "clusterenv" / "_engine" / "detect.py"}
    callers = []
    for path in (ROOT / "clusterenv").rglob("*.py"):
        if "sources" in path.relative_to(ROOT / "clusterenv").parts[:-1] or path in engine:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Name) and node.id == "detector_for":
                callers.append(path.name)
    assert callers == []


def test_the_page_on_adding_a_source_names_files_every_source_has() -> None:
    """docs/adding-a-source.md is the truth: every path its table names with ``<name>``
    exists for every registered source (Grid Engine was added by following it)."""
    page = (ROOT / "docs" / "adding-a-source.md").read_text()
    table = page[: page.index("## 1.")]
    patterns = set(re.findall(r"`([\w/.-]*<name>[\w/.-]*\.(?:py|md))`", table))
    assert {"clusterenv/sources/<name>.py", "tests/sources/test_<name>.py"} <= patterns
    paths = {pattern.replace("<name>", source.value) for source in Source for pattern in patterns}
    # A module or, once it grows, a package of that name.
    modules = {path for path in paths if path.endswith(".py") and "/sources/" in path}
    missing = [
        path
        for path in sorted(paths)
        if not (ROOT / path).exists()
        and not (path in modules and (ROOT / path.removesuffix(".py") / "__init__.py").exists())
    ]
    assert missing == [], "the page names files that a source does not have"
