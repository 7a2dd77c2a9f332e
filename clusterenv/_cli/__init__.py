"""`clusterenv` / `python -m clusterenv`: see what this process got, and why.

Every input is someone else's: errors are one line and exit 2, never a traceback
(``--debug`` shows it), and nothing secret or raw-escaped reaches the terminal.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
import sys
import textwrap
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn

from clusterenv import __version__
from clusterenv._ask import Asker, ask_command, recorded
from clusterenv._cli._env import FORMATS, env_text
from clusterenv._cli._envfile import EnvFile, Usage, capture, read_env_file
from clusterenv._cli._errors import internal_error, output_failed, say
from clusterenv._cli._probe import probe_command, timeout_option
from clusterenv._cli._render import markdown, text
from clusterenv._cli._report import inspect_report, live_report, machine_here
from clusterenv._cli._run import run
from clusterenv._preflight import STRICT
from clusterenv._probe import DEFAULT_TIMEOUT
from clusterenv._safe import escape, redact_text
from clusterenv._spec import Source
from clusterenv.exceptions import ClusterEnvError

__all__ = ["main", "read_env_file"]

_SOURCES = textwrap.fill(
    f"the scheduler or launcher detected ({', '.join(source.value for source in Source)})",
    width=80,
    initial_indent=" " * 20,
    subsequent_indent=" " * 20,
).lstrip()
FIELDS = f"""fields:
  source            {_SOURCES}
  role              rank: one task of a launch; batch: an sbatch script body;
                    shell: the salloc shell; standalone: no launcher
  nodes             nodes in this step (or allocation)
  devices/node      ranks on this node: Lightning's `devices`
  world size        ranks in the whole job
  global/local/node rank of this process
  main address      host:port where rank 0 listens (MASTER_ADDR / MASTER_PORT)
  hosts             the node list, compressed, and how many
  GPU vendor        nvidia, amd or intel: whose visible-devices variable applies
  GPUs/node         GPUs allocated per node; visible: the ids this process may use
  CPUs/rank         CPUs each rank may use: the grant (--cpus-per-task) capped by
                    this process's CPU affinity (a DataLoader's num_workers + 1)

exit status: 0 ok (also with warnings), 1 warnings with --strict, 2 error"""


class _Parser(argparse.ArgumentParser):
    """argparse, whose error messages echo the arguments escaped: an unknown argument may
    carry control characters (a terminal title, a cursor move)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {escape(message)}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="clusterenv",
        description="What resources does this process have, and what is its place in the job?",
    )
    parser.add_argument("--version", action="version", version=f"clusterenv {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    inspect = commands.add_parser(
        "inspect",
        help="show the detected resources and where each value came from",
        description="Show what this process got and why. Run it as `srun clusterenv inspect` "
        "to see every task.",
        epilog=FIELDS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    output = inspect.add_mutually_exclusive_group()
    output.add_argument(
        "--json",
        action="store_true",
        help="print JSON (schema: docs/schema/inspect-v1.json): spec, origins, machine, "
        "network, warnings with ids",
    )
    output.add_argument(
        "--markdown", action="store_true", help="print Markdown, for pasting into an issue"
    )
    inspect.add_argument(
        "--env-file",
        metavar="PATH",
        help="read the environment from a file (env/printenv output, KEY=VALUE lines or JSON; "
        "'-' for stdin) instead of this process's",
    )
    inspect.add_argument(
        "--strict",
        action="store_true",
        help=f"exit 1 when there are warnings (not notes); {STRICT}=1 does the same",
    )
    inspect.add_argument(
        "--lightning",
        nargs="?",
        const="auto",
        choices=["auto", "lightning", "pytorch_lightning"],
        help="also show the Trainer kwargs of clusterenv.lightning (imports torch; default "
        "package: the first installed of lightning, pytorch_lightning)",
    )
    capture = commands.add_parser(
        "capture",
        help="print this process's launcher variables as JSON, for bug reports",
        description="Print the scheduler, launcher and CUDA variables of this process as JSON "
        "(secrets redacted), with the host files detection reads (PBS_NODEFILE, "
        "LSB_DJOB_HOSTFILE). `clusterenv inspect --env-file FILE` reads it back, on any "
        "machine.",
    )
    capture.add_argument("--env-file", metavar="PATH", help="capture from a file instead")
    for sub in (inspect, capture):
        sub.add_argument(
            "--task",
            type=int,
            metavar="N",
            help="with --env-file of a launch record (tests/data/captures/*.json): replay "
            "its task N",
        )
    probe = commands.add_parser(
        "probe",
        help="check that every rank reaches rank 0, before training starts",
        description="Run in every rank, like the training (`srun clusterenv probe`, "
        "`torchrun ... -m clusterenv probe`): a TCP rendezvous at the main address and port. "
        "Rank 0 prints one row per rank and the verdict; the other ranks print only "
        "failures. Exit 0 when every rank arrived and all agree, 2 otherwise.",
    )
    probe.add_argument(
        "--timeout",
        type=timeout_option,
        default=DEFAULT_TIMEOUT,
        metavar="S",
        help=f"give up after S seconds (default {DEFAULT_TIMEOUT:g})",
    )
    probe.add_argument(
        "--all", action="store_true", help="list every rank (default: the first 16, then counts)"
    )
    probe.add_argument("--json", action="store_true", help="print rank 0's report as JSON")
    probe.add_argument(
        "--backend",
        choices=["gloo"],
        help="then also init_process_group and all_reduce with torch.distributed",
    )
    run = commands.add_parser(
        "run",
        help="run a training script whose Lightning Trainer then follows the allocation",
        description="Run SCRIPT (or -m MODULE) with ARGS, like python would, with every "
        "lightning.pytorch / pytorch_lightning Trainer it builds receiving num_nodes, devices, "
        "strategy and the cluster-environment plugin from the detected allocation. Only "
        "values left at Lightning's defaults change (num_nodes=1 counts as a default); "
        "explicit values that contradict the allocation fail with exit 2. run's own options "
        "(--debug, -m) come before SCRIPT; everything after SCRIPT (or after --) is the "
        "script's. Example: srun clusterenv run -m neural_lam.train_model --config_path "
        "config.yaml",
        usage="clusterenv run [--debug] [-h] (-m MODULE | SCRIPT) [--] [ARGS ...]",
    )
    run.add_argument("-m", dest="module", metavar="MODULE", help="run a module, like python -m")
    run.add_argument("target", nargs=argparse.REMAINDER, metavar="SCRIPT ARGS")
    env = commands.add_parser(
        "env",
        help="print this rank's RANK, WORLD_SIZE, MASTER_ADDR... for other tools",
        description="Print the detected spec as what other tools read. shell (default): "
        'export lines of torch.distributed\'s env:// set, for `eval "$(clusterenv env)"` in '
        "every rank (srun bash -c ...); json and dotenv: the same set; torchrun: the options "
        "that start this node's ranks (`torchrun $(clusterenv env --format torchrun) "
        "train.py` in a one-node batch step, or in one task per node). Refuses a process "
        "that is not a rank, and any variable the launcher already set differently (naming "
        "both).",
    )
    env.add_argument("--format", choices=FORMATS, default="shell", help="default: shell")
    for sub in (inspect, capture, probe, run, env):
        sub.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    return parser


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] != ["run"]:
        return _parser().parse_args(argv)
    # `run`'s own options come first; everything from the script (or after `--`) is the
    # script's, options included, so argparse (which would claim them) only documents `run`.
    rest, debug, module = argv[1:], False, None
    while rest and rest[0].startswith("-") and module is None:
        option = rest.pop(0)
        if option == "--":
            break
        if option == "--debug":
            debug = True
        elif option == "-m" and rest:
            module = rest.pop(0)
        else:  # -h, --help, or an unknown option: argparse says what is wrong
            return _parser().parse_args(["run", option])
    return argparse.Namespace(command="run", module=module, target=rest, debug=debug)


def main(argv: Sequence[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):  # any locale or PYTHONIOENCODING: \xe9, not a crash
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    args = _parse(argv)
    previous = _sigterm_interrupts() if args.command == "probe" else None
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


def _main(args: argparse.Namespace) -> int:
    if sys.stdout is None and args.command != "run":
        raise Usage("standard output is closed; nothing could be shown")
    if args.command == "probe":
        return probe_command(args.timeout, args.backend, args.all, args.json)
    if args.command == "run":
        return run(args.module, args.target)
    if args.command == "env":
        print(env_text(args.format, os.environ))
        return 0
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
    if args.json:
        print(result.model_dump_json(indent=2))
    else:
        print(markdown(result) if args.markdown else text(result))
    strict = args.strict or os.environ.get(STRICT, "").strip() == "1"
    return 1 if strict and any(w.level != "info" for w in result.warnings) else 0
