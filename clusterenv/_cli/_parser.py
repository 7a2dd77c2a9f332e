"""The command line's parser: every command, its options, and its exit status (the help
docs/commands/ shows is generated from it)."""

from __future__ import annotations

import argparse
import sys
import textwrap
from typing import NoReturn

from clusterenv import __version__
from clusterenv._adapters.frameworks import DEFAULT_TIMEOUT
from clusterenv._cli._check import add_check
from clusterenv._cli._env import FORMATS
from clusterenv._cli._options import ignore_option
from clusterenv._cli._probe import timeout_option
from clusterenv._core.safe import escape
from clusterenv._core.spec import Source
from clusterenv._diagnosis.preflight import STRICT

__all__ = ["parser"]

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


def parser() -> argparse.ArgumentParser:
    top = _Parser(
        prog="clusterenv",
        description="What resources does this process have, and what is its place in the job?",
    )
    top.add_argument("--version", action="version", version=f"clusterenv {__version__}")
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
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
    ignore_option(inspect)
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
        epilog="exit status: 0 ok, 2 error (one line with the fix; --debug shows the traceback)",
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
        "failures.",
        epilog="exit status: 0 every rank arrived and all agree, 2 otherwise (each problem with "
        "its fix), 130 interrupted (Ctrl-C, or the launcher's SIGTERM)",
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
        epilog="exit status: the script's, as python gives it (1 for an exception it raises); "
        "2 when clusterenv refuses: no such script or module, a Trainer value that "
        "contradicts the allocation, a pre-flight error",
    )
    ignore_option(run, ", and reaches the ranks it starts")
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
        epilog="exit status: 0 ok, 2 error (not a rank, or a variable the launcher set "
        "differently)",
    )
    env.add_argument("--format", choices=FORMATS, default="shell", help="default: shell")
    check = add_check(commands)
    for sub in (inspect, capture, probe, run, env, check):
        sub.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    return top
