from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from clusterenv._cli import main, read_env_file
from tests.envs import batch_step, salloc_shell, srun_task, torchrun_worker


def inspect(tmp_path: Path, env: dict[str, str], *args: str) -> tuple[int, str]:
    path = tmp_path / "env.json"
    path.write_text(json.dumps(env))
    result = subprocess.run(
        [sys.executable, "-m", "clusterenv", "inspect", "--env-file", str(path), *args],
        capture_output=True,
        text=True,
    )
    return result.returncode, result.stdout + result.stderr


def test_report_names_the_source_of_each_field(tmp_path: Path) -> None:
    code, out = inspect(tmp_path, srun_task([2, 2], 3))
    assert code == 0
    assert "slurm (SLURM_JOB_ID is set" in out
    assert "SLURM_PROCID='3'" in out
    assert "cn[001-002] (2)" in out
    assert all(len(line) <= 80 for line in out.splitlines() if not line.startswith("warning"))
    assert "\033[" not in out  # no colour when not on a terminal


def test_json_has_spec_provenance_and_warnings(tmp_path: Path) -> None:
    code, out = inspect(tmp_path, batch_step(gpus_per_node=2), "--json")
    data = json.loads(out)
    assert code == 0
    assert data["spec"]["role"] == "batch"
    assert data["provenance"]["num_nodes"] == "SLURM_JOB_NUM_NODES='2'"
    assert any("srun" in warning for warning in data["warnings"])


@pytest.mark.parametrize(
    ("env", "fragment"),
    [
        (salloc_shell(), "salloc shell"),
        (srun_task([2, 1], 0), "--ntasks without --ntasks-per-node"),
        (srun_task([2, 2], 1, job_name="interactive"), "SLURM_JOB_NAME='interactive'"),
        (srun_task([4], 0, gpus_on_node=2), "Fix: --ntasks-per-node=2"),
        (srun_task([2], 0, gpus_on_node=2) | {"CUDA_VISIBLE_DEVICES": ""}, "none is visible"),
        (srun_task([2, 2], 0) | {"MASTER_PORT": "29500"}, "common default"),
        (srun_task([2, 2], 0) | torchrun_worker(0, nnodes=4), "double launch"),
    ],
)
def test_diagnostics_and_strict(tmp_path: Path, env: dict[str, str], fragment: str) -> None:
    assert inspect(tmp_path, env)[0] == 0
    code, out = inspect(tmp_path, env, "--strict")
    assert (code, fragment in out) == (1, True)


def test_clean_step_has_no_warnings(tmp_path: Path) -> None:
    """srun -N2 --ntasks-per-node=2 (which sets SLURM_NTASKS_PER_NODE in every task)."""
    env = srun_task([2, 2], 1) | {"SLURM_NTASKS_PER_NODE": "2"}
    assert inspect(tmp_path, env, "--strict")[0] == 0


def test_errors_exit_2_with_one_line_and_no_traceback(tmp_path: Path) -> None:
    code, out = inspect(tmp_path, srun_task([2, 2], 1) | {"SLURM_PROCID": "9"})
    assert code == 2
    assert out.startswith("clusterenv: error: ")
    assert "HINT:" in out
    assert "Traceback" not in out
    assert len(out.strip().splitlines()) == 1
    code, out = inspect(tmp_path, {}, "--env-file", str(tmp_path / "missing"))
    assert (code, "cannot read" in out) == (2, True)


def test_env_file_formats(tmp_path: Path) -> None:
    path = tmp_path / "env.txt"
    path.write_text("# printenv\nSLURM_JOB_ID=42\nexport MASTER_PORT='1234'\nnot a variable\n")
    assert read_env_file(str(path)) == {"SLURM_JOB_ID": "42", "MASTER_PORT": "1234"}


def test_capture_round_trips_through_inspect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in (srun_task([2, 2], 2) | {"AWS_SECRET": "x", "SLURM_AUTH_KEY": "s"}).items():
        monkeypatch.setenv(name, value)
    assert main(["capture"]) == 0
    captured = json.loads(capsys.readouterr().out)["env"]
    assert "AWS_SECRET" not in captured
    assert captured["SLURM_AUTH_KEY"] == "<redacted>"
    (tmp_path / "c.json").write_text(json.dumps({"env": captured}))
    assert main(["inspect", "--json", "--env-file", str(tmp_path / "c.json")]) == 0
    assert json.loads(capsys.readouterr().out)["spec"]["global_rank"] == 2


def test_help_explains_the_fields() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "clusterenv", "inspect", "--help"], capture_output=True, text=True
    )
    assert "devices/node" in result.stdout
    assert "exit status" in result.stdout
