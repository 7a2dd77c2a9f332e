"""``spawn_children.py OUT``: a rank's process that starts two children with Python's
multiprocessing (as ``mp.spawn`` and Lightning's ``ddp_spawn`` do); each child records what it
detected and what the pre-flight check said, into folder OUT."""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import tempfile

# Run as a script by srun: make the repository root importable.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import clusterenv


def child(out: str) -> None:
    spec = clusterenv.detect_environment()
    said: dict[str, object]
    try:
        said = {"preflight": [finding.id for finding in clusterenv.preflight(spec)]}
    except clusterenv.PreflightError as error:
        said = {"error": str(error)}
    record = {"pid": os.getpid(), "spec": json.loads(spec.model_dump_json()), **said}
    with tempfile.NamedTemporaryFile("w", dir=out, suffix=".json", delete=False) as file:
        json.dump(record, file)


if __name__ == "__main__":
    context = multiprocessing.get_context("spawn")
    children = [context.Process(target=child, args=(sys.argv[1],)) for _ in range(2)]
    for process in children:
        process.start()
    for process in children:
        process.join()
