"""What the command line says when it cannot do its work: one line on stderr, an exit
status that says why, never a traceback (``--debug`` shows it)."""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import traceback
from typing import Any

from clusterenv._core.safe import escape, redact_text

__all__ = ["internal_error", "output_failed", "say"]


#: Writing the output failed: a full device, a closed or broken stream.
_OUTPUT_ERRORS = frozenset({errno.ENOSPC, errno.EIO, errno.EBADF, errno.EDQUOT})


def output_failed(error: OSError, debug: bool) -> int:
    """Writing the output failed: a reader that has had enough (``inspect --json | head``)
    is no error; a full device or a broken stream is one line."""
    if not isinstance(error, BrokenPipeError) and error.errno not in _OUTPUT_ERRORS:
        return internal_error(error, debug)
    _drop(sys.stdout)  # what is still buffered can never be written
    if isinstance(error, BrokenPipeError):
        return 0
    say(f"clusterenv: error: cannot write the output: {error.strerror}")
    return 2


def say(line: str) -> None:
    """One line on stderr; where stderr cannot take it (``2>/dev/full``), the exit status
    still says what happened (not Python's 120 for a failed flush at exit)."""
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError, AttributeError):  # AttributeError: stderr is None
        _drop(sys.stderr)


def _drop(stream: Any) -> None:
    """Point ``stream`` at /dev/null, so that nothing left in its buffer fails at exit."""
    if stream is None:
        return
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())


def internal_error(error: BaseException, debug: bool) -> int:
    """A bug of ours: one line, and how to report it."""
    if debug:
        traceback.print_exception(type(error), error, error.__traceback__)
    say(
        f"clusterenv: internal error: {type(error).__name__}: "
        f"{escape(redact_text(str(error)))[:300]} (run with --debug for the traceback, and "
        "report it)"
    )
    return 2
