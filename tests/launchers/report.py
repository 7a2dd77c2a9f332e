"""Run inside every task of a real launch: write one JSON record with the task's launcher
variables, its CPU affinity (what the CPU probe saw, so a replay can give it back) and what
``detect_environment()`` made of them, into the folder given as the first argument (or to
stdout).

``--torch`` adds the launcher's own truth: the rank and world size torch.distributed gets
from ``init_process_group("gloo")`` in this task (as DeepSpeed's and accelerate's users
call it), or from the process group the framework already made (Ray Train).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from datetime import timedelta
from typing import Any

# Run as a script by srun/torchrun/mpirun: make the repository root importable.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import clusterenv
from clusterenv._diagnosis.capture import launcher_variables
from clusterenv._engine.detect import launch_inputs
from clusterenv._node.container import container_runtime
from clusterenv._node.cpu import probe_cpus

#: Variables the launch line sets from the launcher's own answers: CE_TRUTH_NODE=1 -> "node".
TRUTH = "CE_TRUTH_"


def torch_truth() -> dict[str, int]:
    """This task's rank and world size as torch.distributed sees them."""
    import torch.distributed as dist  # noqa: PLC0415 - only for --torch

    if dist.is_initialized():
        return {"rank": dist.get_rank(), "world_size": dist.get_world_size()}
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    try:
        return {"rank": dist.get_rank(), "world_size": dist.get_world_size()}
    finally:
        dist.barrier()
        dist.destroy_process_group()


def record(out: str | None, truth: bool = False) -> None:
    """Write this task's record into folder ``out`` (stdout where ``None``)."""
    env = launcher_variables(os.environ)
    result: dict[str, Any]
    try:
        result = {"spec": clusterenv.detect_environment().model_dump(mode="json")}
    except clusterenv.ClusterEnvError as error:
        result = {"error": type(error).__name__, "message": str(error)}
    if truth:
        result["torch"] = torch_truth()
    # A launcher's own answers about this task, asked by the launch line (Flux's taskmap).
    told = {k[len(TRUTH) :].lower(): v for k, v in os.environ.items() if k.startswith(TRUTH)}
    if told:
        result["truth"] = told
    # What a replay must give back: the host files read (Grid Engine's PE_HOSTFILE) and the
    # launcher's answers (Flux's taskmap).
    files, answers = launch_inputs(os.environ)
    if files:
        result["files"] = files
    if any(answers.values()):
        result["answers"] = {command: text for command, text in answers.items() if text}
    # What the machine tells that findings use (the container this task runs in).
    runtime = container_runtime(os.environ)
    if runtime:
        result["machine"] = {"container": runtime}
    line = json.dumps({"env": env, "cpus": probe_cpus(), **result}, sort_keys=True)
    if out is None:
        print(line, flush=True)
        return
    # One file per task: the launcher's merged stdout may interleave.
    with tempfile.NamedTemporaryFile("w", dir=out, suffix=".json", delete=False) as file:
        file.write(line)


def main() -> None:
    # DeepSpeed's launcher adds --local_rank=N in front of the script's own arguments.
    args = [arg for arg in sys.argv[1:] if not arg.startswith("--")]
    record(args[0] if args else None, truth="--torch" in sys.argv)


if __name__ == "__main__":
    main()
