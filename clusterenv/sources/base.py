"""The interface every source implements, and the reader they all parse variables with."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from clusterenv._spec import Source
from clusterenv.exceptions import InvalidVariableError, MissingVariableError

__all__ = ["Detector", "EnvReader", "GpuProbe", "parse_integer"]

#: Returns the CUDA device ids this machine shows when ``CUDA_VISIBLE_DEVICES`` is unset.
GpuProbe = Callable[[], Sequence[str]]

_UNSIGNED = re.compile(r"[0-9]+")


class EnvReader:
    """Reads one environment mapping and records which variables each field came from.

    The record (``origins``: field -> variable names) goes into validation errors and
    tells a user *why* clusterenv believes what it reports.
    """

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = env
        self.origins: dict[str, tuple[str, ...]] = {}

    def lookup(self, *names: str) -> tuple[str, str] | None:
        """``(name, value)`` of the first of ``names`` that is set, else ``None``."""
        for name in names:
            value = self.env.get(name)
            if value is not None:
                return name, value
        return None

    def note(self, field: str, *names: str) -> None:
        """Record that ``field`` was derived from the variables ``names`` (those set)."""
        used = tuple(name for name in names if name in self.env)
        if used:
            self.origins[field] = used

    def describe(self, field: str) -> str:
        """``"VAR='value', ..."`` for the variables ``field`` came from ('' if none)."""
        return ", ".join(f"{name}={self.env[name]!r}" for name in self.origins.get(field, ()))

    def optional(self, field: str, *names: str) -> str | None:
        """The first of ``names`` that is set, stripped, if it is non-empty; else ``None``."""
        found = self.lookup(*names)
        if found is None or not found[1].strip():
            return None
        self.note(field, found[0])
        return found[1].strip()

    def text(self, field: str, *names: str, hint: str) -> str:
        """The first of ``names`` that is set and non-empty; ``MissingVariableError`` if none."""
        value = self.optional(field, *names)
        if value is None:
            found = self.lookup(*names)
            shown = found[0] + "=''" if found else " or ".join(names) + " (not set)"
            raise MissingVariableError(f"{field} needs {shown}", variables=names, hint=hint)
        return value

    def integer(
        self,
        field: str,
        *names: str,
        hint: str,
        default: int | None = None,
        minimum: int = 0,
        maximum: int | None = None,
    ) -> int:
        """A decimal integer in ``[minimum, maximum]`` from the first of ``names`` that is set."""
        found = self.lookup(*names)
        if found is None:
            if default is not None:
                return default
            raise MissingVariableError(
                f"{field} needs {' or '.join(names)}, which is not set", variables=names, hint=hint
            )
        name, value = found
        self.note(field, name)
        return parse_integer(name, value, hint=hint, minimum=minimum, maximum=maximum)

    def port(self, default: int | None, hint: str) -> int:
        """``MASTER_PORT`` as a TCP port; ``default`` when unset (``None``: required)."""
        return self.integer(
            "master_port", "MASTER_PORT", hint=hint, default=default, minimum=1, maximum=65535
        )


def parse_integer(
    name: str, value: str, *, hint: str, minimum: int = 0, maximum: int | None = None
) -> int:
    """Parse ``value`` of variable ``name`` as an ASCII decimal in ``[minimum, maximum]``."""
    text = value.strip()
    if _UNSIGNED.fullmatch(text):
        number = int(text)
        if number >= minimum and (maximum is None or number <= maximum):
            return number
    bounds = f">= {minimum}" if maximum is None else f"between {minimum} and {maximum}"
    raise InvalidVariableError(
        f"{name}={value!r} is not an integer {bounds}", variables=(name,), hint=hint
    )


class Detector(ABC):
    """One scheduler or launcher. Subclasses are listed, in priority order, in ``_detect``."""

    source: ClassVar[Source]
    reason: ClassVar[str]  # why this source was chosen, in words, for `clusterenv inspect`

    @abstractmethod
    def present(self, env: Mapping[str, str]) -> bool:
        """Whether ``env`` comes from this source (cheap; no parsing, no errors)."""

    @abstractmethod
    def read(self, reader: EnvReader, gpu_probe: GpuProbe) -> dict[str, Any]:
        """The ``ResourceSpec`` fields; raises ``ClusterEnvError`` for bad or missing values."""
