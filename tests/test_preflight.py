"""The pre-flight check (issue 39): silent on a correct launch, each warning printed once on
the rank that can tell, a certain hang raised on every rank, ``CLUSTERENV_STRICT=1`` and
``CLUSTERENV_PREFLIGHT=0``; and the adapters run it before anything can hang."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from pytest_mock import MockerFixture

import clusterenv
from clusterenv import PreflightError, detect_environment
from clusterenv._diagnosis import preflight as preflight_module
from clusterenv._node.names import lookup_patiently
from clusterenv.testing import slurm_env, torchrun_env
from tests.envs import HERE, clusterenv_command

#: An address no name service resolves (RFC 6761), for "does not resolve on this node".
NOWHERE = "no-such-host.invalid"


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with nothing printed yet in this process, and the whole check."""
    monkeypatch.setattr(preflight_module, "_printed", set())
    monkeypatch.delenv("CLUSTERENV_PREFLIGHT")


def check(env: dict[str, str]) -> list[str]:
    return [finding.id for finding in clusterenv.preflight(detect_environment(env), env)]


def test_a_correct_launch_is_silent(capsys: pytest.CaptureFixture[str]) -> None:
    for env in (
        dict(
            slurm_env(nodes=2, nodelist=HERE, tasks_per_node=2, procid=0), MASTER_ADDR="127.0.0.1"
        ),
        dict(slurm_env(nodes=1, tasks_per_node=4, procid=3, gpus_per_node=4)),
        dict(torchrun_env(1, 2, rank=1)),
        dict(slurm_env(step="batch", nodes=2)),  # the batch step: a note, not a warning
    ):
        assert check(env) == []
    assert capsys.readouterr().err == ""


def test_a_warning_prints_once_on_rank_zero(capsys: pytest.CaptureFixture[str]) -> None:
    env = dict(slurm_env(nodes=1, tasks_per_node=2, procid=0, cpus_per_task=2))
    env["OMP_NUM_THREADS"] = "16"
    assert check(env) == ["omp-oversubscribed"]
    assert check(env) == ["omp-oversubscribed"]  # an adapter called twice
    err = capsys.readouterr().err
    assert err.count("[omp-oversubscribed]") == 1
    assert "clusterenv: warning [omp-oversubscribed]" in err
    assert "export OMP_NUM_THREADS=2" in err
    other = dict(env, SLURM_PROCID="1", SLURM_LOCALID="1")
    assert check(other) == ["omp-oversubscribed"]  # found, not printed: rank 0 said it
    assert capsys.readouterr().err == ""


def test_a_node_finding_prints_on_each_nodes_first_rank(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Task 2 is local rank 0 of node 1: what its node lacks, only it can say.
    env = dict(
        slurm_env(nodes=2, nodelist=HERE, tasks_per_node=2, procid=2), MASTER_ADDR="127.0.0.1"
    )
    env["NCCL_SOCKET_IFNAME"] = "ib-not-here9"
    assert check(env) == ["interface-missing"]
    assert "[interface-missing]" in capsys.readouterr().err
    assert check(dict(env, SLURM_PROCID="3", SLURM_LOCALID="1")) == ["interface-missing"]
    assert capsys.readouterr().err == ""


def test_a_certain_hang_raises_on_every_rank(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for procid in (0, 2):  # the first rank of each node, each a process of its own
        monkeypatch.setattr(preflight_module, "_printed", set())
        env = dict(
            slurm_env(nodes=2, nodelist=HERE, tasks_per_node=2, procid=procid), MASTER_ADDR=NOWHERE
        )
        with pytest.raises(PreflightError) as raised:
            check(env)
        text = str(raised.value)
        assert "main-address-unresolved" in text
        assert NOWHERE in text
        assert "export MASTER_ADDR" in text
        assert "CLUSTERENV_PREFLIGHT=0" in text
    assert capsys.readouterr().err.count("[main-address-unresolved]") == 2  # each node's


def test_strict_fails_on_warnings_and_the_opt_out_skips(
    capsys: pytest.CaptureFixture[str],
) -> None:
    env = dict(slurm_env(nodes=1, tasks_per_node=2, procid=0, cpus_per_task=2))
    env["OMP_NUM_THREADS"] = "16"
    with pytest.raises(PreflightError, match="CLUSTERENV_STRICT"):
        check(dict(env, CLUSTERENV_STRICT="1"))
    assert check(dict(env, CLUSTERENV_STRICT="0")) == ["omp-oversubscribed"]
    capsys.readouterr()
    hang = dict(
        slurm_env(nodes=2, nodelist=HERE, procid=0), MASTER_ADDR=NOWHERE, CLUSTERENV_PREFLIGHT="0"
    )
    assert check(hang) == []
    assert capsys.readouterr().err == ""


def test_the_lightning_adapter_runs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("lightning")  # clusterenv.lightning raises its own error without it
    import clusterenv.lightning as cl  # noqa: PLC0415

    for name, value in slurm_env(nodes=2, nodelist=HERE, tasks_per_node=1, procid=1).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("MASTER_ADDR", NOWHERE)
    with pytest.raises(PreflightError, match="main-address-unresolved"):
        cl.trainer_kwargs(package="lightning")
    monkeypatch.setenv("CLUSTERENV_PREFLIGHT", "0")
    assert cl.trainer_kwargs(package="lightning")["num_nodes"] == 2


def test_the_torch_adapter_stops_before_the_process_group(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("torch")  # clusterenv.torch raises its own error without it
    import clusterenv.torch as ct  # noqa: PLC0415

    dist = pytest.importorskip("torch.distributed")

    for name, value in slurm_env(nodes=2, nodelist=HERE, tasks_per_node=1, procid=1).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("MASTER_ADDR", NOWHERE)
    with pytest.raises(PreflightError, match="main-address-unresolved"):
        ct.init_process_group(timeout=1)
    assert not dist.is_initialized()


def test_the_jax_adapter_stops_before_initialize(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("jax")  # clusterenv.jax raises its own error without it
    import clusterenv.jax as cj  # noqa: PLC0415

    spec = detect_environment(
        dict(slurm_env(nodes=2, nodelist=HERE, procid=1), MASTER_ADDR=NOWHERE)
    )
    with pytest.raises(PreflightError, match="main-address-unresolved"):
        cj.initialize(spec)


def test_clusterenv_run_stops_with_one_line(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("print('trained')\n")
    env = dict(slurm_env(nodes=2, nodelist=HERE, tasks_per_node=1, procid=1), MASTER_ADDR=NOWHERE)
    result = clusterenv_command("run", str(script), env=env, timeout=110)
    assert result.returncode == 2, result.stderr
    assert "trained" not in result.stdout
    assert "main-address-unresolved" in result.stderr
    assert "Traceback" not in result.stderr


def test_inspect_honours_clusterenv_strict(tmp_path: Path) -> None:
    env = dict(slurm_env(nodes=1, tasks_per_node=2, procid=0, cpus_per_task=2))
    env["OMP_NUM_THREADS"] = "16"
    assert clusterenv_command("inspect", env=env, timeout=60).returncode == 0
    strict = dict(env, CLUSTERENV_STRICT="1")
    assert clusterenv_command("inspect", env=strict, timeout=60).returncode == 1


@pytest.mark.parametrize(("nodes", "words"), [(2, "error [spawned-child]"), (1, "warning")])
def test_multiprocessing_copies_of_a_rank_are_named(nodes: int, words: str, tmp_path: Path) -> None:
    """A process started with a Slurm task's variables (from the builders) starts two
    children with multiprocessing, as mp.spawn does: each child's pre-flight names it."""
    env = {
        "PATH": "/usr/bin:/bin",
        **slurm_env(nodes=nodes, procid=0),
        "MASTER_ADDR": "127.0.0.1",
    }
    script = Path(__file__).parent / "launchers" / "spawn_children.py"
    result = subprocess.run(
        [sys.executable, str(script), str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    records = [json.loads(path.read_text()) for path in tmp_path.glob("*.json")]
    assert len(records) == 2, result.stderr
    assert result.stderr.count(words) == 2, result.stderr
    for record in records:
        if nodes > 1:
            assert "spawned-child" in record["error"]
        else:
            assert record["preflight"] == ["spawned-child"]


def _answer(error: BaseException) -> Any:
    def ask(*_: object) -> list[Any]:
        raise error

    return ask


@pytest.mark.parametrize(
    ("said", "level"),
    [
        (socket.gaierror(socket.EAI_NONAME, "Name or service not known"), "error"),
        (socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution"), "warning"),
        (TimeoutError("the name service did not answer in time"), "warning"),
    ],
)
def test_only_a_definitive_answer_stops_a_rank(
    said: BaseException, level: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 47: a slow name service (a timeout, EAI_AGAIN) is a warning that says so, and
    the rank trains; only 'no such name' is an error."""
    monkeypatch.setattr(preflight_module, "lookup_patiently", _answer(said))
    env = dict(slurm_env(nodes=2, nodelist=HERE, procid=0), MASTER_ADDR="rank0.example")
    if level == "error":
        with pytest.raises(PreflightError, match="main-address-unresolved"):
            check(env)
        return
    assert check(env) == ["main-address-lookup-slow"]


def test_a_temporary_failure_is_asked_again_within_the_budget() -> None:
    answers: list[BaseException | list[Any]] = [
        socket.gaierror(socket.EAI_AGAIN, "try again"),
        socket.gaierror(socket.EAI_AGAIN, "try again"),
        [(socket.AF_INET, ("198.18.0.1", 29500))],
    ]
    pauses: list[float] = []

    def ask(*_: object) -> Any:
        answer = answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    deadline = time.monotonic() + 3.0
    found = lookup_patiently("rank0", 29500, deadline, sleep=pauses.append, ask=ask)
    assert found == [(socket.AF_INET, ("198.18.0.1", 29500))]
    assert len(pauses) == 2
    assert all(0 < pause <= 0.5 for pause in pauses)
    with pytest.raises(socket.gaierror):  # a definitive answer is not asked again
        lookup_patiently("x", 1, deadline, sleep=pauses.append, ask=_answer(
            socket.gaierror(socket.EAI_NONAME, "no")
        ))  # fmt: skip
    assert len(pauses) == 2


def test_a_mock_of_a_multi_node_launch_works_on_a_machine_outside_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 47: a user's unit test patches os.environ with a 2-node Slurm task (hosts
    cn001, cn002: not this machine) and builds the Trainer kwargs: the node facts (name
    service, interfaces, container) are not judged on a machine that is no node of the job."""
    pytest.importorskip("lightning")
    import clusterenv.lightning as cl  # noqa: PLC0415

    task = slurm_env(nodes=2, tasks_per_node=4, gpus_per_node=4, procid=5)
    with mock.patch.dict(os.environ, task):
        assert cl.trainer_kwargs(package="lightning")["num_nodes"] == 2
    with mock.patch.dict(os.environ, dict(task, SLURMD_NODENAME="cn002")):
        assert "main-address-unresolved" not in check(dict(os.environ))


def test_a_pytest_mock_of_a_multi_node_launch_works(mocker: MockerFixture) -> None:
    """The same with pytest-mock, as its users write it (``mocker.patch.dict``)."""
    pytest.importorskip("lightning")
    import clusterenv.lightning as cl  # noqa: PLC0415

    mocker.patch.dict(os.environ, slurm_env(nodes=2, tasks_per_node=4, gpus_per_node=4, procid=5))
    assert cl.trainer_kwargs(package="lightning")["num_nodes"] == 2


def test_clusterenv_ignore_silences_exactly_the_named_finding(
    capsys: pytest.CaptureFixture[str],
) -> None:
    env = dict(slurm_env(nodes=1, tasks_per_node=2, procid=0, cpus_per_task=2))
    env["OMP_NUM_THREADS"] = "16"
    assert check(dict(env, CLUSTERENV_IGNORE="omp-oversubscribed")) == []
    assert check(dict(env, CLUSTERENV_IGNORE="slurm.job-name")) == ["omp-oversubscribed"]
    hang = dict(slurm_env(nodes=2, nodelist=HERE, procid=0), MASTER_ADDR=NOWHERE)
    assert check(dict(hang, CLUSTERENV_IGNORE=" main-address-unresolved ")) == []
    with pytest.raises(clusterenv.ClusterEnvError, match="omp-oversubscribed"):
        check(dict(env, CLUSTERENV_IGNORE="omp-oversubscibed"))  # a typo lists the known ids
    capsys.readouterr()


def test_run_and_inspect_take_ignore(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("print('trained')\n")
    env = dict(slurm_env(nodes=2, nodelist=HERE, tasks_per_node=1, procid=1), MASTER_ADDR=NOWHERE)
    result = clusterenv_command(
        "run", "--ignore", "main-address-unresolved", str(script), env=env, timeout=110
    )
    assert result.returncode == 0, result.stderr
    assert "trained" in result.stdout
    typo = clusterenv_command("inspect", "--ignore", "no-such-id", env=env, timeout=110)
    assert typo.returncode == 2
    assert "Traceback" not in typo.stderr
    assert "no-such-id" in typo.stderr
