"""A Slurm job script as sbatch reads it: the ``#SBATCH`` directives before the first
command (sbatch reads no further), the options of the command line and of the ``SBATCH_*``
input variables over them, and the findings its own text shows (a directive sbatch ignores
or refuses). Options are read as sbatch's getopt reads them, from the real option tables
of both releases (:mod:`._options`); srun's options the same way."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Mapping, Sequence

from clusterenv._core.finding import Finding
from clusterenv._core.safe import shorten
from clusterenv.exceptions import HostlistError
from clusterenv.hostlist import expand_hostlist
from clusterenv.sources._script import Directives, Option, Options
from clusterenv.sources.slurm._options import SBATCH, SRUN, Table, argument

__all__ = ["command_output", "directives", "options"]

_PREFIX = "#SBATCH"
#: ``# SBATCH``, ``#SABTCH``, ``#sbatch``: what a directive looks like but sbatch skips.
_LOOKALIKE = re.compile(r"#\s*([A-Za-z]{5,7})\s+-")
_LETTERS = sorted("SBATCH")


def _resolve(name: str, table: Table) -> str | None:
    """``name`` as getopt reads it: itself, or the one option it abbreviates."""
    if name in table:
        return name
    matches = [option for option in table if option.startswith(name)]
    return matches[0] if len(matches) == 1 else None


def _near(name: str, table: Table) -> str | None:
    """The stock option ``name`` misspells (one or two letters off), if any."""
    for option in table:
        if abs(len(option) - len(name)) <= 2 and len(name) >= 4 and _distance(option, name) <= 2:
            return option
    return None


def _distance(left: str, right: str) -> int:
    """Levenshtein distance, for short option names only."""
    previous = list(range(len(right) + 1))
    for i, a in enumerate(left, 1):
        current = [i]
        for j, b in enumerate(right, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b)))
        previous = current
    return previous[-1]


def options(
    words: Sequence[str], line: int, *, command: str = "sbatch", stop: bool = False
) -> Options:
    """``words`` read as ``command``'s options (``stop``: up to the first word that is not
    one, srun's command, kept in ``rest``)."""
    table = SBATCH if command == "sbatch" else SRUN
    found = Options()
    shorts = {short: name for name, (short, _) in table.items() if short}
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if not word.startswith("-") or word == "-":
            if stop:
                found.rest = list(words[index - 1 :])
                return found
            continue
        if word == "--":
            found.rest = list(words[index:])
            return found
        if word.startswith("--"):
            written, has_value, value = word[2:].partition("=")
            name = _resolve(written, table)
            if name is None:
                found.findings.append((line, _unknown(command, word, written, table)))
                continue
        else:
            name = shorts.get(word[1:2], "")
            if not name:
                found.findings.append((line, _unknown(command, word, word[1:2], table)))
                continue
            has_value, value = ("=", word[2:]) if len(word) > 2 else ("", "")
        if not has_value and argument(table, name) == "required" and index < len(words):
            value, has_value = words[index], "="
            index += 1
        given = value if has_value else None
        found.given[name] = Option(name, given, line, word)
    return found


def _unknown(command: str, word: str, written: str, table: Table) -> Finding:
    base = re.split(r"[^a-z0-9-]", written, maxsplit=1)[0]
    stock = _resolve(base, table) if base != written and base else None
    if stock is not None:  # --gres:gpu=4: a stock option with what getopt cannot read
        return Finding(
            id="slurm.directive-refused",
            message=f"{shorten(word)!r} is not {command} syntax: {command} refuses the job "
            f"(an option's value follows '=' or a space, as in --{stock}=...)",
            fix=f"write --{stock}={shorten(word[3 + len(base) :].replace('=', ':', 1) or '...')}"
            + (" (or --gpus-per-node=N)" if stock == "gres" else ""),
            level="error",
        )
    near = _near(written, table)
    if near is not None:
        return Finding(
            id="slurm.directive-near-miss",
            message=f"{shorten(word)!r} is no {command} option, but a near miss of --{near}: "
            f"{command} refuses the job unless a site plugin defines it",
            fix=f"write --{near}",
        )
    return Finding(
        id="slurm.directive-site-option",
        message=f"{shorten(word)!r} is no stock {command} option (22.05, 24.11): a site's "
        "plugin may define it (pyxis's --container-image, CSCS's --uenv)",
        fix="run `sbatch --test-only SCRIPT` on the cluster to see whether it accepts it",
        level="info",
    )


def directives(physical: Sequence[str], env: Mapping[str, str], argv: Sequence[str]) -> Directives:
    """The options sbatch takes from the script ``physical`` (its lines), the ``SBATCH_*``
    input variables of ``env`` and the command line ``argv``, later ones winning."""
    found = Directives()
    if not physical or not physical[0].startswith("#!"):
        found.findings.append((1, _no_shebang(physical)))
    first = 1 if physical and physical[0].startswith("#!") else 0
    het = False
    for index in range(first, len(physical)):
        text = physical[index].strip()
        if text.startswith(_PREFIX + " ") or text == _PREFIX:
            het = _directive(_split(text[len(_PREFIX) :]), index + 1, found, het)
        elif text.startswith("#") or not text:
            _lookalike(text, index + 1, found)
        else:
            found.body = index
            break
    else:
        found.body = len(physical)
    for index in range(found.body, len(physical)):
        if physical[index].lstrip().startswith(_PREFIX):
            found.findings.append((index + 1, _late(physical[index], found.body + 1)))
    if "array" in found.given:
        line = found.given["array"].line
        found.unread.append((line, "an array job: each task is predicted as the job itself"))
    for name, value in sorted(env.items()):
        option = name.removeprefix("SBATCH_").lower().replace("_", "-")
        if name.startswith("SBATCH_") and option in SBATCH and argument(SBATCH, option) != "none":
            found.given[option] = Option(option, value, 0, f"{name}={shorten(value)}")
    command_line = options(argv, 0)
    found.given |= command_line.given
    found.findings += command_line.findings
    return found


def _directive(words: list[str], line: int, found: Directives, het: bool) -> bool:
    """Read one directive's ``words`` into ``found``; whether a heterogeneous job's later
    component has begun (those are not read)."""
    if words[:1] in (["hetjob"], [":"], ["packjob"]) and not het:
        found.unread.append((line, "a heterogeneous job: only its first component is read"))
        return True
    if not het:
        read = options(words, line)
        found.given |= read.given
        found.findings += read.findings
    return het


def _split(text: str) -> list[str]:
    """A directive's words, quotes read as sbatch reads them, a ``#`` comment dropped."""
    try:
        return shlex.split(text, comments=True)
    except ValueError:  # an unclosed quote: the words as they stand
        return text.split("#", 1)[0].split()


def command_output(words: Sequence[str], env: Mapping[str, str]) -> str | None:
    """What ``scontrol show hostnames [LIST]`` prints in a job of ``env`` (one host per
    line; ``LIST`` defaults to ``SLURM_JOB_NODELIST``), ``None`` for any other command."""
    if list(words[:3]) != ["scontrol", "show", "hostnames"] or len(words) > 4:
        return None
    nodelist = words[3] if len(words) == 4 else env.get("SLURM_JOB_NODELIST", "")
    try:
        return "\n".join(expand_hostlist(nodelist)) if nodelist else None
    except HostlistError:
        return None


#: Seconds sbatch --test-only may take (a slurmctld that does not answer: no verdict).
TEST_ONLY_S = 15


def test_only(path: str, argv: Sequence[str]) -> str | None:
    """``sbatch --test-only ARGV PATH``'s verdict, where a Slurm is configured here (its
    slurm.conf, or ``SLURM_CONF``): when the job would start, or why it never would."""
    if shutil.which("sbatch") is None:
        return None
    if not (os.environ.get("SLURM_CONF") or os.path.exists("/etc/slurm/slurm.conf")):
        return None  # a laptop: sbatch would only ask DNS for a controller, for seconds
    try:
        done = subprocess.run(
            ["sbatch", "--test-only", *argv, path],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=TEST_ONLY_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (done.stderr.strip() or done.stdout.strip())[:2000] or None


#: What sbatch says when it was refused: the controller judged the job itself. Anything
#: else (no controller answered, no configuration) is no evidence about the job.
_REFUSED = ("Batch job submission failed", "invalid partition", "Invalid account")


def test_only_findings(verdict: str) -> list[Finding]:
    """A verdict of ``sbatch --test-only`` that refuses the job (certain: the controller
    judged it); a controller that did not answer says nothing."""
    if not any(refusal.lower() in verdict.lower() for refusal in _REFUSED):
        return []
    return [
        Finding(
            id="slurm.test-only-refused",
            message=f"sbatch --test-only on this cluster refuses the job: {shorten(verdict, 400)}",
            fix="change what it names (a partition, a count the nodes do not have) before "
            "submitting",
            level="error",
        )
    ]


def _no_shebang(physical: Sequence[str]) -> Finding:
    later = next((i + 1 for i, text in enumerate(physical) if text.startswith("#!")), None)
    where = f" (it is on line {later})" if later else ""
    return Finding(
        id="slurm.script-no-shebang",
        message=f"the first line is not '#!' and an interpreter{where}: sbatch refuses the "
        "script ('This does not look like a batch script')",
        fix="make #!/bin/bash the first line, before every #SBATCH",
        level="error",
    )


def _lookalike(text: str, line: int, found: Directives) -> None:
    """A comment that looks like a directive sbatch would read, but is not one."""
    match = _LOOKALIKE.match(text)
    if match is None or text.startswith("##") or (match.group(1) == "SBATCH" and text[1] != " "):
        return
    if (
        sorted(match.group(1).upper()) != _LETTERS
        and _distance(match.group(1).upper(), "SBATCH") > 1
    ):
        return
    found.findings.append(
        (
            line,
            Finding(
                id="slurm.directive-misspelt",
                message=f"{shorten(text)!r} looks like a directive, but sbatch reads only lines "
                "that begin with '#SBATCH' exactly: this one is ignored",
                fix="write #SBATCH, with no space after '#' (## disables a directive on purpose)",
            ),
        )
    )


def _late(text: str, body: int) -> Finding:
    return Finding(
        id="slurm.directive-after-command",
        message=f"{shorten(text.strip())!r} comes after the first command (line {body}): "
        "sbatch reads no directive after it, so this one is ignored",
        fix="move every #SBATCH line above the first command",
    )
