"""`clusterenv check`: read a job script before submission (see :mod:`clusterenv._check`)."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterable
from typing import TypeVar

from clusterenv._cli._envfile import Usage
from clusterenv._cli._options import ignore_option
from clusterenv.sources import script_scheduler

__all__ = ["add_check", "check_command"]

Parser = TypeVar("Parser", bound=argparse.ArgumentParser)


def add_check(commands: argparse._SubParsersAction[Parser]) -> Parser:
    """The `check` command's parser."""
    sub = commands.add_parser(
        "check",
        help="read a job script before submission: what every task will see, and its mistakes",
        description="Read the Slurm job script SCRIPT as sbatch would, predict what every task "
        "of each launch line (srun, torchrun, python) will see, and name the mistakes at their "
        "lines, before the job queues. `clusterenv check -- sbatch [OPTIONS] SCRIPT` reads "
        "OPTIONS as sbatch does: they (and SBATCH_* variables) win over the directives. "
        "Several SCRIPTs are checked one after the other (as the pre-commit hook "
        "clusterenv-check passes them).",
        usage="clusterenv check [-h] [--json] [--ignore ID] (SCRIPT... | -- sbatch [OPTIONS] "
        "SCRIPT)",
        epilog="exit status: 0 nothing above a note, 1 warnings or errors, 2 the script cannot "
        "be read",
    )
    sub.add_argument(
        "--json", action="store_true", help="print JSON (schema: docs/schema/check-v1.json)"
    )
    ignore_option(sub)
    sub.add_argument(
        "--offline",
        action="store_true",
        help="do not ask the Slurm configured here (sbatch --test-only) what it makes of the job",
    )
    sub.add_argument("target", nargs=argparse.REMAINDER, metavar="SCRIPT...")
    return sub


def check_command(
    target: list[str], as_json: bool, silenced: Iterable[str], *, offline: bool = False
) -> int:
    """Check the script ``target`` names; the exit status."""
    words = target[1:] if target[:1] == ["--"] else target
    argv: list[str] = []
    if words[:1] == ["sbatch"]:
        read = script_scheduler([]).options(words[1:], 0, "sbatch")
        argv = words[1 : len(words) - len(read.rest)]
        words = read.rest
        words = words[:1]  # the rest are the script's own arguments
    if not words:
        raise Usage("give the job script: clusterenv check SCRIPT (or -- sbatch [OPTIONS] SCRIPT)")
    if as_json and len(words) > 1:
        raise Usage("--json reads one job script; give one SCRIPT")
    # Loaded here: `inspect` and the other commands never pay for the job-script reader.
    from clusterenv._check import check  # noqa: PLC0415
    from clusterenv._check.report import text  # noqa: PLC0415

    code = 0
    for index, script in enumerate(words):
        report = check(script, os.environ, argv, silenced, ask=not offline)
        if as_json:
            print(json.dumps(report.model_dump(mode="json"), indent=2))
        else:
            print(("\n" if index else "") + text(report))
        if any(finding.level != "info" for finding in report.findings):
            code = 1
    return code
