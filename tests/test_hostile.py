"""Every input is hostile: each family is refused or handled with a one-line
ClusterEnvError (exit 2 from the CLI), in bounded time (pytest-timeout, not timed asserts),
with no secret and no raw control character in any output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterenv import (
    ClusterEnvError,
    InvalidVariableError,
    Source,
    compress_hostlist,
    detect_environment,
    expand_hostlist,
)
from clusterenv._core.reader import MAX_VALUE_LENGTH
from clusterenv._core.safe import escape, redact_text
from clusterenv.testing import (
    Launch,
    kubeflow_env,
    local_env,
    lsf_env,
    pbs_env,
    slurm_env,
    torchrun_env,
)
from tests.available import HANG_GUARD_S
from tests.envs import detect, examples

pytestmark = pytest.mark.timeout(5)

HUGE = "9" * 5000
ESC = "\x1b]0;owned\x07\x1b[2J"
SECRET = "s3cr3t-Value-42"


def cli(args: list[str], stdin: str | bytes = b"") -> subprocess.CompletedProcess[bytes]:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    return subprocess.run(
        [sys.executable, "-m", "clusterenv", *args],
        input=data,
        capture_output=True,
        timeout=HANG_GUARD_S,
        env={"PATH": os.environ["PATH"], "CUDA_VISIBLE_DEVICES": ""},
    )


# -- huge, non-ASCII and adversarial values ------------------------------------------------


def _numeric(launch: Launch) -> list[str]:
    return [name for name, value in launch.items() if value.isdigit()]


@pytest.mark.parametrize(
    ("source", "name"),
    [(s, name) for s in Source for launch in examples(s)[:1] for name in _numeric(launch)],
)
@pytest.mark.parametrize(
    "value", [HUGE, "١٢", "³", "1" * 19], ids=["5000-digits", "arabic", "sup", "19"]
)
def test_numbers_are_ascii_and_bounded(source: Source, name: str, value: str) -> None:
    """Any of these in any numeric variable: a valid spec or a short ClusterEnvError."""
    launch = examples(source)[0]
    message = ""
    try:
        detect(Launch(launch | {name: value}, launch.files))
    except ClusterEnvError as error:
        message = str(error)
    assert len(message) < 1000, "the value is shortened in the message"


def test_a_huge_integer_names_the_variable_and_the_limit() -> None:
    with pytest.raises(InvalidVariableError, match=r"SLURM_NODEID='9{40}…\(5000 characters\)'"):
        detect(slurm_env(2, 2, 1) | {"SLURM_NODEID": HUGE})


@pytest.mark.parametrize(
    "nodelist",
    [
        "1" * 100_000 + "x",  # one odd host name; compressing it was quadratic: 45 s
        "n" * 10_000 + "[0-65535]",  # 10 KiB that expanded to 655 MB
        "n[1-3]" * 20_000,  # a cartesian product with 20 000 factors
        "[" * 100_000,
        "n[" + ",".join(["1"] * 60_000) + "]",
        "x" * (MAX_VALUE_LENGTH + 1),
    ],
    ids=["digits-then-x", "long-prefix", "many-groups", "brackets", "many-items", "too-long"],
)
def test_adversarial_node_lists(nodelist: str, tmp_path: Path) -> None:
    """A valid spec or a short error naming the variable, from Python and from inspect."""
    env = {"SLURM_JOB_ID": "1", "SLURM_JOB_NUM_NODES": "1", "SLURM_JOB_NODELIST": nodelist}
    message = "SLURM_JOB_NODELIST"
    try:
        detect(env)
    except ClusterEnvError as error:
        message = str(error)
    assert len(message) < 1000
    assert "SLURM_JOB_NODELIST" in message
    path = tmp_path / "env.json"
    path.write_text(json.dumps(env))
    assert cli(["inspect", "--env-file", str(path)]).returncode in (0, 2)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="0123456789[]-,xn ", max_size=3000))
def test_hostlists_round_trip_or_refuse(text: str) -> None:
    try:
        hosts = expand_hostlist(text)
    except ClusterEnvError:
        return
    assert expand_hostlist(compress_hostlist(hosts)) == hosts


def test_lsf_slots_are_bounded_and_ascii() -> None:
    with pytest.raises(InvalidVariableError, match="more than 1000000"):
        detect({"LSB_JOBID": "1", "LSB_MCPU_HOSTS": "h 1000000000"})
    with pytest.raises(InvalidVariableError, match="LSB_MCPU_HOSTS"):
        detect({"LSB_JOBID": "1", "LSB_MCPU_HOSTS": "h ³"})


# -- files -----------------------------------------------------------------------------------


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    "target", ["/dev/zero", "fifo", "directory", "sparse", "/proc/self/environ", "binary"]
)
def test_host_files_are_regular_small_and_host_names_only(
    target: str, tmp_path: Path, fifo: Path
) -> None:
    paths = {"fifo": str(fifo), "directory": str(tmp_path)}
    if target == "sparse":
        with open(tmp_path / "big", "wb") as file:
            file.truncate(2 * 1024**3)  # 2 GB of holes: nothing written
        paths["sparse"] = str(tmp_path / "big")
    if target == "binary":
        (tmp_path / "bin").write_bytes(bytes(range(256)) * 10)
        paths["binary"] = str(tmp_path / "bin")
    env = {"PBS_JOBID": "1.pbs", "PBS_NODEFILE": paths.get(target, target)}
    with pytest.raises(InvalidVariableError, match="PBS_NODEFILE") as raised:
        detect_environment(env, gpu_probe=tuple)
    assert "PATH=" not in str(raised.value)


def test_capture_never_embeds_a_file_that_is_not_a_host_file(tmp_path: Path) -> None:
    netrc = tmp_path / ".netrc"
    netrc.write_text(f"machine example.org login me password {SECRET}\n")
    for path in ("/proc/self/environ", str(netrc)):
        env = tmp_path / "env.txt"
        env.write_text(f"PBS_JOBID=1.pbs\nPBS_NODEFILE={path}\n")
        result = cli(["capture", "--env-file", str(env)])
        assert SECRET.encode() not in result.stdout + result.stderr
        assert b"PATH=" not in result.stdout


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"", "has no variables"),
        (b"just some text\nwithout variables\n", "has no variables"),
        (b"[" * 100_000, "not valid JSON"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
    ],
    ids=["empty", "unrelated", "nested", "binary"],
)
def test_env_files_that_yield_nothing_are_errors(
    content: bytes, words: str, tmp_path: Path
) -> None:
    path = tmp_path / "env"
    path.write_bytes(content)
    result = cli(["inspect", "--env-file", str(path)])
    assert result.returncode == 2
    assert words in result.stderr.decode()
    assert b"Traceback" not in result.stderr


def test_env_files_from_stdin_fifos_and_devices(fifo: Path) -> None:
    assert cli(["inspect", "--env-file", "-"]).returncode == 2  # empty stdin
    assert b"not a regular file" in cli(["inspect", "--env-file", str(fifo)]).stderr
    assert b"not a regular file" in cli(["inspect", "--env-file", "/dev/zero"]).stderr


def test_a_bom_is_tolerated(tmp_path: Path) -> None:
    path = tmp_path / "env.json"
    path.write_text("\ufeff" + json.dumps({"CUDA_VISIBLE_DEVICES": "0,1"}), encoding="utf-8")
    result = cli(["inspect", "--json", "--env-file", str(path)])
    assert json.loads(result.stdout)["spec"]["world_size"] == 2


# -- secrets and control characters ------------------------------------------------------------

PLANTED = {
    "SLURM_JOB_COMMENT": f"password={SECRET}",
    "SLURM_EXPORT_ENV": f"ALL,HF_TOKEN={SECRET}",
    "SLURM_JOB_NAME": f"train-api_key={SECRET}",
    "SLURM_SUBMIT_DIR": f"https://me:{SECRET}@example.org/x",
    "OMPI_MCA_orte_precondition_transports": SECRET,
    "TORCHELASTIC_RUN_ID": f"token={SECRET}",
}


@pytest.mark.parametrize(
    "args",
    [["inspect"], ["inspect", "--json"], ["capture"], ["inspect", "--strict"]],
    ids=["report", "json", "capture", "strict"],
)
@pytest.mark.parametrize(
    "base",
    [slurm_env(2, 2, 1), torchrun_env(1, 2, 1), slurm_env(2, 2, 1) | {"SLURM_NODEID": "x"}],
    ids=["slurm", "torchrun", "error"],
)
def test_planted_secrets_never_appear(args: list[str], base: Launch, tmp_path: Path) -> None:
    path = tmp_path / "env.json"
    path.write_text(json.dumps(base | PLANTED))
    result = cli([*args, "--env-file", str(path)])
    assert SECRET.encode() not in result.stdout + result.stderr
    assert b"Traceback" not in result.stderr


def test_redaction_rule() -> None:
    assert redact_text("a=1,password=x,b") == "a=1,password=<redacted>,b"
    assert redact_text("ghp_" + "a" * 36) == "<redacted>"
    assert redact_text("AKIA" + "B" * 16 + " hf_" + "c" * 34) == "<redacted> <redacted>"
    assert redact_text("https://u:p@h/") == "https://<redacted>@h/"
    assert redact_text("nothing=here") == "nothing=here"


@pytest.mark.parametrize("args", [["inspect"], ["inspect", "--strict"]])
def test_control_characters_are_escaped(args: list[str], tmp_path: Path) -> None:
    path = tmp_path / "env.json"
    env = slurm_env(2, 2, 1, job_name=f"x{ESC}") | {"TORCHELASTIC_RUN_ID": f"r{ESC}"}
    env |= torchrun_env(1, 2, 1) | {"TORCHELASTIC_RUN_ID": f"r{ESC}"}
    path.write_text(json.dumps(env))
    result = cli([*args, "--env-file", str(path)])
    assert b"\x1b" not in result.stdout + result.stderr
    assert b"\\x1b" in result.stdout
    assert escape("a\u202eb\n") == "a\\u202eb\n"


def test_errors_escape_values_from_python_too() -> None:
    with pytest.raises(ClusterEnvError) as raised:
        detect(slurm_env(2, 2, 1) | {"SLURM_NODEID": ESC})
    assert "\x1b" not in str(raised.value)


# -- quiet wrong answers -----------------------------------------------------------------------


@pytest.mark.parametrize("address", ["cn001:29500", "cn 001", "a\tb"])
def test_main_address_with_a_port_or_space_is_an_error(address: str) -> None:
    with pytest.raises(InvalidVariableError, match="MASTER_ADDR") as raised:
        detect(torchrun_env(1, 2, 1, master_addr=address))
    if ":" in address:
        assert "MASTER_PORT=29500" in str(raised.value)


@pytest.mark.parametrize("address", ["10.0.0.1", "::1", "[fe80::1]", "cn001.cluster", "n_1"])
def test_addresses_that_are_fine(address: str) -> None:
    assert detect(torchrun_env(1, 2, 1, master_addr=address)).master_addr == address


@pytest.mark.parametrize(
    ("value", "devices"),
    [("0,0", ()), ("+1", ("1",)), ("1e3", ("1",)), (" 2 , 3", ("2", "3")), ("1gpu,2", ("1", "2"))],
)
def test_cuda_visible_devices_as_the_runtime_reads_it(value: str, devices: tuple[str, ...]) -> None:
    assert detect(local_env() | {"CUDA_VISIBLE_DEVICES": value}).visible_devices == devices


@pytest.mark.parametrize(
    "build",
    [
        lambda: slurm_env(2, 2, gpus_per_node=-2),
        lambda: pbs_env(2, 0),
        lambda: torchrun_env(1, 2, master_port=70000),
        lambda: kubeflow_env(0),
        lambda: lsf_env(0, 1),
        lambda: local_env(-1),
    ],
    ids=["gpus", "ppn", "port", "replicas", "nodes", "local"],
)
def test_builders_refuse_impossible_parameters(build: object) -> None:
    with pytest.raises(ClusterEnvError, match="HINT"):
        build()  # type: ignore[operator]


# -- the CLI never prints a traceback -----------------------------------------------------------


def test_a_closed_pipe_is_not_an_error() -> None:
    result = subprocess.run(
        f"{sys.executable} -m clusterenv inspect --json | head -c 10",
        shell=True,
        capture_output=True,
        timeout=HANG_GUARD_S,
    )
    assert b"Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["run", "/nonexistent/train.py"], "no such file"),
        (["run", "-m", "no_such_module_here"], "no such module"),
        (["run"], "needs a SCRIPT"),
        (["probe", "--timeout", "nan"], "finite number"),
        (["probe", "--timeout", "inf"], "finite number"),
        (["probe", "--timeout", "-1"], "finite number"),
    ],
)
def test_usage_errors_are_one_line(args: list[str], words: str) -> None:
    result = cli(args)
    assert result.returncode == 2
    assert words in result.stderr.decode()
    assert b"Traceback" not in result.stderr


@pytest.mark.timeout(60)  # `run` imports Lightning
def test_run_takes_its_options_before_the_script(tmp_path: Path) -> None:
    assert b"no such file" in cli(["run", "--debug", "/nonexistent/train.py"]).stderr
    script = tmp_path / "x.py"
    script.write_text("import sys; print(sys.argv[1:])")
    result = cli(["run", "--debug", str(script), "--debug", "-m", "y"])
    assert result.stdout.decode().strip() == "['--debug', '-m', 'y']"
    result = cli(["run", "--", str(script), "a"])
    assert result.stdout.decode().strip() == "['a']"
    help_text = cli(["run", "--help"])
    assert help_text.returncode == 0
    assert b"(-m MODULE | SCRIPT)" in help_text.stdout


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SLURM_TASKS_PER_NODE", HUGE + "(x2)"),
        ("SLURM_GPUS_PER_NODE", "gpu:a100:" + HUGE),
        ("SLURM_TRES_PER_TASK", "gres/gpu=" + HUGE),
        ("SLURM_STEP_GPUS", HUGE),
        ("LSB_MCPU_HOSTS", "h " + HUGE),
    ],
)
def test_huge_numbers_inside_structured_values(name: str, value: str) -> None:
    """The batch step reads each of these (an srun task reads the step's own first)."""
    base = {"LSB_JOBID": "1"} if name.startswith("LSB") else slurm_env(2, step="batch")
    with pytest.raises(InvalidVariableError, match=name) as raised:
        detect(base | {name: value})
    assert len(str(raised.value)) < 1000


def test_a_nul_in_a_host_file_path_names_the_variable() -> None:
    with pytest.raises(InvalidVariableError, match="PBS_NODEFILE") as raised:
        detect_environment({"PBS_JOBID": "1", "PBS_NODEFILE": "/tmp/a\x00b"})
    assert "embedded null byte" in str(raised.value)


def test_slurm_env_refuses_a_job_id_slurm_never_writes() -> None:
    with pytest.raises(ClusterEnvError, match="job_id='abc' is not a Slurm job id"):
        slurm_env(job_id="abc")


def test_a_slot_line_is_a_host_name_alone(tmp_path: Path) -> None:
    """PBS's and LSF's host files list one host per line: a line of another file's text
    (``HOME=/root``, ``node01 secret``) is refused, never cut to its first word."""
    nodefile = tmp_path / "nodefile"
    nodefile.write_text("node01\nnode01 secret-token\n")
    with pytest.raises(ClusterEnvError, match="line 2 is not one host name") as raised:
        detect_environment({"PBS_JOBID": "1", "PBS_NODEFILE": str(nodefile)}, gpu_probe=tuple)
    assert "secret-token" not in str(raised.value)


@pytest.mark.parametrize("form", [[], ["--json"], ["--markdown"]], ids=["text", "json", "markdown"])
@pytest.mark.parametrize(
    "extra",
    [
        {b"NCCL_SOCKET_IFNAME": b"eth\xff0"},  # not UTF-8: a lone surrogate in os.environ
        {b"GLOO_SOCKET_IFNAME": "ethé".encode(), b"PYTHONIOENCODING": b"ascii"},
        {b"NCCL_SOCKET_IFNAME": "ethé".encode(), b"LC_ALL": b"C", b"PYTHONUTF8": b"0"},
        {b"SLURM_JOB_ID": b"1", b"SLURM_JOB_NUM_NODES": b"1", b"SLURM_NODELIST": b"n\xff1"},
        # rank 0's own node name in slurm.main-address-not-rank-0, GPU ids in a note
        {k.encode(): v.encode() for k, v in slurm_env(2, 1, 0, gpus_per_node=1).items()}
        | {b"SLURMD_NODENAME": "cné2".encode(), b"MASTER_ADDR": b"cn002"}
        | {b"CUDA_VISIBLE_DEVICES": b"3", b"PYTHONIOENCODING": b"ascii"},
    ],
    ids=["non-utf8-byte", "ascii-stdout", "c-locale", "non-utf8-host-name", "finding-values"],
)
def test_no_value_locale_or_stream_breaks_the_report(
    extra: dict[bytes, bytes], form: list[str]
) -> None:
    """Every value reaches the report escaped, in every format and locale (issue 39)."""
    result = subprocess.run(
        [sys.executable, "-m", "clusterenv", "inspect", *form],
        capture_output=True,
        timeout=HANG_GUARD_S,
        env={b"PATH": os.environb[b"PATH"], b"CUDA_VISIBLE_DEVICES": b"", **extra},
    )
    assert b"internal error" not in result.stderr, result.stderr
    assert result.returncode in (0, 2), result.stderr  # 2: a clear error about the value
    if b"SLURMD_NODENAME" in extra:  # the findings that show those values did run
        assert b"main-address-not-rank-0" in result.stdout
        assert b"gpus-not-from-zero" in result.stdout


def test_an_error_into_a_full_stderr_still_exits_2() -> None:
    with open("/dev/full", "wb") as full:
        result = subprocess.run(
            [sys.executable, "-m", "clusterenv", "inspect"],
            stdout=subprocess.DEVNULL,
            stderr=full,
            timeout=HANG_GUARD_S,
            env={"PATH": os.environ["PATH"], "SLURM_JOB_ID": "not-a-number"},
        )
    assert result.returncode == 2


def test_inspect_json_stays_json_under_an_ascii_encoding(tmp_path: Path) -> None:
    """Issue 47: a non-ASCII value under PYTHONIOENCODING=ascii is ``\\u00eb`` (JSON), not
    the terminal escaping's ``\\xeb`` (which no JSON parser reads)."""
    dump = tmp_path / "env.txt"
    dump.write_text("NCCL_SOCKET_IFNAME=\u00ebth0\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "clusterenv", "inspect", "--json", "--env-file", str(dump)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONIOENCODING": "ascii"},
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["network"]["NCCL_SOCKET_IFNAME"] == "\u00ebth0"
