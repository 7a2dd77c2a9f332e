"""Run inside every task of a real launch: write one JSON record with the task's launcher
variables, its CPU affinity (what the CPU probe saw, so a replay can give it back) and what
``detect_environment()`` made of them, into the folder given as the first argument (or to
stdout)."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import Any

# Run as a script by srun/torchrun/mpirun: make the repository root importable.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import clusterenv
from clusterenv._capture import launcher_variables
from clusterenv._cpu import probe_cpus


def main() -> None:
    env = launcher_variables(os.environ)
    result: dict[str, Any]
    try:
        result = {"spec": clusterenv.detect_environment().model_dump(mode="json")}
    except clusterenv.ClusterEnvError as error:
        result = {"error": type(error).__name__, "message": str(error)}
    record = json.dumps({"env": env, "cpus": probe_cpus(), **result}, sort_keys=True)
    if len(sys.argv) > 1:  # one file per task: the launcher's merged stdout may interleave
        with tempfile.NamedTemporaryFile("w", dir=sys.argv[1], suffix=".json", delete=False) as f:
            f.write(record)
    else:
        print(record, flush=True)


if __name__ == "__main__":
    main()
