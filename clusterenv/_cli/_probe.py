"""`clusterenv probe`: its ``--timeout`` option, and rank 0's table before the verdict."""

from __future__ import annotations

import argparse
import json
import math
import signal
from typing import TYPE_CHECKING, Any

from clusterenv._adapters.frameworks import MAX_TIMEOUT, valid_timeout
from clusterenv._cli._report import redact_json
from clusterenv._core.safe import escape, redact_text

if TYPE_CHECKING:
    from clusterenv._probe import ProbeReport

__all__ = ["probe_command", "timeout_option"]


def timeout_option(text: str) -> float:
    """``--timeout``: what :func:`~clusterenv._adapters.frameworks.valid_timeout` accepts."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not valid_timeout(value):
        raise argparse.ArgumentTypeError(
            f"{escape(text)!r} is not a finite number of seconds above 0 and at most "
            f"{MAX_TIMEOUT:.0f}"
        )
    return value


def probe_command(timeout: float, backend: str | None, every_row: bool, as_json: bool) -> int:
    # Imported here: every other command (inspect above all) starts without the probe.
    from clusterenv._probe import ProbeError, probe  # noqa: PLC0415

    previous = _sigterm_interrupts()
    try:
        try:
            result = probe(timeout=timeout, backend=backend)
        except ProbeError as error:
            if error.report is not None:  # rank 0: the table first, then the verdict
                _show(error.report, every_row, as_json)
            raise
        if result.rows:
            _show(result, every_row, as_json)
            if backend and not as_json:
                ranks = result.spec.world_size
                print(f"{backend}: init_process_group and all_reduce over {ranks} ranks OK")
        return 0
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _sigterm_interrupts() -> Any:
    """A launcher's SIGTERM (srun, torchrun stopping a rank) ends the probe like Ctrl-C; the
    previous handler, to restore (``None`` off the main thread, where none can be set)."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    try:
        return signal.signal(signal.SIGTERM, interrupt)
    except ValueError:
        return None


def _show(result: ProbeReport, every_row: bool, as_json: bool) -> None:
    if as_json:
        print(json.dumps(redact_json(result.to_json()), indent=2))
    else:
        print(escape(redact_text(result.table(every_row=every_row))))
