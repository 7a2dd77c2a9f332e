"""Choosing a source and building the spec; the priority is :class:`~clusterenv.Source`'s order."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import ValidationError

from clusterenv._core.ask import Asker, ask_command
from clusterenv._core.hostfile import read_text_file
from clusterenv._core.launch import LaunchFacts
from clusterenv._core.reader import MAX_VALUE_LENGTH, EnvReader, FileReader, GpuProbe
from clusterenv._core.safe import shorten
from clusterenv._core.spec import ResourceSpec, Source
from clusterenv._engine.rules import MAIN_ADDR_TEMPLATE, complete
from clusterenv._node.cpu import CpuProbe, probe_cpus
from clusterenv._node.gpu import Gpus
from clusterenv._node.gpu_probe import probe_gpus
from clusterenv.exceptions import (
    ClusterEnvError,
    InconsistentEnvironmentError,
    InvalidVariableError,
)
from clusterenv.sources import DETECTORS, Detector, detector_for, present, read_by_a_source

__all__ = [
    "FORCE_VARIABLE",
    "MAIN_ADDR_TEMPLATE",
    "Detection",
    "detect_environment",
    "explain_environment",
    "launch_facts",
    "launch_inputs",
]

#: Names a source to use regardless of what else is set; ``local`` ignores every scheduler.
FORCE_VARIABLE = "CLUSTERENV_SOURCE"


def _choose(env: Mapping[str, str]) -> Detector:
    forced = env.get(FORCE_VARIABLE, "").strip().lower()
    if not forced:
        return present(env)[0]
    for detector in DETECTORS:
        if detector.source.value == forced:
            return detector
    names = ", ".join(source.value for source in Source)
    raise InvalidVariableError(
        f"{FORCE_VARIABLE}={shorten(env[FORCE_VARIABLE])!r} is not a known source",
        variables=(FORCE_VARIABLE,),
        hint=f"use one of {names}, or unset it to detect the source automatically",
    )


def _check_lengths(env: Mapping[str, str]) -> None:
    """Refuse an over-long value of any variable a source reads, before parsing anything."""
    for name, value in env.items():
        if len(value) > MAX_VALUE_LENGTH and read_by_a_source(name, env):
            raise InvalidVariableError(
                f"{name}={shorten(value)!r} is longer than {MAX_VALUE_LENGTH} characters, "
                "more than any launcher writes",
                variables=(name,),
                hint=f"unset {name} or fix what sets it; launchers write compact values",
            )


@dataclass(frozen=True)
class Detection:
    """A spec with its provenance: why the source was chosen, which variables gave each
    field (``variables``: their names; ``origins``: ``NAME='value', ...`` for messages),
    what the process is in words (``the srun step of job 42``), and what an adapter needs
    to know of its launch (``launch``: the launcher command, who holds the main port)."""

    spec: ResourceSpec
    reason: str
    origins: dict[str, str]
    variables: dict[str, tuple[str, ...]]
    description: str
    launch: LaunchFacts
    #: The launcher's commands detection asked, and their answers (``None``: none came).
    answers: dict[str, str | None]


def detect_environment(
    env: Mapping[str, str] | None = None,
    *,
    gpu_probe: GpuProbe | None = None,
    cpu_probe: CpuProbe | None = None,
    read_file: FileReader = read_text_file,
    ask: Asker = ask_command,
) -> ResourceSpec:
    """Describe the resources of this process and its place in the job.

    ``env`` defaults to ``os.environ``. ``gpu_probe`` returns this machine's GPUs (a
    :class:`~clusterenv.GpuInventory`, or a list of NVIDIA device ids) and is only called
    where the visible-devices variables do not decide; by default the drivers' /proc and
    /sys entries, NVML or ``nvidia-smi -L`` are asked (never torch).
    ``cpu_probe`` returns how many CPUs this process may run on (by default its affinity
    mask), which caps ``cpus_per_rank``. Pass probes of the machine ``env`` comes from
    (or ``lambda: None``) when ``env`` is not this process's.
    ``read_file(path)`` reads the files that variables name (PBS's and LSF's hostfiles).
    ``ask(argv)`` runs a launcher's own command where its variables do not say enough (Flux:
    ``flux job taskmap``), bounded to 2 s (:mod:`clusterenv._core.ask`); pass
    ``clusterenv._core.ask.no_answer`` to run nothing.

    Raises a :class:`~clusterenv.ClusterEnvError` subclass, naming the variables, for any
    environment that does not describe a valid job; never any other exception.
    """
    return _detect(env, gpu_probe, cpu_probe, read_file, ask)[0]


def explain_environment(
    env: Mapping[str, str] | None = None,
    *,
    gpu_probe: GpuProbe | None = None,
    cpu_probe: CpuProbe | None = None,
    read_file: FileReader = read_text_file,
    ask: Asker = ask_command,
) -> Detection:
    """Like :func:`detect_environment`, with the reasons (what ``clusterenv inspect`` shows)."""
    spec, reader, detector = _detect(env, gpu_probe, cpu_probe, read_file, ask)
    forced = reader.env.get(FORCE_VARIABLE, "").strip()
    reason = f"{FORCE_VARIABLE}={shorten(forced)!r}" if forced else detector.reason
    origins = {field: reader.describe(field) for field in reader.origins}
    launch = detector.facts(spec)
    return Detection(
        spec, reason, origins, dict(reader.origins), launch.description, launch, reader.answers
    )


def launch_facts(spec: ResourceSpec) -> LaunchFacts:
    """What an adapter needs to know of ``spec``'s launch beyond the spec (as
    :attr:`Detection.launch`), for a spec detected earlier or built by hand."""
    return detector_for(spec.source).facts(spec)


def launch_inputs(
    env: Mapping[str, str], read_file: FileReader = read_text_file, ask: Asker = ask_command
) -> tuple[dict[str, str], dict[str, str | None]]:
    """What detecting ``env`` reads besides it, as `clusterenv capture` records it: the host
    files (path -> hosts and slot counts in the layout of the source that reads it, never
    other text) and the launcher's answers (command -> output). Also where detection then
    fails: a broken environment is still captured whole."""
    reader = EnvReader(env, read_file, ask)
    with contextlib.suppress(ClusterEnvError):
        _check_lengths(reader.env)
        detector = _choose(reader.env)
        detector.main_address(reader, detector.read(reader, Gpus(reader, tuple)))
    return reader.files, reader.answers


def _detect(
    env: Mapping[str, str] | None,
    gpu_probe: GpuProbe | None,
    cpu_probe: CpuProbe | None,
    read_file: FileReader,
    ask: Asker,
) -> tuple[ResourceSpec, EnvReader, Detector]:
    reader = EnvReader(os.environ if env is None else env, read_file, ask)
    _check_lengths(reader.env)
    detector = _choose(reader.env)
    gpus = Gpus(reader, gpu_probe or probe_gpus)
    fields = complete(reader, detector, detector.read(reader, gpus), gpus, cpu_probe or probe_cpus)
    try:
        return ResourceSpec.model_validate(fields), reader, detector
    except ValidationError:
        pass
    # Invalid: validate again with the origins, which the messages then quote (describing
    # them costs more than the whole detection, so only here).
    short = {field: reader.describe(field, limit=60) for field in reader.origins}
    try:
        ResourceSpec.model_validate(fields, context={"origins": short})
    except ValidationError as error:
        problems = "; ".join(
            detail["msg"].removeprefix("Value error, ") for detail in error.errors()
        )
        involved = (names for field, names in reader.origins.items() if f"{field}=" in problems)
        used = tuple(dict.fromkeys(name for names in involved for name in names))
        raise InconsistentEnvironmentError(
            f"the {detector.source.value} environment is contradictory: {problems}",
            variables=used,
            hint="these variables are set by the launcher together; look for ones set by hand "
            "or inherited from an outer job",
        ) from None
    raise AssertionError("validation depends on the fields alone")
