"""Files a variable names (a scheduler's host file), read as hostile input: regular files
only, bounded in size, and parsed as host names and counts, nothing else."""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NoReturn

from clusterenv._core.safe import shorten
from clusterenv.exceptions import InvalidVariableError

__all__ = [
    "HOST",
    "MAX_DIGITS",
    "MAX_FILE_BYTES",
    "MAX_HOST_LINES",
    "SLOT_LINES",
    "HostFile",
    "read_bytes",
    "read_text_file",
]

#: A host name as schedulers write them.
HOST = re.compile(r"[A-Za-z0-9_.-]{1,253}")
#: The largest host file read (one line per slot: 16 MiB is ~10^6 slots).
MAX_FILE_BYTES = 16 * 1024 * 1024
#: The most lines (slots) a host file may list.
MAX_HOST_LINES = 1_000_000
#: No real count, rank, port or job id needs more digits; refusing longer values before
#: ``int()`` keeps Python's 4300-digit ValueError (and its quadratic conversion) away.
MAX_DIGITS = 18


def read_text_file(path: str) -> str:
    """The text of a regular file of at most ``MAX_FILE_BYTES``; ``OSError`` otherwise."""
    return read_bytes(path).decode("utf-8", errors="replace")


def read_bytes(path: str) -> bytes:
    """The bytes of a regular file of at most ``MAX_FILE_BYTES``; ``OSError`` otherwise.

    Opened without blocking (a FIFO with no writer would hang ``open``), checked to be a
    regular file (not ``/dev/zero``, a directory or a FIFO) and read with a size cap.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        if info.st_size > MAX_FILE_BYTES:
            raise OSError(errno.EFBIG, f"larger than {MAX_FILE_BYTES} bytes", path)
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as file:
            data = file.read(MAX_FILE_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:  # grew while being read, or /proc-style size 0
        raise OSError(errno.EFBIG, f"larger than {MAX_FILE_BYTES} bytes", path)
    return data


@dataclass(frozen=True)
class HostFile:
    """How a scheduler's host file lists its hosts; each source names the layout of each
    file it reads. ``counted``: one line per host whose second word is its slot count (Grid
    Engine's ``PE_HOSTFILE``: ``node01 4 all.q@node01 UNDEFINED``); otherwise one line per
    slot, so hosts repeat (``PBS_NODEFILE``, ``LSB_DJOB_HOSTFILE``).

    Anything but host names (and counts) is refused, so that a variable naming another file
    (``/proc/self/environ``) shows none of its text; at most ``MAX_HOST_LINES`` slots.
    """

    counted: bool = False

    def slots(self, name: str, path: str, text: str, hint: str) -> list[tuple[str, int]]:
        """``(host, slots)`` for each line of host file ``path``, named by variable ``name``."""
        entries: list[tuple[str, int]] = []
        total = 0
        for number, line in enumerate(text.splitlines(), 1):
            words = line.split(maxsplit=2)
            if not words:
                continue
            count = self._count(words)
            if count is None or not HOST.fullmatch(words[0]):
                self._refuse(name, path, hint, f"line {number} is not {self.describe()}")
            total += count
            if total > MAX_HOST_LINES:
                self._refuse(name, path, hint, f"more than {MAX_HOST_LINES} slots")
            entries.append((words[0], count))
        return entries

    def _refuse(self, name: str, path: str, hint: str, problem: str) -> NoReturn:
        raise InvalidVariableError(
            f"{name}={shorten(path)!r} is not a host file: {problem}",
            variables=(name,),
            hint=f"{hint}; the file lists {self.describe()} per line",
        )

    def text(self, entries: Sequence[tuple[str, int]]) -> str:
        """The file as `capture` records it: host names and counts, nothing else."""
        if self.counted:
            return "".join(f"{host} {count}\n" for host, count in entries)
        return "".join(f"{host}\n" for host, _ in entries)

    def describe(self) -> str:
        return "a host name and its slot count" if self.counted else "one host name (per slot)"

    def _count(self, words: list[str]) -> int | None:
        if not self.counted:  # the host name alone: a second word is another file's text
            return 1 if len(words) == 1 else None
        if len(words) < 2 or not words[1].isdigit() or len(words[1]) > MAX_DIGITS:
            return None
        return int(words[1])


#: One line per slot: PBS's and LSF's host files.
SLOT_LINES = HostFile()
