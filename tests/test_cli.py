from __future__ import annotations

import contextlib
import json
import os
import pty
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clusterenv import __version__, detect_environment
from clusterenv._cli import main, read_env_file
from clusterenv.testing import env_launch, kubeflow_env, mpich_env
from tests.available import HANG_GUARD_S, require_modules
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
    assert "why           SLURM_JOB_ID is set" in out
    assert "SLURM_PROCID='3'" in out
    assert "cn[001-002] (2)" in out
    assert all(len(line) <= 80 for line in out.splitlines())
    assert "\033[" not in out  # no colour when not on a terminal


def test_json_has_spec_provenance_and_warnings(tmp_path: Path) -> None:
    code, out = inspect(tmp_path, batch_step(gpus_per_node=2), "--json")
    data = json.loads(out)
    assert code == 0
    assert data["spec"]["role"] == "batch"
    assert data["origins"]["num_nodes"] == [{"variable": "SLURM_JOB_NUM_NODES", "value": "2"}]
    assert any("srun" in warning["fix"] for warning in data["warnings"])


@pytest.mark.parametrize(
    ("env", "fragment", "strict"),
    [
        (salloc_shell(), "note [submit-shell]", 0),  # what the process is: never a failure
        (salloc_shell(), "salloc shell", 0),
        (srun_task([2, 1], 0), "--ntasks without --ntasks-per-node", 1),
        (  # notes only (a literal main address: the report looks no name up)
            srun_task([2, 2], 1, job_name="interactive") | {"MASTER_ADDR": "127.0.0.1"},
            "note [slurm.job-name]: SLURM_JOB_NAME='interactive'",
            0,
        ),
        (srun_task([4], 0, gpus_on_node=2), "Fix: --ntasks-per-node=2", 1),
        (srun_task([2], 0, gpus_on_node=2) | {"CUDA_VISIBLE_DEVICES": ""}, "none is visible", 1),
        (srun_task([2, 2], 0) | {"MASTER_PORT": "29500"}, "common default", 1),
        (srun_task([2, 2], 0) | torchrun_worker(0, nnodes=4), "double launch", 1),
        (kubeflow_env(2, 1) | {"CUDA_VISIBLE_DEVICES": "0,1"}, "torchrun --nproc_per_node=2", 1),
        ({"LSB_JOBID": "42", "LSB_MCPU_HOSTS": "h1 4 h2 4"}, "`jsrun python train.py`", 0),
        (mpich_env(2, 1), "default port 29500; two such jobs on one node collide", 0),
    ],
)
def test_diagnostics_and_strict(
    tmp_path: Path, env: dict[str, str], fragment: str, strict: int
) -> None:
    """--strict fails on warnings; notes (what the process is) never fail it."""
    assert inspect(tmp_path, env)[0] == 0
    code, out = inspect(tmp_path, env, "--strict")
    assert (code, fragment in " ".join(out.split())) == (strict, True)  # warnings wrap at 80


def test_pbs_job_script_with_uneven_slots(tmp_path: Path) -> None:
    """inspect reads the real node file; 3 slots over 2 nodes cannot be even."""
    nodefile = tmp_path / "nodefile"
    nodefile.write_text("node01\nnode01\nnode02\n")
    code, out = inspect(tmp_path, {"PBS_JOBID": "77.pbs01", "PBS_NODEFILE": str(nodefile)})
    text = " ".join(out.split())
    assert code == 0
    assert "job script of a PBS job (job 77.pbs01): one process, not the ranks" in text
    assert "3 slots over 2 nodes is not the same number on every node" in text


def test_a_pbs_capture_carries_its_node_file_to_another_machine(tmp_path: Path) -> None:
    nodefile = tmp_path / "4242.pbs01"
    nodefile.write_text("node01\nnode01\nnode02\nnode02\n")
    env = tmp_path / "env.txt"
    env.write_text(f"PBS_JOBID=4242.pbs01\nPBS_NODEFILE={nodefile}\n")
    capture = subprocess.run(
        [sys.executable, "-m", "clusterenv", "capture", "--env-file", str(env)],
        capture_output=True,
        text=True,
    )
    assert json.loads(capture.stdout)["files"] == {str(nodefile): nodefile.read_text()}
    nodefile.unlink()  # the other machine has no such file
    code, out = inspect(tmp_path, json.loads(capture.stdout), "--json")
    assert code == 0, out
    assert json.loads(out)["spec"]["hostnames"] == ["node01", "node02"]


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
    assert read_env_file(str(path)) == ({"SLURM_JOB_ID": "42", "MASTER_PORT": "1234"}, {}, None, {})


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


@pytest.mark.parametrize(
    ("extra", "coloured"),
    [({}, True), ({"NO_COLOR": "1"}, False), ({"TERM": "dumb"}, False)],
)
def test_colour_only_on_a_terminal_without_no_color(
    tmp_path: Path, extra: dict[str, str], coloured: bool
) -> None:
    path = tmp_path / "env.json"
    path.write_text(json.dumps(srun_task([2, 2], 3)))
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")} | extra
    leader, follower = pty.openpty()  # the report (~1 KiB) fits the terminal's buffer
    subprocess.run(
        [sys.executable, "-m", "clusterenv", "inspect", "--env-file", str(path)],
        stdout=follower,
        env=env,
        timeout=HANG_GUARD_S,
    )
    os.close(follower)
    chunks = []
    with contextlib.suppress(OSError):  # EIO once everything written has been read
        while chunk := os.read(leader, 4096):
            chunks.append(chunk)
    os.close(leader)
    out = b"".join(chunks).decode()
    assert "SLURM_PROCID='3'" in out
    assert ("\033[" in out) is coloured


def test_help_explains_the_fields() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "clusterenv", "inspect", "--help"], capture_output=True, text=True
    )
    assert "devices/node" in result.stdout
    assert "exit status" in result.stdout


# -- snapshots of the human report --------------------------------------------------------

REPORTS = Path(__file__).parent / "data" / "reports"
SNAPSHOTS = {
    "srun-step": srun_task([2, 2], 3, gpus_on_node=2) | {"SLURM_NTASKS_PER_NODE": "2"},
    "batch-step": batch_step(ntasks_per_node=4, gpus_per_node=4),
    "torchrun": torchrun_worker(3, nnodes=2, run_id="exp7"),
    "local-cpu": {"CUDA_VISIBLE_DEVICES": ""},
    "local-gpus": {"CUDA_VISIBLE_DEVICES": "0,1"},
}


@pytest.mark.parametrize("name", sorted(SNAPSHOTS))
def test_report_snapshot(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The whole report, byte for byte; UPDATE_SNAPSHOTS=1 rewrites tests/data/reports/."""
    require_modules("lightning")
    path = tmp_path / "env.json"
    path.write_text(json.dumps(SNAPSHOTS[name]))
    main(["inspect", "--env-file", str(path), "--lightning", "lightning"])
    out = capsys.readouterr().out.replace(__version__, "{version}")
    snapshot = REPORTS / f"{name}.txt"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        REPORTS.mkdir(parents=True, exist_ok=True)
        snapshot.write_text(out)
    assert out == snapshot.read_text()
    assert all(len(line) <= 80 for line in out.replace("{version}", __version__).splitlines())


# -- secrets ----------------------------------------------------------------------------

SECRET = "s3cr3t-value-4242"
SECRET_WORDS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "KEY", "CREDENTIAL", "AUTH", "COOKIE")
SECRETS = {
    name: SECRET
    for word in (*SECRET_WORDS, "SESSION")
    for name in (word, f"SLURM_{word}", f"CUDA_{word}_ID", f"MY_{word.lower()}", f"OMPI_{word}")
}


@pytest.mark.parametrize(
    "env",
    [
        srun_task([2, 2], 3),
        batch_step(),
        torchrun_worker(1),
        {},
        srun_task([2], 0) | {"SLURM_PROCID": "7"},
    ],
    ids=["srun", "batch", "torchrun", "local", "error"],
)
@pytest.mark.parametrize(
    "args",
    [
        ["inspect"],
        ["inspect", "--json"],
        ["inspect", "--json", "--lightning", "lightning"],
        ["capture"],
    ],
    ids=["report", "json", "lightning", "capture"],
)
def test_secret_values_are_never_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], env: dict[str, str], args: list[str]
) -> None:
    if "--lightning" in args:
        require_modules("lightning")
    path = tmp_path / "env.txt"
    path.write_text("".join(f"{k}={v}\n" for k, v in (env | SECRETS).items()))
    main([*args, "--env-file", str(path)])
    out, err = capsys.readouterr()
    assert SECRET not in out + err
    if args == ["capture"]:
        captured = json.loads(out)["env"]
        assert captured["SLURM_TOKEN"] == "<redacted>"  # named, so a report shows it was set


# -- malformed input --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b'{"SLURM_JOB_ID": ', "not valid JSON"),
        (b"[1, 2]", "expected a JSON object"),
        (b"\xff\xfe\x00binary", "not UTF-8"),
    ],
    ids=["truncated-json", "json-array", "binary"],
)
def test_malformed_env_file_exits_2(tmp_path: Path, content: bytes, words: str) -> None:
    path = tmp_path / "env"
    path.write_bytes(content)
    result = subprocess.run(
        [sys.executable, "-m", "clusterenv", "inspect", "--env-file", str(path)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("clusterenv: error: ")
    assert words in result.stderr
    assert "Traceback" not in result.stderr


def test_env_file_from_stdin() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "clusterenv", "inspect", "--json", "--env-file", "-"],
        input=json.dumps(torchrun_worker(1)),
        capture_output=True,
        text=True,
    )
    assert json.loads(result.stdout)["spec"]["global_rank"] == 1


def test_inspect_imports_torch_only_with_lightning(tmp_path: Path) -> None:
    require_modules("lightning")
    code = (
        "import sys; from clusterenv._cli import main; main(sys.argv[1:]); "
        "print('torch' in sys.modules, file=sys.stderr)"
    )
    for extra, imported in (([], "False"), (["--lightning"], "True")):
        result = subprocess.run(
            [sys.executable, "-c", code, "inspect", *extra],
            capture_output=True,
            text=True,
            check=True,
        )
        assert result.stderr.strip() == imported


def test_run_passes_every_argument_to_the_script(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text("import sys; print(sys.argv[1:])")
    for args in (["run", str(script)], ["run", "-m", "script"]):
        result = subprocess.run(
            [sys.executable, "-m", "clusterenv", *args, "--devices", "2", "-m", "x"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(tmp_path)},
        )
        assert result.stdout.strip() == "['--devices', '2', '-m', 'x']", result.stderr
    result = subprocess.run(
        [sys.executable, "-m", "clusterenv", "run"], capture_output=True, text=True
    )
    assert result.returncode == 2
    assert "needs a SCRIPT or -m MODULE" in result.stderr


def test_env_file_edges(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """null is an unset variable (was the string 'None'); a capture of a plain machine,
    with no launcher variable, is read back elsewhere (was 'has no variables')."""
    nulls = tmp_path / "nulls.json"
    nulls.write_text('{"SLURM_JOB_ID": null, "MASTER_PORT": "29500"}')
    assert main(["inspect", "--json", "--env-file", str(nulls)]) == 0
    assert json.loads(capsys.readouterr().out)["spec"]["source"] == "local"
    plain = tmp_path / "capture.json"
    plain.write_text(json.dumps({"schema_version": 1, "env": {}, "files": {}, "machine": None}))
    assert main(["inspect", "--json", "--env-file", str(plain)]) == 0
    assert json.loads(capsys.readouterr().out)["spec"]["world_size"] == 1


def test_a_gpu_probe_that_cannot_tell_returns_none() -> None:
    spec = detect_environment({}, gpu_probe=lambda: None, cpu_probe=lambda: None)
    assert (spec.gpus_per_node, spec.world_size) == (0, 1)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_probe_ends_in_one_line(signum: int) -> None:
    """Ctrl-C, or srun/torchrun stopping the rank: exit 130, no traceback (issue 27)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "TORCHELASTIC"))}
    rank_1 = env_launch(1, 2, 1, master_addr="127.0.0.1", master_port=_free_port())
    # A suite started in the background of a shell without job control inherits SIGINT
    # ignored, which exec passes on (and Python then installs no handler); a handled
    # signal is reset to the default at exec, as a terminal's Ctrl-C finds it.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        waiting = subprocess.Popen(
            [sys.executable, "-m", "clusterenv", "probe", "--timeout", "60"],
            env={**env, **rank_1, "CLUSTERENV_SOURCE": "env"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    finally:
        signal.signal(signal.SIGINT, previous)
    _wait_for_sigterm_handler(waiting.pid)  # the probe runs: rank 1 waits for rank 0
    waiting.send_signal(signum)
    _, stderr = waiting.communicate(timeout=HANG_GUARD_S)
    assert waiting.returncode == 130, stderr
    assert stderr.strip() == "clusterenv: interrupted"


def _wait_for_sigterm_handler(pid: int) -> None:
    """Until the process catches SIGTERM (SigCgt in /proc/PID/status): the probe has begun."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status = Path(f"/proc/{pid}/status").read_text()
        caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
        if int(caught.split()[1], 16) & (1 << (signal.SIGTERM - 1)):
            return
        time.sleep(0.05)
    raise AssertionError("the probe never started")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_argparse_echoes_unknown_arguments_escaped() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "clusterenv", "inspect", "\x1b]0;owned\x07"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert "\x1b" not in result.stderr
    assert "\\x1b]0;owned\\x07" in result.stderr


@pytest.mark.parametrize(
    ("redirect", "words"),
    [("> /dev/full", "cannot write the output: No space left"), (">&-", "standard output is")],
)
def test_a_full_or_closed_stdout_is_one_line(redirect: str, words: str) -> None:
    """Was exit 120 (a full device, at exit) or an internal error (stdout closed)."""
    result = subprocess.run(
        f"{sys.executable} -m clusterenv inspect {redirect}",
        shell=True,
        capture_output=True,
        text=True,
        env={**os.environ, "CLUSTERENV_SOURCE": "local"},
    )
    assert result.returncode == 2
    assert words in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_launch_record_is_refused_not_read_as_this_machine(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """tests/data/captures/ holds launch records ({"command", "tasks": [{"env": ...}]}): a
    replay that read their top-level keys as variables would describe this machine."""
    record = Path(__file__).parent / "data" / "captures" / "salloc-shell.json"
    assert main(["inspect", "--env-file", str(record)]) == 2
    assert "launch record" in capsys.readouterr().err


def test_task_n_replays_one_task_of_a_launch_record_as_it_ran(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`--task N`: the task's variables, host files, launcher answers and CPUs, as its own
    replay in tests/test_captures.py gives them; a bad N or a plain file is refused."""
    path = Path(__file__).parent / "data" / "captures" / "flux-manual.json"
    record = json.loads(path.read_text())
    expected = json.loads(
        (Path(__file__).parent / "data" / "expected" / "flux-manual.json").read_text()
    )
    for index in range(len(record["tasks"])):
        capsys.readouterr()
        assert main(["inspect", "--json", "--env-file", str(path), "--task", str(index)]) == 0
        assert json.loads(capsys.readouterr().out)["spec"] == expected[index]
    assert main(["inspect", "--env-file", str(path), "--task", "4"]) == 2
    assert "0 to 3" in capsys.readouterr().err
    assert main(["inspect", "--task", "0"]) == 2
    assert "--env-file" in capsys.readouterr().err


def test_an_env_file_without_a_launcher_variable_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A dump of a shell outside any job: a replay would describe a plain machine."""
    path = tmp_path / "env.txt"
    path.write_text("HOME=/home/u\nPATH=/usr/bin\nEDITOR=vi\n")
    assert main(["inspect", "--env-file", str(path)]) == 2
    err = capsys.readouterr().err
    assert "sets none of the variables" in err
    assert len(err.strip().splitlines()) == 1
    path.write_text("HOME=/home/u\nCLUSTERENV_SOURCE=local\n")
    assert main(["inspect", "--env-file", str(path)]) == 0
