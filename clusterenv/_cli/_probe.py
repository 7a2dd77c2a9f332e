"""`clusterenv probe`: its ``--timeout`` option, and rank 0's table before the verdict."""

from __future__ import annotations

import argparse
import json
import math

from clusterenv._cli._report import redact_json
from clusterenv._probe import MAX_TIMEOUT, ProbeError, ProbeReport, probe, valid_timeout
from clusterenv._safe import escape, redact_text

__all__ = ["probe_command", "timeout_option"]


def timeout_option(text: str) -> float:
    """``--timeout``: what :func:`~clusterenv._probe.valid_timeout` accepts."""
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
    try:
        result = probe(timeout=timeout, backend=backend)
    except ProbeError as error:
        if error.report is not None:  # rank 0: the table first, then the verdict
            _show(error.report, every_row, as_json)
        raise
    if result.rows:
        _show(result, every_row, as_json)
        if backend and not as_json:
            spec = result.spec
            print(f"{backend}: init_process_group and all_reduce over {spec.world_size} ranks OK")
    return 0


def _show(result: ProbeReport, every_row: bool, as_json: bool) -> None:
    if as_json:
        print(json.dumps(redact_json(result.to_json()), indent=2))
    else:
        print(escape(redact_text(result.table(every_row=every_row))))
