"""Environments from files (`inspect --env-file`) and into them (`capture`).

An env file is someone else's: it is read with a size cap, only from a regular file (or
stdin), and must yield variables; the host files a capture carries are host names only.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Mapping

from clusterenv._capture import launcher_variables
from clusterenv._detect import explain_environment
from clusterenv._reader import MAX_FILE_BYTES, host_lines, read_bytes, read_text_file
from clusterenv._safe import escape, shorten
from clusterenv.exceptions import ClusterEnvError

__all__ = ["FORMATS", "Usage", "capture", "read_env_file"]

FORMATS = "`env`/`printenv` output, NAME=VALUE lines, JSON or `clusterenv capture` output"


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


def read_env_file(path: str) -> tuple[dict[str, str], dict[str, str]]:
    """An environment from a file in one of ``FORMATS``, and the host files a
    `clusterenv capture` recorded with it (by path). A file that yields no variable is an
    error, not an empty (local) environment."""
    name = escape(shorten(path, 200))
    text = _text(path, name).removeprefix("\ufeff")  # a UTF-8 BOM from an editor
    if text.lstrip().startswith(("{", "[")):
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as error:
            problem = "nested too deeply" if isinstance(error, RecursionError) else error
            raise Usage(f"--env-file {name} is not valid JSON: {problem}") from None
        files = data.get("files", {}) if isinstance(data, dict) and "env" in data else {}
        data = data.get("env", data) if isinstance(data, dict) else data
        if not isinstance(data, dict) or not isinstance(files, dict):
            raise Usage(f"--env-file {name}: expected a JSON object of variables")
        env, recorded = _strings(data), _strings(files)
    else:
        env, recorded = {}, {}
        for line in text.splitlines():
            key, sep, value = line.removeprefix("export ").partition("=")
            if sep and key.strip() and not key.lstrip().startswith("#"):
                env[key.strip()] = value.strip().strip("'\"")
    if not env:
        raise Usage(f"--env-file {name} has no variables; it should hold {FORMATS}")
    return env, recorded


def _strings(data: Mapping[object, object]) -> dict[str, str]:
    return {str(key): str(value) for key, value in data.items()}


def capture(env: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """The launcher variables, and the host names of the host files that detection reads
    (PBS, LSF), so that `inspect --env-file` works on another machine too. Never a host
    file's raw text: a variable may name any file."""
    files: dict[str, str] = {}

    def record(path: str) -> str:
        text = read_text_file(path)
        hosts = host_lines("host file", path, text, hint="")  # refuses anything else
        files[path] = "".join(f"{host}\n" for host in hosts)
        return text

    with contextlib.suppress(ClusterEnvError):  # a broken environment is still captured
        explain_environment(env, gpu_probe=tuple, read_file=record)
    return {"env": launcher_variables(env), "files": files}
