"""`clusterenv` / `python -m clusterenv`: see what this process got, and why.

Every input is someone else's: errors are one line and exit 2, never a traceback
(``--debug`` shows it), and nothing secret or raw-escaped reaches the terminal.

The top floor: may import every folder of the package."""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import traceback
from collections.abc import Sequence

from clusterenv._cli._check import check_command
from clusterenv._cli._env import env_text
from clusterenv._cli._envfile import EnvFile, Usage, capture, read_env_file
from clusterenv._cli._errors import internal_error, output_failed, say
from clusterenv._cli._parser import parser
from clusterenv._cli._probe import probe_command
from clusterenv._cli._render import markdown, text
from clusterenv._cli._report import inspect_report, live_report, machine_here
from clusterenv._cli._run import run
from clusterenv._core.ask import Asker, ask_command, recorded
from clusterenv._core.safe import escape, redact_text
from clusterenv._diagnosis.ignore import IGNORE, ignored, kept
from clusterenv._diagnosis.preflight import STRICT
from clusterenv.exceptions import ClusterEnvError

__all__ = ["main", "read_env_file"]


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] != ["run"]:
        return parser().parse_args(argv)
    # `run`'s own options come first; everything from the script (or after `--`) is the
    # script's, options included, so argparse (which would claim them) only documents `run`.
    rest, debug, module, ignore = argv[1:], False, None, []
    while rest and rest[0].startswith("-") and module is None:
        option = rest.pop(0)
        if option == "--":
            break
        if option == "--debug":
            debug = True
        elif option == "-m" and rest:
            module = rest.pop(0)
        elif option == "--ignore" and rest:
            ignore.append(rest.pop(0))
        elif option.startswith("--ignore="):
            ignore.append(option.removeprefix("--ignore="))
        else:  # -h, --help, or an unknown option: argparse says what is wrong
            return parser().parse_args(["run", option])
    return argparse.Namespace(command="run", module=module, target=rest, debug=debug, ignore=ignore)


def main(argv: Sequence[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):  # any locale or PYTHONIOENCODING: \xe9, not a crash
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    args = _parse(argv)
    try:
        code = _main(args)
        if sys.stdout is not None:  # None: started with stdout closed
            sys.stdout.flush()  # a full device fails here, not at exit (status 120)
        return code
    except KeyboardInterrupt:  # Ctrl-C, or the probe's SIGTERM: one line, the shell's 130
        if args.command == "run":
            raise  # the script's, as python shows it
        say("clusterenv: interrupted")
        return 130
    except OSError as error:
        return output_failed(error, args.debug)
    except (ClusterEnvError, Usage) as error:
        if args.debug and not isinstance(error, Usage):  # a usage error has no code to show
            traceback.print_exc()
        say(f"clusterenv: error: {escape(redact_text(str(error)))}")
        return 2
    except Exception as error:
        return internal_error(error, args.debug)


def _silenced(args: argparse.Namespace) -> frozenset[str]:
    """The findings ``--ignore`` and ``CLUSTERENV_IGNORE`` silence; `run` hands them on to
    its pre-flight check and to the ranks it starts."""
    silenced = ignored(os.environ, getattr(args, "ignore", ()))
    if args.command == "run" and silenced:
        os.environ[IGNORE] = ",".join(sorted(silenced))
    return silenced


def _main(args: argparse.Namespace) -> int:
    if sys.stdout is None and args.command != "run":
        raise Usage("standard output is closed; nothing could be shown")
    if args.command == "probe":
        return probe_command(args.timeout, args.backend, args.all, args.json)
    silenced = _silenced(args)  # an unknown id: one line, exit 2
    if args.command == "run":
        return run(args.module, args.target)
    if args.command == "check":
        return check_command(args.target, args.json, silenced, offline=args.offline)
    if args.command == "env":
        print(env_text(args.format, os.environ))
        return 0
    return _inspect_or_capture(args, silenced)


def _inspect_or_capture(args: argparse.Namespace, silenced: frozenset[str]) -> int:
    """`inspect` and `capture`: this process's report, or a recorded one's."""
    if args.task is not None and not args.env_file:
        raise Usage("--task N replays one task of a launch record: give it with --env-file")
    given = read_env_file(args.env_file, args.task) if args.env_file else None
    if args.command == "capture":
        if given is None:
            ask: Asker = ask_command
            given = EnvFile(dict(os.environ), {}, machine_here(os.environ), {})
        else:  # a replay: give back what was recorded, never ask this machine
            ask = recorded(given.answers)
        print(json.dumps(capture(given.env, given.machine, ask), indent=2))
        return 0
    if given is None:
        result = live_report(os.environ, args.lightning)
    else:
        result = inspect_report(
            given.env, given.files, given.machine, args.lightning, given.answers
        )
    result = result.model_copy(update={"warnings": kept(result.warnings, silenced)})
    if args.json:
        # json.dumps escapes non-ASCII as \u00eb: JSON under any PYTHONIOENCODING.
        print(json.dumps(result.model_dump(mode="json"), indent=2))
    else:
        print(markdown(result) if args.markdown else text(result))
    strict = args.strict or os.environ.get(STRICT, "").strip() == "1"
    return 1 if strict and any(w.level != "info" for w in result.warnings) else 0
