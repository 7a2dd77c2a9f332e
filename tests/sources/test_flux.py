"""Flux tasks, from the variables flux-environment(7) documents (FLUX_JOB_ID, FLUX_JOB_SIZE,
FLUX_JOB_NNODES, FLUX_TASK_RANK, FLUX_TASK_LOCAL_ID)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

import clusterenv.lightning as cl
from clusterenv import (
    ClusterEnvError,
    InconsistentEnvironmentError,
    MissingVariableError,
    detect_environment,
    explain_environment,
)
from clusterenv._cli._envfile import capture, read_env_file
from clusterenv._cli._report import inspect_report
from clusterenv._core.ask import MAX_ANSWER, ask_command, recorded
from clusterenv._engine.rules import PORT_BASE, PORT_SPAN, job_port
from clusterenv.testing import flux_env
from tests.available import require_modules
from tests.envs import detect, fields


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (
            flux_env(2, 4, 5, master_addr="n1"),
            {"num_nodes": 2, "devices_per_node": 4, "world_size": 8, "global_rank": 5}
            | {"local_rank": 1, "node_rank": 1, "master_addr": "n1"},
        ),
        (
            flux_env(1, 2, 1),
            {"num_nodes": 1, "devices_per_node": 2, "world_size": 2, "global_rank": 1}
            | {"local_rank": 1, "node_rank": 0, "master_addr": "127.0.0.1"},
        ),
    ],
    ids=["2x4", "one-node"],
)
def test_geometry(env: dict[str, str], expected: dict[str, Any]) -> None:
    expected = expected | {"source": "flux", "role": "rank", "hostnames": ()}
    assert fields(detect(env), expected) == expected


@pytest.mark.parametrize(
    ("env", "error", "words"),
    [
        # Where no flux command answers (dict(): the builder's answers left behind)
        (dict(flux_env(2, 2, 3)), MissingVariableError, "flux job taskmap --hostname=0"),
        (
            flux_env(2, 2, 1) | {"FLUX_JOB_SIZE": "3"},
            InconsistentEnvironmentError,
            "do not divide evenly",
        ),
    ],
    ids=["multi-node-no-addr", "uneven"],
)
def test_wrong_but_common_environments(env: dict[str, str], error: type[Any], words: str) -> None:
    with pytest.raises(error, match="HINT") as raised:
        detect(env)
    assert words in str(raised.value)


def test_ports_derive_from_the_job_id_in_every_rank() -> None:
    """Two jobs on one node must not meet on one port; all ranks of a job must agree."""
    ports = {detect(flux_env(1, 2, rank, job_id="f2Xb8GNp3")).master_port for rank in (0, 1)}
    assert len(ports) == 1
    assert ports != {detect(flux_env(1, 2, 0, job_id="f2Xb8GNp4")).master_port}
    assert job_port("4242.pbs01") == job_port("4242") == PORT_BASE + 4242
    assert all(PORT_BASE <= job_port(f"f{n}x") < PORT_BASE + PORT_SPAN for n in range(500))


def test_the_lightning_adapter_takes_flux_ranks() -> None:
    require_modules("lightning")
    kwargs = cl.trainer_kwargs(detect(flux_env(2, 4, 5, master_addr="n1")), package="lightning")
    assert (kwargs["num_nodes"], kwargs["devices"], kwargs["strategy"]) == (2, 4, "ddp")


JOB = "ƒ2Xb8GNp3"  # flux_env's job id
#: ``flux run -N2 -n4 --taskmap=manual:[[0,1,1,1],[1,1,2,1],[0,1,1,1]]``: ranks 0 and 3 on
#: node 0, 1 and 2 on node 1; rank 0's host answered by Flux.
MANUAL = {
    f"flux job taskmap {JOB}": "[[0,1,1,1],[1,1,2,1],[0,1,1,1]]",
    f"flux job taskmap --hostname=0 {JOB}": "tioga12",
}


@pytest.mark.parametrize("main", [{}, {"MASTER_ADDR": "tioga12"}], ids=["flux", "exported"])
@pytest.mark.parametrize(("rank", "node"), [(0, 0), (1, 1), (2, 1), (3, 0)])
def test_flux_s_taskmap_gives_each_rank_its_node_and_rank_0_its_host(
    rank: int, node: int, main: dict[str, str]
) -> None:
    """With or without the MASTER_ADDR that Flux's hint exports (issue 47): the node comes
    from Flux's taskmap, never from the rank and the tasks per node."""
    env = flux_env(2, 2, rank) | {"FLUX_TASK_LOCAL_ID": str((0, 0, 1, 1)[rank])} | main
    spec = detect_environment(env, gpu_probe=lambda: (), ask=recorded(MANUAL))
    assert (spec.node_rank, spec.devices_per_node, spec.master_addr) == (node, 2, "tioga12")
    origins = explain_environment(env, gpu_probe=lambda: (), ask=recorded(MANUAL)).variables
    assert origins["node_rank"] == (f"flux job taskmap {JOB}",)


def test_an_uneven_taskmap_is_read_and_without_flux_refused() -> None:
    uneven = {f"flux job taskmap {JOB}": "[[0,1,2,1],[1,1,1,1]]"}  # flux run -N2 -n3
    env = {**flux_env(1, 3, 2), "FLUX_JOB_NNODES": "2", "FLUX_TASK_LOCAL_ID": "0"}
    env["MASTER_ADDR"] = "n1"
    spec = detect_environment(env, gpu_probe=lambda: (), ask=recorded(uneven))
    assert (spec.node_rank, spec.devices_per_node, spec.world_size) == (1, 1, 3)
    with pytest.raises(InconsistentEnvironmentError, match="flux job taskmap"):
        detect_environment(env, gpu_probe=lambda: (), ask=recorded({}))


@pytest.mark.parametrize(
    "taskmap",
    [
        "not json",
        '{"map": 1}',
        "[[0,1,1]]",
        "[[0,0,1,1]]",  # no nodes
        "[[0,1,-1,1]]",
        "[[0,2,2,1],[0,1,1,true]]",
        "[[0,2,2,1000000000000]]",  # claims far more tasks than the job has
        "[[5,1,4,1]]",  # a node the job does not have
        "[" * 100_000,
    ],
)
def test_a_hostile_taskmap_is_refused(taskmap: str) -> None:
    env = flux_env(2, 2, 1, master_addr="n1")
    ask = recorded({f"flux job taskmap {JOB}": taskmap})
    with pytest.raises(ClusterEnvError, match="taskmap"):
        detect_environment(env, gpu_probe=lambda: (), ask=ask)


def test_the_body_of_flux_batch_describes_the_instance() -> None:
    env = {"FLUX_ENCLOSING_ID": "fABC", "FLUX_URI": "local:///tmp/flux-x/local-0"}
    listed = {"flux resource list -s all -no {nnodes} {ngpus} {nodelist}": "2 8 tioga[12-13]"}
    spec = detect_environment(env, gpu_probe=lambda: (), ask=recorded(listed))
    assert (spec.source.value, spec.role.value, spec.num_nodes) == ("flux", "batch", 2)
    assert (spec.devices_per_node, spec.world_size, spec.hostnames) == (
        4,
        8,
        ("tioga12", "tioga13"),
    )
    assert (spec.master_addr, spec.job_id) == ("tioga12", "fABC")
    with pytest.raises(InconsistentEnvironmentError, match="FLUX_ENCLOSING_ID"):
        detect_environment(env, gpu_probe=lambda: (), ask=recorded({}))


def test_a_flux_command_that_hangs_or_floods_is_no_answer() -> None:
    """The real asker: bounded in time and size, None for what is not an answer."""
    assert ask_command(("/nonexistent/flux", "job")) is None
    assert ask_command(("false",)) is None
    assert ask_command(("sh", "-c", f"head -c {MAX_ANSWER + 1} /dev/zero")) is None
    start = time.monotonic()
    assert ask_command(("sleep", "30")) is None
    assert time.monotonic() - start < 30
    assert ask_command(("echo", " [[0,2,2,1]] ")) == "[[0,2,2,1]]"


def test_a_capture_records_flux_s_answers_and_a_replay_runs_nothing(tmp_path: Path) -> None:
    """`clusterenv capture` keeps what Flux answered; `inspect --env-file` gives it back (the
    reading machine has no Flux, and must not be asked) and shows where it came from."""
    task = flux_env(2, 2, 1, taskmap="cyclic", hosts=("tioga12", "tioga13"))
    path = tmp_path / "capture.json"
    path.write_text(json.dumps(capture(task, None, task.ask)))
    given = read_env_file(str(path))
    assert given.answers == task.answers
    report = inspect_report(given.env, given.files, given.machine, answers=given.answers)
    assert (report.spec.node_rank, report.spec.master_addr) == (1, "tioga12")
    origin = report.origins["node_rank"][0]
    assert (origin.variable, origin.value) == (f"flux job taskmap {JOB}", "[[0,2,1,2]]")
    with pytest.raises(MissingVariableError, match="flux job taskmap --hostname=0"):
        inspect_report(given.env, given.files, given.machine)  # a dump without the answers
