"""torchrun / torch.distributed.run (torchelastic) workers.

Detected by ``TORCHELASTIC_RUN_ID`` alone: it is set for every rendezvous, including the
static one where its value is the literal ``none``. It wins over Slurm, because inside
an allocation torchrun, not srun, is what started this process.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from clusterenv._core.finding import Finding
from clusterenv._core.reader import EnvReader
from clusterenv._core.spec import ResourceSpec, Role, Source
from clusterenv.sources._detector import Detector, Fields, Gpus, Hints, Kind

if TYPE_CHECKING:
    import argparse

__all__ = ["DETECTOR", "TorchElasticDetector"]

_HINT = (
    "torchrun sets this for every worker; start the script with torchrun, or set "
    "CLUSTERENV_SOURCE to the launcher you actually use"
)


class TorchElasticDetector(Detector):
    source = Source.TORCHELASTIC
    kind = Kind.LAUNCHER
    name = "torchrun"
    reason = "TORCHELASTIC_RUN_ID is set: a torchrun worker"
    proof = (
        'live: torchrun (torch 2.13.0) standalone, static and c10d over two "nodes", inside '
        "srun, and across three emulated hosts (one agent per network namespace, DDP over "
        "gloo); accelerate 1.16.0 `--multi_gpu` (its torchrun path). `torch.distributed.launch`"
        " is torchrun underneath (it sets `TORCHELASTIC_*`)"
    )
    finding_ids = ("torchelastic.launcher-once-for-nodes", "torchelastic.node-rank-mismatch")
    variables = (
        "TORCHELASTIC_",
        *("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK"),
        *("GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE", "ROLE_NAME", "NODE_RANK"),
    )
    launch_keys = ("TORCHELASTIC_RUN_ID",)
    launcher = "torchrun"
    hints = Hints(
        num_nodes="change torchrun --nnodes",
        devices="change torchrun --nproc_per_node",
        uneven="start the same --nproc_per_node on every node",
        main=_HINT,
    )
    exports_main = True
    holds_main_port = True  # the agent's TCPStore

    def present(self, env: Mapping[str, str]) -> bool:
        return "TORCHELASTIC_RUN_ID" in env

    def read(self, reader: EnvReader, gpus: Gpus) -> Fields:
        def integer(field: str, name: str, minimum: int = 0) -> int:
            return reader.integer(field, name, hint=_HINT, minimum=minimum)

        local_world_size = integer("devices_per_node", "LOCAL_WORLD_SIZE", minimum=1)
        run_id = reader.env.get("TORCHELASTIC_RUN_ID", "").strip()
        if run_id not in ("", "none"):
            reader.note("job_id", "TORCHELASTIC_RUN_ID")
        return {
            "role": Role.RANK,
            "num_nodes": integer("num_nodes", "GROUP_WORLD_SIZE", minimum=1),
            "devices_per_node": local_world_size,
            "world_size": integer("world_size", "WORLD_SIZE", minimum=1),
            "global_rank": integer("global_rank", "RANK"),
            "local_rank": integer("local_rank", "LOCAL_RANK"),
            "node_rank": integer("node_rank", "GROUP_RANK"),
            "job_id": run_id if run_id not in ("", "none") else None,
        }

    def command_findings(self, spec: ResourceSpec, command: Sequence[str]) -> list[Finding]:
        """torchrun (or accelerate launch, torchrun underneath) waiting for several nodes but
        started once, in a job script (issue 47); or given a node rank that is not this
        process's node: under the static rendezvous two agents claim one node rank and
        wait for the missing one forever, before any worker starts (issue 39:
        ``--node_rank=$SLURM_NODEID`` expanded once, in the job script, is 0 on every node)."""
        parsed = _parse(tuple(command))
        if parsed is None:
            return []
        least = _least_nodes(parsed)
        if spec.role is Role.BATCH and least is not None and least > 1:
            return [
                Finding(
                    id="torchelastic.launcher-once-for-nodes",
                    message=f"{os.path.basename(command[0])} waits for at least {least} "
                    f"nodes, but it starts once, in the job script of {spec.num_nodes} "
                    "node(s), which runs on the first node only: no other node starts an agent, "
                    "so the rendezvous waits until it times out",
                    fix="start one launcher per node: srun --ntasks-per-node=1 torchrun "
                    "--nnodes=$SLURM_JOB_NUM_NODES --rdzv-backend=c10d ... (PBS: mpiexec "
                    "--ppn 1; Flux: flux run -N N --tasks-per-node=1)",
                    level="error",
                )
            ]
        given = _node_rank_option(parsed)
        if given is None or spec.source is self.source or spec.role not in _PER_NODE:
            return []
        option, rank, nodes = given
        if nodes != spec.num_nodes or rank == spec.node_rank:
            return []
        return [
            Finding(
                id="torchelastic.node-rank-mismatch",
                message=f"{option}={rank} on node {spec.node_rank} of {nodes}: two agents "
                f"claim node {rank} and wait for node {spec.node_rank} forever (a node index "
                "expanded once, in the job script, is the same on every node)",
                fix=f"let each node expand its own index, in single quotes (srun bash -c "
                f"'{option}=$SLURM_NODEID ...'), or use --rdzv-backend=c10d, which "
                "numbers the nodes itself",
                level="error",
            )
        ]

    def command_counts(self, command: Sequence[str]) -> tuple[str, str] | None:
        """torchrun's ``--nnodes`` and ``--nproc-per-node`` as its own parser reads them."""
        parsed = _parse(tuple(command))
        if parsed is None or not parsed[0].endswith("--node_rank"):  # accelerate: no count
            return None
        return str(parsed[1].nnodes), str(parsed[1].nproc_per_node)

    def command_main_address(self, command: Sequence[str]) -> tuple[str, str] | None:
        """torchrun's ``--rdzv-endpoint`` (or an explicit ``--master-addr``), accelerate
        launch's ``--main_process_ip``."""
        parsed = _parse(tuple(command))
        if parsed is None:
            return None
        args = parsed[1]
        endpoint = str(getattr(args, "rdzv_endpoint", "") or "")
        if endpoint:
            return "--rdzv-endpoint", _host(endpoint)
        if getattr(args, "main_process_ip", None):
            return "--main_process_ip", str(args.main_process_ip)
        if any(word.startswith(("--master-addr", "--master_addr")) for word in command):
            return "--master-addr", str(args.master_addr)
        return None


_PER_NODE = (Role.RANK, Role.NODE)


def _host(endpoint: str) -> str:
    """The host of a rendezvous endpoint: ``n1:29400`` -> ``n1``, ``[fd00::1]:29400`` ->
    ``fd00::1``."""
    if endpoint.startswith("["):
        return endpoint[1:].partition("]")[0]
    return endpoint.rpartition(":")[0] if endpoint.count(":") == 1 else endpoint


def _nodes_and_rank(option: str, args: Any) -> tuple[str, str]:
    """The node count and node rank a parsed torchrun or accelerate launch was given, as
    written (``"1:4"`` for an elastic count)."""
    if option.endswith("--node_rank"):
        return str(args.nnodes), str(args.node_rank)
    return str(args.num_machines), str(args.machine_rank)


def _node_rank_option(parsed: tuple[str, Any]) -> tuple[str, int, int] | None:
    """The node rank and node count that torchrun (``torchrun``, ``-m torch.distributed.run``)
    or ``accelerate launch`` will use, from :func:`_parse`; ``None`` for an elastic or c10d
    rendezvous."""
    option, args = parsed
    nodes, rank = _nodes_and_rank(option, args)
    if getattr(args, "rdzv_backend", "static") != "static" or getattr(args, "standalone", False):
        return None
    if not nodes.isdigit() or not rank.isdigit():  # "1:4": elastic
        return None
    return option, int(rank), int(nodes)


def _least_nodes(parsed: tuple[str, Any]) -> int | None:
    """The fewest nodes torchrun (``--nnodes=2``, elastic ``2:4``) or accelerate launch
    (``--num_machines``) waits for before any worker starts, from :func:`_parse`."""
    least = _nodes_and_rank(*parsed)[0].partition(":")[0]
    return int(least) if least.isdigit() and len(least) < 7 else None


#: torchrun as a command or as ``python -m``'s module; accelerate launch's module.
_TORCHRUN = ("torchrun", "torch.distributed.run")
_ACCELERATE = "accelerate.commands.launch"


@functools.lru_cache(maxsize=4)  # both findings and the main address read one parse
def _parse(command: tuple[str, ...]) -> tuple[str, Any] | None:
    """``command``'s arguments as its launcher's parser reads them (its output silenced, as
    for ``--help``: the launcher prints it itself)."""
    name = os.path.basename(command[0]) if command else ""
    launch = name == "accelerate" and list(command[1:2]) == ["launch"]
    if not launch and name not in (*_TORCHRUN, _ACCELERATE):
        return None  # not a launcher: no parser to build
    quiet = contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO())
    with quiet[0], quiet[1], contextlib.suppress(SystemExit, ImportError):
        if name in _TORCHRUN:
            return "torchrun --node_rank", _torchrun_parser().parse_args(command[1:])
        from accelerate.commands.launch import launch_command_parser  # noqa: PLC0415

        return "accelerate launch --machine_rank", launch_command_parser().parse_args(
            command[1 + launch :]
        )
    return None


def _torchrun_parser() -> argparse.ArgumentParser:
    """torchrun's own parser where torch is installed; else (`clusterenv check` on a laptop)
    the options that place its workers, read as torchrun reads them (torch 2.13's
    ``torch/distributed/run.py``), the rest kept unread."""
    import argparse  # noqa: PLC0415 - only a launcher's command line needs it

    try:
        from torch.distributed.run import get_args_parser  # noqa: PLC0415 - it will run
    except ImportError:
        pass
    else:
        return get_args_parser()
    parser = argparse.ArgumentParser(allow_abbrev=False)
    for names, default in _TORCHRUN_OPTIONS.items():
        parser.add_argument(
            *names, default=default, action=("store_true" if default is False else "store")
        )
    parser.add_argument("training_script")
    parser.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return parser


#: The options of torchrun that say where and how many workers start, with their defaults;
#: the others that take a value, so that the script is found after them.
_TORCHRUN_OPTIONS: dict[tuple[str, ...], object] = {
    ("--nnodes",): "1:1",
    ("--nproc-per-node", "--nproc_per_node"): "1",
    ("--node-rank", "--node_rank"): 0,
    ("--rdzv-backend", "--rdzv_backend"): "static",
    ("--rdzv-endpoint", "--rdzv_endpoint"): "",
    ("--rdzv-id", "--rdzv_id"): "none",
    ("--rdzv-conf", "--rdzv_conf"): "",
    ("--standalone",): False,
    ("--master-addr", "--master_addr"): "127.0.0.1",
    ("--master-port", "--master_port"): 29500,
    ("--max-restarts", "--max_restarts"): 0,
    ("--monitor-interval", "--monitor_interval"): 0.1,
    ("--start-method", "--start_method"): "spawn",
    ("--role",): "default",
    ("--log-dir", "--log_dir"): None,
    ("-r", "--redirects"): "0",
    ("-t", "--tee"): "0",
    ("--local-ranks-filter", "--local_ranks_filter"): "",
    ("--local-addr", "--local_addr"): None,
    ("--logs-specs", "--logs_specs"): None,
    ("--run-path", "--run_path", "-m", "--module", "--no-python", "--no_python"): False,
}


DETECTOR = TorchElasticDetector()
