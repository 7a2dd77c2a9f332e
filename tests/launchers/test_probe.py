"""`clusterenv probe` under real torchrun and srun, and in deliberately broken launches."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from clusterenv.testing import slurm_env
from tests.launchers.harness import Cluster, free_port, run

PROBE = "{python} -m clusterenv probe --timeout 20"
TORCHRUN = "{python} -m torch.distributed.run"


def table_ranks(stdout: str) -> list[int]:
    return sorted(
        int(line.split()[0]) for line in stdout.splitlines() if line[:5].strip().isdigit()
    )


@pytest.mark.torchrun
@pytest.mark.usefixtures("torchrun")
@pytest.mark.parametrize(
    ("command", "ranks", "nodes"),
    [
        (f"{TORCHRUN} --standalone --nproc_per_node=3 -m clusterenv probe", 3, 1),
        (
            " & ".join(
                f"{TORCHRUN} --nnodes=2 --node_rank={n} --nproc_per_node=2 "
                "--master_addr=127.0.0.1 --master_port={port} -m clusterenv probe"
                for n in (0, 1)
            )
            + "; wait",
            4,
            2,
        ),
        (f"{TORCHRUN} --standalone --nproc_per_node=2 -m clusterenv probe --backend gloo", 2, 1),
    ],
    ids=["torchrun-nproc3", "torchrun-2-nodes", "torchrun-gloo"],
)
def test_probe_succeeds_under_torchrun(
    tmp_path: Path, command: str, ranks: int, nodes: int
) -> None:
    result = run(command, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert table_ranks(result.stdout) == list(range(ranks)), "one row per rank, printed once"
    assert f"OK: {ranks} ranks on {nodes} node(s)" in result.stdout
    if "gloo" in command:
        assert "gloo: init_process_group and all_reduce over 2 ranks OK" in result.stdout


@pytest.mark.slurm
def test_probe_under_srun_reports_unresolvable_names_then_succeeds(
    tmp_path: Path, slurm_cluster: Cluster
) -> None:
    # The emulated node names do not resolve here: exactly what a broken DNS looks like.
    result = run(f"srun -N2 --ntasks-per-node=2 {PROBE}", tmp_path, slurm=slurm_cluster)
    assert result.returncode != 0
    assert "does not resolve" in result.stderr
    assert "'cn001' (from SLURM_STEP_NODELIST='cn[001-002]')" in result.stderr
    assert "export MASTER_ADDR" in result.stderr
    command = f"MASTER_ADDR=127.0.0.1 srun -N2 --ntasks-per-node=2 {PROBE}"
    result = run(command, tmp_path, slurm=slurm_cluster)
    assert result.returncode == 0, result.stderr[-3000:]
    assert table_ranks(result.stdout) == [0, 1, 2, 3]
    assert "OK: 4 ranks on 2 node(s)" in result.stdout


def probe_with(env: dict[str, str], timeout: float = 10) -> subprocess.Popen[str]:
    clean = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"), **env}
    return subprocess.Popen(
        [sys.executable, "-m", "clusterenv", "probe", "--timeout", str(timeout)],
        env=clean,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str]) -> tuple[int, str]:
    out, err = process.communicate(timeout=60)
    return process.returncode, out + err


def test_two_processes_claiming_rank_0_are_reported() -> None:
    """Two single-task runs, each rank 0 of a world of 2 (the double-launch case)."""
    env = slurm_env(nodes=1, tasks_per_node=2) | {
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
    }
    first = probe_with(env)
    second = probe_with(env)
    for code, out in (finish(first), finish(second)):
        assert code == 2
        assert "rank 0 is claimed by 2 processes" in out
        assert "1 rank(s) (1) never reached" in out
        assert "Traceback" not in out


def test_a_rank_0_stopped_for_a_second_still_meets_every_rank() -> None:
    """SIGSTOP then SIGCONT of rank 0 while 8 ranks connect: the ranks wait in its listen
    backlog or ask again, and all pass (issue 32: slow is not foreign)."""
    main = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}
    rank0 = probe_with(slurm_env(nodes=1, tasks_per_node=8) | main)
    port = int(main["MASTER_PORT"])  # srun holds no port: the probe listens on it
    for _ in range(200):  # until rank 0 listens
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    os.kill(rank0.pid, signal.SIGSTOP)
    others = [
        probe_with(slurm_env(nodes=1, tasks_per_node=8, procid=rank) | main) for rank in range(1, 8)
    ]
    time.sleep(1.5)
    os.kill(rank0.pid, signal.SIGCONT)
    for process in [rank0, *others]:
        code, out = finish(process)
        assert code == 0, out
        assert "foreign" not in out


def test_a_rank_without_rank_0_gives_up_in_time() -> None:
    env = slurm_env(nodes=1, tasks_per_node=2, procid=1) | {
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
    }
    code, out = finish(probe_with(env, timeout=1))
    assert code == 2
    assert "rank 1 on" in out
    assert "could not connect to rank 0 at 127.0.0.1" in out
    assert "within 1 s (last error: Connection refused)" in out
    assert "Traceback" not in out


def test_a_port_held_by_another_program_is_named() -> None:
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]

        def accept_and_drop() -> None:
            conn, _ = other.accept()
            conn.close()

        threading.Thread(target=accept_and_drop, daemon=True).start()
        env = slurm_env(nodes=1, tasks_per_node=2) | {
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
        }
        code, out = finish(probe_with(env, timeout=2))
    assert code == 2
    assert f"port {port} on 127.0.0.1 is in use by another program" in out
    assert "export MASTER_PORT" in out


@pytest.mark.parametrize(
    ("env", "words", "launcher"),
    [
        (slurm_env(nodes=2, step="batch"), "not one rank of a launch (role batch)", "srun"),
        ({"LSB_JOBID": "42", "LSB_MCPU_HOSTS": "h1 2 h2 2"}, "role batch", "jsrun"),
        # a workstation has no scheduler: torchrun, never srun
        ({"CUDA_VISIBLE_DEVICES": ""}, "role standalone", "torchrun --nproc_per_node=N -m"),
    ],
)
def test_a_process_that_is_not_a_rank_is_told_how_to_run_the_probe(
    env: dict[str, str], words: str, launcher: str
) -> None:
    code, out = finish(probe_with(env))
    assert code == 2
    assert words in out
    assert f"{launcher} clusterenv probe" in out
    assert bool(re.search(r"\bsrun\b", out)) == (launcher == "srun")


def test_a_single_rank_is_fine() -> None:
    code, out = finish(probe_with(slurm_env(nodes=1) | {"MASTER_PORT": str(free_port())}))
    assert code == 0, out
    assert "alone: a one-rank launch" in out
    assert "no port was opened" in out
