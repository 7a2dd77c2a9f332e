"""Asking a launcher's own command what its variables do not say: Flux gives a task no host
name and no node index, but ``flux job taskmap`` knows both (../shared/notes/flux.md).

An asker is a probe like the GPU probe: injectable (``detect_environment(ask=...)``),
bounded in time and size, and recorded by `clusterenv capture` so that a replay gives the
same answer without running anything on the machine that reads it.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping

__all__ = ["ASK_S", "MAX_ANSWER", "Asker", "ask_command", "no_answer", "recorded"]

#: An asker: the command's standard output (stripped), or ``None`` where it cannot answer.
Asker = Callable[[tuple[str, ...]], "str | None"]

#: Seconds one command may take: a launcher whose daemon is wedged must not hold detection.
ASK_S = 2.0
#: Bytes of output accepted: an answer is a few lines; more is not an answer.
MAX_ANSWER = 64 * 1024


def ask_command(argv: tuple[str, ...]) -> str | None:
    """Run ``argv`` (no shell, no input) and return what it printed; ``None`` where the
    command is missing, fails, takes longer than :data:`ASK_S` or prints too much."""
    import subprocess  # noqa: PLC0415 - only where a source asks: detection stays light

    if shutil.which(argv[0]) is None:
        return None
    try:
        result = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=ASK_S, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if result.returncode or len(result.stdout) > MAX_ANSWER:
        return None
    return result.stdout.decode("utf-8", "replace").strip()


def no_answer(argv: tuple[str, ...]) -> None:
    """The asker of a reader that must not run anything (a replay of a plain dump)."""
    return None


def recorded(answers: Mapping[str, str | None]) -> Asker:
    """An asker that gives back recorded answers (a capture's) and runs nothing."""
    return lambda argv: answers.get(" ".join(argv))
