"""Environments from files (`inspect --env-file`) and into them (`capture`).

An env file is someone else's: it is read with a size cap, only from a regular file (or
stdin), and must yield variables; the host files a capture carries are host names only.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any, NamedTuple

from pydantic import ValidationError

from clusterenv._core.ask import Asker
from clusterenv._core.hostfile import MAX_FILE_BYTES, read_bytes
from clusterenv._core.reader import MAX_VALUE_LENGTH
from clusterenv._core.safe import escape, redact_text, shorten
from clusterenv._diagnosis.capture import launcher_variables
from clusterenv._diagnosis.machine import Machine
from clusterenv._engine.detect import launch_inputs

__all__ = ["CAPTURE_VERSION", "FORMATS", "EnvFile", "Usage", "capture", "read_env_file"]

#: The version of `clusterenv capture`'s format: {schema_version, captured_at, env, files,
#: answers, machine} (``answers`` is new in 1, optional). Files without schema_version
#: (older captures, plain JSON) are still read.
CAPTURE_VERSION = 1

FORMATS = "`env`/`printenv` output, NAME=VALUE lines, JSON or `clusterenv capture` output"
#: More variables than a process environment holds in practice (Linux passes it within
#: ARG_MAX, 2 MiB by default): refused before anything reads them.
MAX_VARIABLES = 65_536


class Usage(Exception):
    """A problem with the command line's inputs (e.g. an unreadable --env-file)."""


def _text(path: str, name: str) -> str:
    if path == "-":
        stream = getattr(sys.stdin, "buffer", sys.stdin)
        data = stream.read(MAX_FILE_BYTES + 1) if stream else b""
        if len(data) > MAX_FILE_BYTES:
            raise Usage(f"--env-file -: standard input is larger than {MAX_FILE_BYTES} bytes")
    else:
        try:
            data = read_bytes(path)
        except OSError as error:
            raise Usage(f"cannot read --env-file {name}: {error.strerror or error}") from None
    try:
        return data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError:
        raise Usage(f"--env-file {name} is not UTF-8 text ({FORMATS})") from None


class EnvFile(NamedTuple):
    """What an env file holds: the variables, the host files a capture recorded (by path),
    the machine it recorded (``None`` for a plain dump) and the launcher's answers it
    recorded (command -> output: what a replay gives back instead of running anything)."""

    env: dict[str, str]
    files: dict[str, str]
    machine: Machine | None
    answers: dict[str, str]


def read_env_file(path: str, task: int | None = None) -> EnvFile:
    """An environment from a file in one of ``FORMATS``, or task ``task`` of a launch record
    (``{"command", "tasks": [...]}``, as tests/data/captures/ holds). A file that yields no
    variable is an error, not an empty (local) environment."""
    name = escape(shorten(path, 200))
    text = _text(path, name).removeprefix("\ufeff")  # a UTF-8 BOM from an editor
    if text.count("\n") > MAX_VARIABLES:
        raise Usage(f"--env-file {name} has more than {MAX_VARIABLES} lines: not an environment")
    if text.lstrip().startswith(("{", "[")):
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as error:
            problem = "nested too deeply" if isinstance(error, RecursionError) else error
            raise Usage(f"--env-file {name} is not valid JSON: {problem}") from None
        record = isinstance(data, dict) and "env" not in data and "tasks" in data
        if record:
            data = _task(name, data["tasks"], task)
        elif task is not None:
            raise Usage(f"--task {task}: --env-file {name} is not a launch record")
        if (
            isinstance(data, dict)
            and "env" not in data
            and not all(isinstance(value, str | None) for value in data.values())
        ):
            raise Usage(f"--env-file {name}: expected a JSON object of variables ({FORMATS})")
        captured = isinstance(data, dict) and "env" in data
        files = data.get("files", {}) if captured else {}
        answers = data.get("answers", {}) if captured else {}
        machine = _machine(name, data.get("machine")) if captured else None
        data = data.get("env", data) if isinstance(data, dict) else data
        if not all(isinstance(part, dict) for part in (data, files, answers)):
            raise Usage(f"--env-file {name}: expected a JSON object of variables")
        env, recorded, answered = _strings(data), _strings(files), _strings(answers)
    else:
        env, recorded, answered, machine, captured = {}, {}, {}, None, False
        for line in text.splitlines():
            key, sep, value = line.removeprefix("export ").partition("=")
            if sep and key.strip() and not key.lstrip().startswith("#"):
                env[key.strip()] = value.strip().strip("'\"")
    if not env and not captured:  # a capture of a plain machine may hold none
        raise Usage(f"--env-file {name} has no variables; it should hold {FORMATS}")
    _check_sizes(name, env)
    if not captured and not launcher_variables(env):
        raise Usage(
            f"--env-file {name} sets none of the variables a scheduler, launcher or GPU runtime "
            f"sets ({len(env)} read): a replay would describe a plain machine; pass a process "
            "of the job's environment (srun env > task.env), or add CLUSTERENV_SOURCE=local "
            "to it to describe it as a local run"
        )
    return EnvFile(env, recorded, machine, answered)


def _task(name: str, tasks: object, index: int | None) -> dict[str, Any]:
    """Task ``index`` of a launch record, as a capture: its variables, host files, answers
    and the CPUs its probe saw."""
    count = len(tasks) if isinstance(tasks, list) else 0
    if index is None or not 0 <= index < count:
        said = "" if index is None else f" ({index} is not one)"
        raise Usage(
            f"--env-file {name} is a launch record of {count} task(s), not one environment: "
            f"pass --task N (0 to {count - 1}) to replay one{said}"
        )
    chosen = tasks[index] if isinstance(tasks, list) else {}
    if not isinstance(chosen, dict):
        raise Usage(f"--env-file {name}: task {index} is not a JSON object")
    cpus = chosen.get("cpus")
    machine = {"affinity": cpus} if isinstance(cpus, int) else {}
    return {key: chosen.get(key, {}) for key in ("env", "files", "answers")} | {"machine": machine}


def _check_sizes(name: str, env: Mapping[str, str]) -> None:
    """No process holds a value over 128 KiB (Linux's MAX_ARG_STRLEN) or more variables than
    :data:`MAX_VARIABLES`: such a file is refused before anything reads a value."""
    if len(env) > MAX_VARIABLES:
        raise Usage(f"--env-file {name} has more than {MAX_VARIABLES} variables")
    for key, value in env.items():
        if len(value) > MAX_VALUE_LENGTH:
            raise Usage(
                f"--env-file {name}: {escape(shorten(key))} is {len(value)} characters long, "
                f"more than a process environment holds ({MAX_VALUE_LENGTH})"
            )


def _machine(name: str, data: Any) -> Machine | None:
    if data is None:
        return None
    try:
        return Machine.model_validate(data)
    except ValidationError as error:
        problem = error.errors()[0]
        where = ".".join(map(str, problem["loc"]))
        raise Usage(
            f"--env-file {name}: machine.{escape(shorten(where))}: {escape(problem['msg'])}"
        ) from None


def _strings(data: Mapping[object, object]) -> dict[str, str]:
    """A JSON object's variables as strings; ``null`` is an unset variable, not ``'None'``."""
    return {str(key): str(value) for key, value in data.items() if value is not None}


def capture(env: Mapping[str, str], machine: Machine | None, ask: Asker) -> dict[str, Any]:
    """What `inspect --env-file` needs to give the same report on another machine: the
    launcher and network variables, the hosts and slot counts of the host files detection
    reads, in the layout of the source that reads each (never a host file's raw text: a
    variable may name any file), the answers of the launcher's commands detection asked
    (``ask``), and ``machine`` (the GPU probe's result, CPUs, versions, host)."""
    files, answers = launch_inputs(env, ask=ask)
    return {
        "schema_version": CAPTURE_VERSION,
        "captured_at": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
        "env": launcher_variables(env),
        "files": files,
        "answers": {command: redact_text(text) for command, text in answers.items() if text},
        "machine": machine.model_dump(mode="json") if machine else None,
    }
