"""`clusterenv inspect`: the report of what a process got, why, and where it ran.

The report is one pydantic model, :class:`InspectReport`: ``--json`` prints it (its JSON
schema is published in docs/schema/inspect-v1.json and held stable by a test), and the
text and Markdown renderings (:mod:`clusterenv._cli._render`) draw on it alone, so the
three always agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from clusterenv import __version__
from clusterenv._core.ask import Asker, ask_command, recorded
from clusterenv._core.finding import Finding
from clusterenv._core.hostfile import read_text_file
from clusterenv._core.reader import origin_value
from clusterenv._core.safe import redact_text, redact_value, unicode_text
from clusterenv._core.spec import GpuInventory, ResourceSpec, Source
from clusterenv._diagnosis.diagnose import diagnose
from clusterenv._diagnosis.machine import (
    Machine,
    collect_machine,
    machine_findings,
    network_variables,
)
from clusterenv._diagnosis.preflight import (
    main_address_findings,
    on_a_node,
    resolve_main,
    suspended,
)
from clusterenv._engine.detect import explain_environment
from clusterenv._node.gpu_probe import probe_gpus
from clusterenv.exceptions import ClusterEnvError

__all__ = [
    "SCHEMA_VERSION",
    "InspectReport",
    "Origin",
    "inspect_report",
    "live_report",
    "redact_json",
]

#: Raised when a field changes meaning or disappears; new optional fields keep it.
SCHEMA_VERSION = 1


class Origin(BaseModel):
    """One variable a value came from, with its value (redacted where secret)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    variable: str
    value: str


class InspectReport(BaseModel):
    """What ``clusterenv inspect --json`` prints (schema version 1)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = 1
    clusterenv: str
    generated_at: datetime
    #: ``process``: this process's environment and machine; ``env-file``: a file's (a
    #: ``clusterenv capture`` records the machine too; a plain dump does not).
    origin: Literal["process", "env-file"]
    machine: Machine
    source: Source
    reason: str
    description: str
    spec: ResourceSpec
    origins: dict[str, list[Origin]]
    network: dict[str, str]
    warnings: list[Finding]
    lightning: dict[str, Any] | None = None


def _lightning(spec: ResourceSpec, package: str) -> tuple[dict[str, Any], list[Finding]]:
    """The adapter's Trainer kwargs for ``spec`` (imports Lightning, hence only on request)."""
    import clusterenv.lightning as cl  # noqa: PLC0415 - torch only with --lightning

    chosen = cl.resolve_package(None if package == "auto" else package)  # type: ignore[arg-type]
    try:
        with suspended():  # the report's own findings say it all
            kwargs = cl.trainer_kwargs(spec, package=chosen)
    except ClusterEnvError as error:
        message, _, fix = str(error).partition(". HINT: ")
        problem = Finding(id="lightning", message=message, fix=fix)
        return {"package": chosen, "error": str(error)}, [problem]
    kwargs["plugins"] = [type(plugin).__name__ for plugin in kwargs["plugins"]]
    return {"package": chosen, "trainer_kwargs": kwargs}, []


def inspect_report(
    env: Mapping[str, str],
    files: Mapping[str, str],
    machine: Machine | None,
    lightning: str | None = None,
    answers: Mapping[str, str] | None = None,
) -> InspectReport:
    """The report for an env file: its variables, host files, recorded machine (``None``
    for a plain dump) and launcher answers. Its GPUs and CPUs are the recorded probe
    results, or none, and no command runs: never the machine reading it (:func:`live_report`
    describes this process)."""
    ask = recorded(answers or {})
    return _build(env, files, machine or Machine(), "env-file", lightning=lightning, ask=ask)


def live_report(env: Mapping[str, str], lightning: str | None = None) -> InspectReport:
    """The report for this process, on this machine, with what only this machine can tell
    (where the main address resolves: looked up once detection has named it)."""
    machine = collect_machine(probe_gpus, env)
    return _build(env, {}, machine, "process", lightning=lightning, ask=ask_command)


def machine_here(env: Mapping[str, str]) -> Machine:
    """This machine as `inspect` shows it and `capture` records it: with where the main
    address of ``env``'s job resolves here, so that a replay gives the same report."""
    machine = collect_machine(probe_gpus, env)
    gpus = machine.gpus or GpuInventory()
    try:
        spec = explain_environment(
            env, gpu_probe=lambda: gpus, cpu_probe=lambda: machine.affinity
        ).spec
    except ClusterEnvError:
        return machine
    if not on_a_node(spec, env):  # a mock: this machine's name service proves nothing
        return machine
    return machine.model_copy(update=resolve_main(spec)._asdict())


def _build(
    env: Mapping[str, str],
    files: Mapping[str, str],
    machine: Machine,
    origin: Literal["process", "env-file"],
    *,
    lightning: str | None,
    ask: Asker,
) -> InspectReport:
    gpus = machine.gpus or GpuInventory()  # not recorded: no GPU, never this machine's

    def read_file(path: str) -> str:
        return files[path] if path in files else read_text_file(path)

    detection = explain_environment(
        env,
        gpu_probe=lambda: gpus,
        cpu_probe=lambda: machine.affinity,
        read_file=read_file,
        ask=ask,
    )
    spec = detection.spec
    if origin == "process" and on_a_node(spec, env):  # a replay: as recorded; a mock: never
        machine = machine.model_copy(update=resolve_main(spec)._asdict())
    warnings = [
        *diagnose(spec, env),
        *machine_findings(spec, env, machine),
        *main_address_findings(spec, machine),
    ]
    adapter: dict[str, Any] | None = None
    if lightning:
        adapter, problems = _lightning(spec, lightning)
        warnings += problems

    answers = detection.answers
    origins = {
        field: [
            Origin(variable=name, value=redact_value(name, origin_value(env, answers, name)))
            for name in names
        ]
        for field, names in detection.variables.items()
        if names
    }
    report = InspectReport(
        clusterenv=__version__,
        generated_at=datetime.now(timezone.utc).replace(microsecond=0),
        origin=origin,
        machine=machine,
        source=spec.source,
        reason=detection.reason,
        description=detection.description,
        spec=spec,
        origins=origins,
        network=network_variables(env),
        warnings=warnings,
        lightning=adapter,
    )
    return InspectReport.model_validate(redact_json(report.model_dump(mode="json")))


def redact_json(data: Any) -> Any:
    """``data`` with every string redacted (JSON stays exact: ``json.dumps`` escapes the
    control characters itself)."""
    if isinstance(data, str):
        return redact_text(unicode_text(data))
    if isinstance(data, dict):
        return {unicode_text(key): redact_json(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [redact_json(value) for value in data]
    return data
