"""`clusterenv env`: the spec as what other tools read."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping

from clusterenv._adapters.frameworks import env_variables, torchrun_arguments
from clusterenv._engine.detect import detect_environment

__all__ = ["FORMATS", "env_text"]

FORMATS = ("shell", "torchrun", "json", "dotenv")


def env_text(format: str, env: Mapping[str, str]) -> str:
    """This process's spec in ``format``: ``shell`` (``export`` lines for ``eval``),
    ``torchrun`` (the options that start this node's ranks), ``json`` or ``dotenv``."""
    spec = detect_environment(env)
    if format == "torchrun":
        return shlex.join(torchrun_arguments(spec))
    values = env_variables(spec, env)
    if format == "json":
        return json.dumps(values, indent=2)
    # Every value is a number, a validated host name or GPU ids: quoting is a safeguard.
    prefix = "export " if format == "shell" else ""
    return "\n".join(f"{prefix}{name}={shlex.quote(value)}" for name, value in values.items())
