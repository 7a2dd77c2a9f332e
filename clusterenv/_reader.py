"""The one way sources read an environment: every value is recorded with where it came from."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from clusterenv.exceptions import InvalidVariableError, MissingVariableError

__all__ = [
    "MAX_DIGITS",
    "EnvReader",
    "FileReader",
    "GpuProbe",
    "parse_integer",
    "read_text_file",
    "shorten",
]

#: Returns the CUDA device ids this machine shows when ``CUDA_VISIBLE_DEVICES`` is unset.
GpuProbe = Callable[[], Sequence[str]]
#: Returns the text of a file named by a variable (a hostfile); raises ``OSError``.
FileReader = Callable[[str], str]

_UNSIGNED = re.compile(r"[0-9]+")
#: No real count, rank, port or job id needs more digits; refusing longer values before
#: ``int()`` keeps Python's 4300-digit ValueError (and its quadratic conversion) away.
MAX_DIGITS = 18


def read_text_file(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as file:
        return file.read()


class EnvReader:
    """Reads one environment mapping and records which variables each field came from.

    Every method that returns a value for a field also records its origin (``origins``:
    field -> variable names); a value computed from other fields takes their origins
    through :meth:`derive`. The record goes into validation errors and tells a user *why*
    clusterenv believes what it reports.
    """

    def __init__(self, env: Mapping[str, str], read_file: FileReader = read_text_file) -> None:
        self.env = env
        self.origins: dict[str, tuple[str, ...]] = {}
        self._read_file = read_file

    def file(self, field: str, name: str, *, hint: str) -> str:
        """The text of the file that variable ``name`` names (e.g. a hostfile)."""
        path = self.text(field, name, hint=hint)
        try:
            return self._read_file(path)
        except OSError as error:
            raise InvalidVariableError(
                f"{name}={path!r} cannot be read ({error.strerror or error})",
                variables=(name,),
                hint=f"{hint}; the file must be readable on this node",
            ) from None

    def lookup(self, *names: str) -> tuple[str, str] | None:
        """``(name, value)`` of the first of ``names`` that is set, else ``None``."""
        for name in names:
            value = self.env.get(name)
            if value is not None:
                return name, value
        return None

    def note(self, field: str, *names: str) -> None:
        """Record that ``field`` was read from the variables ``names`` (those set)."""
        used = tuple(name for name in names if name in self.env)
        if used:
            self.origins[field] = used

    def derive(self, field: str, *sources: str) -> None:
        """Record that ``field`` was computed from the fields ``sources``: their variables."""
        names = (name for source in sources for name in self.origins.get(source, ()))
        self.origins[field] = tuple(dict.fromkeys(names))

    def first(self, field: str) -> str:
        """The variable ``field`` was read from (the first, where there are several)."""
        return self.origins[field][0]

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
    if len(text) <= MAX_DIGITS and _UNSIGNED.fullmatch(text):
        number = int(text)
        if number >= minimum and (maximum is None or number <= maximum):
            return number
    bounds = f">= {minimum}" if maximum is None else f"between {minimum} and {maximum}"
    raise InvalidVariableError(
        f"{name}={shorten(value)!r} is not an integer {bounds} (ASCII digits, at most "
        f"{MAX_DIGITS})",
        variables=(name,),
        hint=hint,
    )


def shorten(value: str, limit: int = 60) -> str:
    """``value`` cut to ``limit`` characters, saying how long it was: for error messages."""
    if len(value) <= limit:
        return value
    return f"{value[: limit - 20]}…({len(value)} characters)"
