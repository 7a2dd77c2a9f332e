"""What a job script asks of its scheduler, as each scheduler's source reads it for
`clusterenv check`: the options given (each with the line it came from), the findings the
reading made, and where the script's commands begin."""

from __future__ import annotations

from dataclasses import dataclass, field

from clusterenv._core.finding import Finding

__all__ = ["Directives", "Option", "Options"]


@dataclass(frozen=True)
class Option:
    """An option as given: its long name, its value (``None``: none), where it came from
    (a line number of the script, or 0 for the command line and the input variables)."""

    name: str
    value: str | None
    line: int
    text: str


@dataclass
class Options:
    """The options read from one place, with what reading them found."""

    given: dict[str, Option] = field(default_factory=dict)
    findings: list[tuple[int, Finding]] = field(default_factory=list)
    rest: list[str] = field(default_factory=list)  # what follows the options (srun's command)


@dataclass
class Directives(Options):
    """The script's directives; ``body`` is the 0-based line where its commands begin;
    ``unread``: (line, why) for what the scheduler reads that is not modelled."""

    body: int = 0
    unread: list[tuple[int, str]] = field(default_factory=list)
