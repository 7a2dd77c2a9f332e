"""Replay every capture of a real launch (tests/data/captures/, `nox -s captures`):
detection must give what tests/data/expected/ says (what it gave inside the real task, or
since regenerated offline with UPDATE_SNAPSHOTS=1), and pass the same ground-truth checks,
on machines without Slurm, torchrun or MPI."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from clusterenv import ClusterEnvError, ResourceSpec, Role, detect_environment
from clusterenv._adapters.frameworks import env_variables
from clusterenv._core.ask import recorded
from clusterenv.testing import Launch
from tests.truth import (
    CAPTURES,
    CHECKS,
    EXPECTED,
    check_findings,
    check_slurm,
)

# Top level: Slurm 22.05 (Debian 12), torchrun, MPI; slurm-24.11/: Debian trixie's Slurm.
CAPTURE_FILES = sorted(CAPTURES.rglob("*.json"))
IDS = [str(path.relative_to(CAPTURES).with_suffix("")) for path in CAPTURE_FILES]


def test_every_capture_has_its_expected_specs() -> None:
    expected = sorted(path.relative_to(EXPECTED) for path in EXPECTED.rglob("*.json"))
    assert expected == [path.relative_to(CAPTURES) for path in CAPTURE_FILES]


def test_captures_exist() -> None:
    launchers = {json.loads(path.read_text())["launcher"] for path in CAPTURE_FILES}
    assert {"slurm", "torchrun", "torchrun+slurm", "openmpi", "mpich"} <= launchers
    assert {"deepspeed", "accelerate", "ray", "intel-mpi", "gridengine"} <= launchers
    versions = {
        capture["version"].split()[-1][:5]
        for capture in (json.loads(path.read_text()) for path in CAPTURE_FILES)
        if capture["launcher"] == "slurm"
    }
    assert versions == {"22.05", "24.11"}


def _detect(task: dict[str, Any]) -> ResourceSpec:
    """A recorded task detected as it was where it ran: its CPU probe's answer, the host
    files it read (Grid Engine's, PBS's) and its launcher's answers (Flux's); no GPU."""
    cpus: int | None = task.get("cpus")
    return detect_environment(
        task["env"],
        gpu_probe=lambda: (),
        cpu_probe=lambda: cpus,
        read_file=Launch({}, task.get("files", {})).read_file,
        ask=recorded(task.get("answers", {})),
    )


@pytest.mark.parametrize("path", CAPTURE_FILES, ids=IDS)
def test_replay(path: Path) -> None:
    capture: dict[str, Any] = json.loads(path.read_text())
    snapshot = EXPECTED / path.relative_to(CAPTURES)
    expected = json.loads(snapshot.read_text()) if snapshot.exists() else []
    records = []
    for task in capture["tasks"]:
        cpus: int | None = task.get("cpus")
        truth = {key: task[key] for key in ("torch", "truth") if key in task}
        # What the task read besides its variables: host files, its machine's facts.
        recorded_files = {key: task[key] for key in ("files", "machine") if key in task}
        try:
            spec = _detect(task).model_dump(mode="json")
        except ClusterEnvError as error:  # a launch refused where it ran (Flux's, for now)
            refused = {"error": type(error).__name__, "message": str(error)}
            records.append({"env": task["env"], "cpus": cpus, **refused, **truth, **recorded_files})
            continue
        records.append({"env": task["env"], "spec": spec, "cpus": cpus, **truth, **recorded_files})
    specs = [
        record.get("spec", {k: record.get(k) for k in ("error", "message")}) for record in records
    ]
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        snapshot.parent.mkdir(parents=True, exist_ok=True)
        snapshot.write_text(json.dumps(specs, indent=1, sort_keys=True) + "\n")
    else:
        assert specs == expected, f"{capture['command']}: detection changed ({snapshot})"
    check_findings(str(path.relative_to(CAPTURES).with_suffix("")), records)
    launcher = capture["launcher"]
    if launcher == "slurm":
        check_slurm(records, capture["hostnames"].__getitem__)
    elif launcher == "accelerate" and len(records) == 1:  # --cpu: one local process
        assert records[0]["spec"]["source"] == "local"
    else:
        CHECKS[launcher](records)


@pytest.mark.parametrize("path", CAPTURE_FILES, ids=IDS)
def test_what_env_exports_is_the_same_rank_again(path: Path) -> None:
    """`clusterenv env` in every rank of every real launch (uneven steps included): a
    process started with exactly the exported variables detects as the same rank of the
    same launch. Processes that are not ranks, and launches refused where they ran, have no
    set to export."""
    fields = ("global_rank", "world_size", "local_rank", "node_rank", "num_nodes", "master_addr")
    for task in json.loads(path.read_text())["tasks"]:
        try:
            spec = _detect(task)
        except ClusterEnvError:
            continue
        if spec.role is not Role.RANK:
            continue
        again = detect_environment(env_variables(spec, task["env"]), gpu_probe=lambda: ())
        assert [getattr(again, f) for f in fields] == [getattr(spec, f) for f in fields]
        assert again.master_port == spec.master_port


def test_the_proof_table_claims_only_what_the_captures_show() -> None:
    """docs/detection.md's "What is proven" table: every capture it names exists, and every
    launcher version recorded in a capture is the one it states."""
    text = (CAPTURES.parents[2] / "docs" / "detection.md").read_text()
    table = text[text.index("## What is proven") : text.index("## Slurm: three situations")]
    rows = [line.split("|") for line in table.splitlines() if line.startswith("| ")]
    named = {name for row in rows[1:] for name in re.findall(r"`([a-z0-9.-]+)`", row[-2])}
    assert named <= {path.stem for path in CAPTURE_FILES}, "a capture the table names is missing"
    for path in CAPTURE_FILES:
        recorded = json.loads(path.read_text()).get("version")
        if recorded:
            assert recorded.split()[-1] in table, f"{path.name}: {recorded} is not in the table"
