"""A job script's shell, read as hostile input in linear time: bounded in size, split into
logical lines and simple commands, each word expanded as the shell that reads it would
(``$VAR``, ``${VAR}``, ``${VAR:-default}``; single quotes keep theirs), with the command
substitutions a job script uses (``$(hostname)``) answered by the caller. What it cannot
know stays marked unknown, never guessed."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from clusterenv._core.safe import shorten
from clusterenv.exceptions import ClusterEnvError

__all__ = ["Line", "Unreadable", "Word", "commands", "lines", "read_script", "words"]

#: The largest job script read (a real one is a few kilobytes), and its longest line.
MAX_SCRIPT_BYTES = 1 << 20
MAX_LINE = 1 << 16
#: How deep command substitutions may nest before the rest is unknown.
MAX_DEPTH = 4
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPERATORS = ("&&", "||", ";;", ";", "&", "|")

#: A variable's value where the shell reading the word runs; ``None``: not known.
Values = Callable[[str], "str | None"]
#: The output of a command substitution, given its command's words; ``None``: not known.
Substitute = Callable[[list["Word"]], "str | None"]


class Unreadable(ValueError):
    """A line the reader cannot split (an unclosed quote): the caller says so at its line."""


@dataclass(frozen=True)
class Line:
    """A logical line: continuations (a trailing ``\\``) joined; ``number`` is its first."""

    number: int
    text: str


@dataclass(frozen=True)
class Word:
    """A word as the shell passes it on; ``known`` is false where an expansion in it had no
    known value (it then keeps the text as written); ``operator`` marks ``;``, ``&&``, ``|``."""

    text: str
    known: bool = True
    operator: bool = False


def read_script(path: str) -> list[str]:
    """The physical lines of the job script at ``path``: refused (a ``ClusterEnvError``
    naming it) where it cannot be read, is larger than 1 MiB or is not text."""
    try:
        with open(path, "rb") as stream:
            data = stream.read(MAX_SCRIPT_BYTES + 1)
    except OSError as error:
        raise ClusterEnvError(
            f"the job script {shorten(path)!r} cannot be read ({error.strerror or error})",
            hint="give the path of an sbatch script",
        ) from None
    if len(data) > MAX_SCRIPT_BYTES:
        raise ClusterEnvError(
            f"the job script {shorten(path)!r} is larger than {MAX_SCRIPT_BYTES} bytes",
            hint="a job script is a few kilobytes; give the script, not its data",
        )
    if b"\0" in data:
        raise ClusterEnvError(
            f"{shorten(path)!r} is not a job script: it holds NUL bytes (a binary file)",
            hint="give the path of an sbatch script",
        )
    return data.decode("utf-8", "replace").splitlines()


def lines(physical: list[str], start: int = 0) -> list[Line]:
    """The logical lines from physical line ``start`` (0-based) on, numbered from 1."""
    found, pending, first = [], "", 0
    for index in range(start, len(physical)):
        text = physical[index][:MAX_LINE]
        if not pending:
            first = index + 1
        joined = len(text) - len(text.rstrip("\\"))
        if joined % 2:  # an odd number of trailing backslashes: continued
            pending += text[:-1]
            continue
        found.append(Line(first, pending + text))
        pending = ""
    if pending:
        found.append(Line(first, pending))
    return found


def commands(found: list[Word]) -> list[list[Word]]:
    """``found`` split into simple commands at its operators (``;``, ``&&``, ``|``, ``&``)."""
    split: list[list[Word]] = [[]]
    for word in found:
        if word.operator:
            split.append([])
        else:
            split[-1].append(word)
    return [command for command in split if command]


class _Reader:
    """One pass over a line's characters; every index only moves forward."""

    def __init__(self, text: str, values: Values, substitute: Substitute, depth: int) -> None:
        self.text, self.values, self.substitute, self.depth = text, values, substitute, depth
        self.at = 0

    def words(self) -> list[Word]:
        found: list[Word] = []
        parts: list[str] = []
        known, started = True, False
        text = self.text
        while self.at < len(text):
            char = text[self.at]
            ends = char in " \t\r\n" or (char == "#" and not started)
            operator = next((op for op in _OPERATORS if text.startswith(op, self.at)), None)
            if ends or operator or char in "<>":
                redirected = char in "<>" and "".join(parts).isdigit()  # 2>&1: 2 is no word
                if started and not redirected:
                    found.append(Word("".join(parts), known))
                parts, known, started = [], True, False
                if char == "#" and ends:
                    break  # a comment to the end of the line
                if operator:
                    found.append(Word(operator, operator=True))
                    self.at += len(operator)
                elif char in "<>":
                    self._redirection()
                else:
                    self.at += 1
                continue
            value, ok = self._part()
            parts.append(value)
            known &= ok
            started = True
        if started:
            found.append(Word("".join(parts), known))
        return found

    def _part(self) -> tuple[str, bool]:
        """The next piece of a word: a quoted string, an escaped character, an expansion or
        a plain character; and whether its value is known."""
        char, text = self.text[self.at], self.text
        if char == "'":
            end = text.find("'", self.at + 1)
            if end < 0:
                raise Unreadable("a single quote is not closed")
            value, self.at = text[self.at + 1 : end], end + 1
            return value, True
        if char == '"':
            return self._double()
        if char == "\\":
            self.at += 2
            return text[self.at - 1 : self.at], True
        if char in "$`":
            return self._expansion()
        self.at += 1
        return char, True

    def _redirection(self) -> None:
        """``> file``, ``2>&1``, ``< input``: skipped with their target."""
        while self.at < len(self.text) and self.text[self.at] in "<>&":
            self.at += 1
        while self.at < len(self.text) and self.text[self.at] in " \t":
            self.at += 1
        while self.at < len(self.text) and self.text[self.at] not in " \t;&|":
            self.at += 1

    def _double(self) -> tuple[str, bool]:
        """A double-quoted string from its opening quote: ``$`` expands, ``\\`` escapes."""
        parts, known = [], True
        self.at += 1
        while self.at < len(self.text) and self.text[self.at] != '"':
            char = self.text[self.at]
            if char == "\\" and self.text[self.at + 1 : self.at + 2] in ('"', "\\", "$", "`"):
                parts.append(self.text[self.at + 1])
                self.at += 2
            elif char in "$`":
                value, ok = self._expansion()
                parts.append(value)
                known &= ok
            else:
                parts.append(char)
                self.at += 1
        if self.at >= len(self.text):
            raise Unreadable("a double quote is not closed")
        self.at += 1
        return "".join(parts), known

    def _expansion(self) -> tuple[str, bool]:
        """``$NAME``, ``${NAME}``, ``${NAME:-default}``, ``$(command)``, `` `command` ``,
        from the ``$`` or backtick on: the value, and whether it is known."""
        text, start = self.text, self.at
        if text[start] == "`" or text.startswith("$(", start):
            return self._substitution()
        if text.startswith("${", start):
            return self._parameter()
        name = _NAME.match(text, start + 1)
        if name is None:  # $1, $@, $$, or a lone $
            self.at = start + 1 + (start + 1 < len(text) and not text[start + 1].isspace())
            return text[start : self.at], text[start : self.at] == "$"
        self.at = name.end()
        value = self.values(name.group())
        return (text[start : self.at], False) if value is None else (value, True)

    def _substitution(self) -> tuple[str, bool]:
        """``$(command)`` or `` `command` ``: its output, where ``substitute`` knows it."""
        text, start = self.text, self.at
        opening = "`" if text[start] == "`" else "$("
        end = _closing(text, start + len(opening), opening)
        if end < 0:
            raise Unreadable("a command substitution is not closed")
        self.at = end + 1
        inner = text[start + len(opening) : end]
        arithmetic = opening == "$(" and inner.startswith("(")  # $((...))
        if arithmetic or self.depth >= MAX_DEPTH:
            return text[start : self.at], False
        value = self.substitute(
            _Reader(inner, self.values, self.substitute, self.depth + 1).words()
        )
        return (text[start : self.at], False) if value is None else (value, True)

    def _parameter(self) -> tuple[str, bool]:
        """``${NAME}``, ``${NAME:-default}`` (the default where NAME is unset or empty)."""
        text, start = self.text, self.at
        end = text.find("}", start)
        if end < 0:
            raise Unreadable("a ${...} is not closed")
        self.at = end + 1
        inside = text[start + 2 : end]
        name = _NAME.match(inside)
        value = self.values(name.group()) if name else None
        rest = inside[name.end() :] if name else ""
        if name and value in (None, "") and rest.startswith((":-", "-")):
            return rest.partition("-")[2], True
        return (text[start : self.at], False) if value is None else (value, True)


def _closing(text: str, at: int, opening: str) -> int:
    """Where the substitution opened just before ``at`` closes (``-1``: it does not)."""
    if opening == "`":
        return text.find("`", at)
    depth, quote = 1, ""
    for index in range(at, len(text)):
        char = text[index]
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return index
    return -1


def words(text: str, values: Values, substitute: Substitute) -> list[Word]:
    """The words of shell ``text``, expanded with ``values`` and ``substitute``; raises
    :class:`Unreadable` for a quote or substitution that is not closed."""
    return _Reader(text, values, substitute, 0).words()
