"""What the pages show a command print, printed by that command (the blocks of
``docs_lists.BLOCKS`` that are output, not lists): each help, the pre-flight's lines, rank 0's
probe table, ``clusterenv env``'s exports.

Each renders the way the command does — the same parser, the same printing code, on the
builders' launches — so a change to what a command prints fails ``tests/test_docs_lists.py``
until ``UPDATE_SNAPSHOTS=1`` writes it into the page.
"""

from __future__ import annotations

import contextlib
import io
import os
import socket
import traceback
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import clusterenv
from clusterenv import PreflightError, detect_environment
from clusterenv._check import check
from clusterenv._check.report import text as check_text
from clusterenv._cli._env import env_text
from clusterenv._cli._parser import parser
from clusterenv._probe import ProbeReport
from clusterenv.hostlist import count_hosts
from clusterenv.testing import slurm_env

__all__ = ["OUTPUTS"]

COMMANDS = ("inspect", "capture", "probe", "run", "env", "check")


def text_block(text: str) -> str:
    return f"```text\n{text.rstrip()}\n```"


def checked(script: str) -> str:
    """`clusterenv check docs/SCRIPT --offline`, as run from the repository's root."""
    report = check(os.path.join(os.path.dirname(__file__), "..", "docs", script), {})
    return text_block(check_text(report.model_copy(update={"script": f"docs/{script}"})))


@contextlib.contextmanager
def _columns(width: int) -> Iterator[None]:
    """argparse wraps to the terminal: a fixed width for the pages."""
    with mock.patch.dict(os.environ, {"COLUMNS": str(width)}):
        yield


def command_help(name: str) -> Callable[[], str]:
    def render() -> str:
        with _columns(100):
            top = parser()
            for action in top._actions:
                choices: Any = getattr(action, "choices", None)
                if isinstance(choices, dict) and name in choices:
                    return text_block(choices[name].format_help())
        raise AssertionError(f"no command {name}")

    return render


def _preflight_output(env: dict[str, str], *, unresolved: bool = False) -> str:
    """Standard error of ``clusterenv.preflight()`` in a process with ``env``, as Python
    ends it when the check raises: the exception's last traceback line."""
    err = io.StringIO()
    failed: list[str] = []
    nxdomain = socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    lookup = mock.patch("clusterenv._diagnosis.preflight.lookup_patiently", side_effect=nxdomain)
    on_a_node = mock.patch("clusterenv._diagnosis.preflight.on_a_node", return_value=True)
    with (
        mock.patch("clusterenv._diagnosis.preflight._printed", set()),
        lookup if unresolved else contextlib.nullcontext(),
        on_a_node if unresolved else contextlib.nullcontext(),
        contextlib.redirect_stderr(err),
    ):
        try:
            clusterenv.preflight(detect_environment(env), env)
        except PreflightError as error:
            failed = traceback.format_exception_only(error)
    return text_block(err.getvalue() + "".join(failed))


def preflight_warning() -> str:
    """Two ranks with 2 CPUs each, told to run 16 OpenMP threads each."""
    env = dict(slurm_env(nodes=1, tasks_per_node=2, procid=0, cpus_per_task=2))
    return _preflight_output(dict(env, OMP_NUM_THREADS="16"))


def preflight_error() -> str:
    """Rank 1 of two nodes, on a node whose name service does not know rank 0's node."""
    return _preflight_output(dict(slurm_env(nodes=2, procid=1)), unresolved=True)


def lightning_refusal() -> str:
    """What ``clusterenv run`` prints when anemoi's default (1 device) meets a 2-rank torchrun."""
    import clusterenv.lightning as cl  # noqa: PLC0415 - imports Lightning
    from clusterenv.testing import torchrun_env  # noqa: PLC0415

    spec = detect_environment(dict(torchrun_env(1, 2, rank=0)), gpu_probe=tuple)
    try:
        cl.trainer_kwargs(spec, devices=1, package="lightning")
    except clusterenv.ClusterEnvError as error:
        return text_block(f"clusterenv: error: {error}")
    raise AssertionError("anemoi's default of 1 device passed under 2 ranks")


def probe_table(
    nodelist: str, per_node: int, gpus: int | None, via: Callable[[int], str], **report: Any
) -> str:
    """Rank 0's table once every rank of ``srun -w nodelist --ntasks-per-node per_node`` said
    hello, each through the interface and address ``via(node)``."""

    def task(rank: int) -> clusterenv.ResourceSpec:
        launch = slurm_env(
            nodes=count_hosts(nodelist), tasks_per_node=per_node, procid=rank,
            nodelist=nodelist, gpus_per_node=gpus,
        )  # fmt: skip
        return detect_environment(dict(launch), gpu_probe=tuple)

    spec = task(0)
    rows = [
        {
            "rank": rank,
            "host": ranked.hostnames[ranked.node_rank],
            "node": ranked.node_rank,
            "local": ranked.local_rank,
            "gpus": list(ranked.visible_devices),
            "status": "listening" if rank == 0 else "connected",
            "from": via(ranked.node_rank),
        }
        for rank, ranked in ((rank, task(rank)) for rank in range(spec.world_size))
    ]
    return text_block(ProbeReport(spec, rows, **report).table())


OUTPUTS: dict[tuple[str, str], Callable[[], str]] = {
    **{(f"docs/commands/{name}.md", "help"): command_help(name) for name in COMMANDS},
    ("docs/commands/env.md", "shell"): lambda: text_block(
        env_text("shell", dict(slurm_env(nodes=2, tasks_per_node=2, procid=3)))
    ),
    ("docs/commands/env.md", "torchrun"): lambda: text_block(
        env_text("torchrun", dict(slurm_env(nodes=2, tasks_per_node=1, procid=1, gpus_per_node=4)))
    ),
    ("docs/commands/check.md", "neural-lam"): lambda: checked(
        "examples/broken/neural-lam-readme.sbatch"
    ),
    ("docs/inspect.md", "preflight-warning"): preflight_warning,
    ("docs/integrations/anemoi.md", "refusal"): lightning_refusal,
    ("docs/errors.md", "preflight-error"): preflight_error,
    ("docs/commands/probe.md", "table"): lambda: probe_table(
        "cn[001-002]", 2, 2, lambda node: f"ib0 10.1.0.{node + 1}", through=("ib0",)
    ),
    ("docs/troubleshooting-network.md", "probe-table"): lambda: probe_table(
        "n[1-3]",
        1,
        None,
        lambda node: f"eth0 198.18.0.{node + 1}",
        through=("eth0",),
        addresses=("eth0 198.18.0.1", "ib0 198.19.0.1"),
    ),
}
