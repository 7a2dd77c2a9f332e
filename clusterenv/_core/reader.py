"""The one way sources read an environment: every value is recorded with where it came from."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from clusterenv._core.ask import Asker, no_answer
from clusterenv._core.hostfile import (
    MAX_DIGITS,
    MAX_HOST_LINES,
    SLOT_LINES,
    HostFile,
    read_text_file,
)
from clusterenv._core.safe import redact_value, shorten
from clusterenv._core.spec import GpuInventory
from clusterenv.exceptions import InvalidVariableError, MissingVariableError

__all__ = [
    "MAX_VALUE_LENGTH",
    "EnvReader",
    "FileReader",
    "GpuProbe",
    "host_names",
    "origin_value",
    "parse_integer",
    "parse_json",
]

#: Returns this machine's GPUs: a :class:`~clusterenv.GpuInventory`, or a plain sequence of
#: ids, which means NVIDIA's, or ``None`` (could not tell: none). Asked where no
#: visible-devices variable decides.
GpuProbe = Callable[[], "GpuInventory | Sequence[str] | None"]
#: Returns the text of a file named by a variable (a hostfile); raises ``OSError``.
FileReader = Callable[[str], str]

_UNSIGNED = re.compile(r"[0-9]+")
#: A host name or an IPv4/IPv6 address.
_ADDRESS = re.compile(r"[A-Za-z0-9_.:-]{1,253}")
#: The longest variable detection reads: a compressed node list of a 10 000-node job with
#: no two neighbours is < 100 KiB. Longer values are refused before any parsing.
MAX_VALUE_LENGTH = 128 * 1024


def origin_value(env: Mapping[str, str], answers: Mapping[str, str | None], origin: str) -> str:
    """The value of a field's origin: variable ``origin``'s in ``env``, else the answer of
    the launcher's command ``origin`` (``""`` where none came)."""
    return env[origin] if origin in env else answers.get(origin) or ""


class EnvReader:
    """Reads one environment mapping and records which variables each field came from.

    Every method that returns a value for a field also records its origin (``origins``:
    field -> variable names); a value computed from other fields takes their origins
    through :meth:`derive`. The record goes into validation errors and tells a user *why*
    clusterenv believes what it reports.
    """

    def __init__(
        self, env: Mapping[str, str], read_file: FileReader = read_text_file, ask: Asker = no_answer
    ) -> None:
        self.env = env
        self.origins: dict[str, tuple[str, ...]] = {}
        #: The host files read: path -> their hosts and counts (:meth:`HostFile.text`).
        self.files: dict[str, str] = {}
        #: The launcher's commands asked (:mod:`clusterenv._core.ask`): command -> answer.
        self.answers: dict[str, str | None] = {}
        self._read_file = read_file
        self._ask = ask

    def answer(self, field: str, argv: tuple[str, ...]) -> str | None:
        """What the launcher's command ``argv`` answers (asked once), ``None`` where it
        cannot; ``field`` then comes from the command, named as typed."""
        command = " ".join(argv)
        if command not in self.answers:
            self.answers[command] = self._ask(argv)
        found = self.answers[command]
        if found is not None:
            self.origins[field] = (command,)
        return found

    def hosts(
        self, field: str, name: str, *, hint: str, layout: HostFile = SLOT_LINES
    ) -> list[str]:
        """The hosts of the host file that variable ``name`` names, one per slot, read in
        the source's ``layout``; the file's hosts and counts are kept in ``files``."""
        path = self.text(field, name, hint=hint)
        try:
            text = self._read_file(path)
        except (OSError, ValueError) as error:  # ValueError: a NUL in the path
            reason = getattr(error, "strerror", None) or error
            raise InvalidVariableError(
                f"{name}={shorten(path)!r} cannot be read ({reason})",
                variables=(name,),
                hint=f"{hint}; the file must be a readable regular file on this node",
            ) from None
        entries = layout.slots(name, path, text, hint)
        self.files[path] = layout.text(entries)
        return [host for host, count in entries for _ in range(count)]

    def value(self, origin: str) -> str:
        """The value an origin gave: a variable's, or a command's answer."""
        return origin_value(self.env, self.answers, origin)

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

    def describe(self, field: str, limit: int | None = None) -> str:
        """``"VAR='value', ..."`` for the variables ``field`` came from ('' if none), secrets
        redacted; each value cut to ``limit`` characters where given (for error messages)."""
        values = (
            (name, redact_value(name, self.value(name))) for name in self.origins.get(field, ())
        )
        return ", ".join(
            f"{name}={value if limit is None else shorten(value, limit)!r}"
            for name, value in values
        )

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


def host_names(name: str, values: object, *, hint: str) -> tuple[str, ...]:
    """``values`` (from variable ``name``: a JSON list, a split line) as host names or IP
    addresses, each checked; ``InvalidVariableError`` naming ``name`` otherwise."""
    hosts = values if isinstance(values, list | tuple) else None
    if hosts is None or len(hosts) > MAX_HOST_LINES:
        bad: object = values
    else:
        bad = next((h for h in hosts if not (isinstance(h, str) and _ADDRESS.fullmatch(h))), None)
        if bad is None:
            return tuple(hosts)
    raise InvalidVariableError(
        f"{name} is not a list of host names: {shorten(repr(bad))}",
        variables=(name,),
        hint=hint,
    )


def parse_json(name: str, value: str, *, hint: str) -> object:
    """The JSON value of variable ``name``; ``InvalidVariableError`` where it is not JSON.
    (``json`` is imported here: only the platforms that write JSON pay for it.)"""
    import json  # noqa: PLC0415 - lazy: detection elsewhere never loads json

    try:
        return json.loads(value)
    except (ValueError, RecursionError):  # RecursionError: "[[[[..." nested too deep
        raise InvalidVariableError(
            f"{name}={shorten(value)!r} is not valid JSON", variables=(name,), hint=hint
        ) from None


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
