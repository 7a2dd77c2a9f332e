"""`clusterenv inspect` as the report people paste into bug trackers: complete, faithful
when read back on another machine, never cut, with a stable JSON schema."""

from __future__ import annotations

import contextlib
import json
import os
from importlib import metadata
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from clusterenv import GpuInventory, GpuVendor
from clusterenv._cli import main
from clusterenv._cli._report import InspectReport, live_report
from clusterenv._diagnosis.machine import PACKAGES, Machine, collect_machine
from clusterenv.testing import slurm_env, torchrun_env
from tests.envs import HERE

SCHEMA = Path(__file__).parents[1] / "docs" / "schema" / "inspect-v1.json"
CAPTURES = Path(__file__).parent / "data" / "captures"
LUMI_NODE = Machine(
    host="nid005001",
    os="Linux-5.14.21-x86_64-with-glibc2.31",
    python="3.11.7",
    packages={"clusterenv-hpc": "0.1.0", "pydantic": "2.9.2", "torch": "2.6.0+rocm6.2"},
    gpus=GpuInventory(vendor=GpuVendor.AMD, devices=tuple("01234567"), models=("gfx90a",) * 8),
    cpus=128,
    affinity=7,
    affinity_list="1-7",
)


def _never() -> Any:
    raise AssertionError("an env file was read with this machine's probes")


@pytest.fixture
def on_machine(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Run the CLI as if on ``machine``, with ``env`` as the process's environment."""

    def apply(machine: Machine | None, env: dict[str, str]) -> None:
        collect = (lambda probe, env: machine) if machine else (lambda probe, env: _never())
        monkeypatch.setattr("clusterenv._cli._report.collect_machine", collect)
        gpus, cpus = (lambda: machine.gpus, lambda: machine.affinity) if machine else (_never,) * 2
        monkeypatch.setattr("clusterenv._engine.detect.probe_gpus", gpus)
        monkeypatch.setattr("clusterenv._engine.detect.probe_cpus", cpus)
        for name in list(os.environ):
            monkeypatch.delenv(name)
        for name, value in env.items():
            monkeypatch.setenv(name, value)

    return apply


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) in (0, 1)
    return capsys.readouterr().out


def _real_task(name: str) -> dict[str, str]:
    """One task's variables from a real launch (tests/data/captures/)."""
    env: dict[str, str] = json.loads((CAPTURES / f"{name}.json").read_text())["tasks"][0]["env"]
    return env


@pytest.mark.parametrize(
    "env",
    [
        _real_task("slurm-24.11/amd-gpus-per-task"),
        _real_task("torchrun-static-2-nodes") | {"NCCL_SOCKET_IFNAME": "hsn0"},
        slurm_env(2, 4, 5, cpus_per_task=7) | {"FI_PROVIDER": "cxi"},
    ],
    ids=["slurm-24.11-amd", "torchrun", "slurm-cpus"],
)
def test_a_capture_gives_the_same_report_on_another_machine(
    env: dict[str, str], on_machine: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    on_machine(LUMI_NODE, env)
    live = {form: _run(capsys, "inspect", *form) for form in [(), ("--markdown",), ("--json",)]}
    capture = tmp_path / "capture.json"
    capture.write_text(_run(capsys, "capture"))
    on_machine(None, {"PATH": os.defpath})  # a laptop whose probes must not be asked
    for form in [(), ("--markdown",)]:
        assert _run(capsys, "inspect", "--env-file", str(capture), *form) == live[form]
    replayed = json.loads(_run(capsys, "inspect", "--json", "--env-file", str(capture)))
    original = json.loads(live[("--json",)])
    assert replayed.pop("origin") == "env-file"
    assert original.pop("origin") == "process"
    replayed.pop("generated_at"), original.pop("generated_at")
    assert replayed == original
    assert "nid005001" in live[()]
    assert original["machine"]["gpus"]["vendor"] == "amd"


def test_a_plain_dump_says_gpus_were_not_recorded(
    on_machine: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    on_machine(None, {})
    dump = tmp_path / "env.txt"
    dump.write_text("".join(f"{k}={v}\n" for k, v in torchrun_env(1, 8, 3).items()))
    out = _run(capsys, "inspect", "--env-file", str(dump))
    assert "not recorded" in out
    assert "GPUs/node     0" in out  # not the inspecting machine's
    assert "--ntasks-per-node" not in out


def test_the_json_validates_against_the_published_schema(
    on_machine: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    generated = InspectReport.model_json_schema()
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        SCHEMA.parent.mkdir(exist_ok=True)
        SCHEMA.write_text(json.dumps(generated, indent=2, sort_keys=True) + "\n")
    published = json.loads(SCHEMA.read_text())
    assert published == generated, "the JSON schema changed: bump schema_version if a field "
    "changed meaning, then UPDATE_SNAPSHOTS=1 pytest tests/test_inspect_report.py"
    on_machine(LUMI_NODE, slurm_env(2, 2, step="batch", gpus_per_node=2))
    data = json.loads(_run(capsys, "inspect", "--json"))
    jsonschema.validate(data, published)
    assert data["schema_version"] == 1
    assert data["warnings"][0] == {
        "id": "batch-step",
        "message": "this is the batch step of an sbatch script (job 4242): one process, not "
        "the ranks",
        "fix": "start them with `srun python train.py` (or `srun clusterenv inspect`)",
        "level": "info",
    }
    assert data["origins"]["master_port"] == [{"variable": "SLURM_JOB_ID", "value": "4242"}]


def test_the_text_report_wraps_and_never_cuts(
    on_machine: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    hosts = [f"node-{word}" for word in ("alpha", "bravo", "charlie", "delta", "echo", "fox")]
    env = slurm_env(6, 1, 5, nodelist=",".join(hosts)) | {
        "NCCL_SOCKET_IFNAME": "=" + ",".join(f"hsn{i}" for i in range(40)),
        "MASTER_ADDR": "a-rather-long-fully-qualified-name.compute.cluster.example.org",
    }
    on_machine(LUMI_NODE, env)
    out = _run(capsys, "inspect")
    assert all(len(line) <= 80 for line in out.splitlines())
    joined = "".join(line.strip() for line in out.splitlines())
    for value in (*hosts, env["MASTER_ADDR"], "hsn39"):
        assert value in joined
    assert "…" not in out


def test_markdown_escapes_what_would_break_a_table(
    on_machine: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    on_machine(LUMI_NODE, slurm_env(1, 1) | {"SLURM_JOB_NAME": "a|b", "NCCL_DEBUG": "x`y|z"})
    out = _run(capsys, "inspect", "--markdown")
    assert out.startswith("### clusterenv ")
    assert "| field | value | from |" in out
    assert "`` NCCL_DEBUG=x`y\\|z ``" in out
    rows = [line for line in out.splitlines() if line.startswith("| ")]
    assert all(line.count(" | ") - line.count("\\| ") >= 1 for line in rows)


def test_a_workstation_is_not_told_to_use_srun(
    on_machine: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    on_machine(LUMI_NODE, {})
    assert main(["probe"]) == 2
    error = capsys.readouterr().err
    assert "torchrun" in error
    assert "srun" not in error


def test_the_machine_names_the_packages_versions_as_importlib_does() -> None:
    """Read from the METADATA header alone (an egg-info's PKG-INFO too), the same answer."""
    found = {}
    for name in PACKAGES:
        with contextlib.suppress(metadata.PackageNotFoundError):
            found[name] = metadata.version(name)
    assert collect_machine(GpuInventory, {}).packages == found
    assert "pydantic" in found


def test_the_machine_names_the_launchers_versions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first line of each present source's version command; one that fails (srun
    without a Slurm config prints only errors) is left out."""
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "srun").write_text("#!/bin/sh\necho 'slurm 24.11.5'\n")
    (tools / "mpirun").write_text("#!/bin/sh\necho 'mpirun: error: no config' >&2\nexit 1\n")
    for tool in tools.iterdir():
        tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(tools))
    env = slurm_env(1, 1) | {"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "1"}
    machine = collect_machine(GpuInventory, env)
    assert machine.launchers == {"slurm": "slurm 24.11.5"}
    assert collect_machine(GpuInventory, {}).launchers == {}


def test_a_launcher_echoing_bytes_that_are_not_utf8_is_shown_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """srun repeats a hostile SLURM_JOB_ID's bytes in its messages: never a crash."""
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "srun").write_bytes(b"#!/bin/sh\nprintf 'slurm \\377\\376'\nprintf '\\377' >&2\n")
    (tools / "srun").chmod(0o755)
    monkeypatch.setenv("PATH", str(tools))
    assert collect_machine(GpuInventory, slurm_env(1, 1)).launchers == {
        "slurm": "slurm \ufffd\ufffd"
    }


def test_a_wedged_launcher_is_named_and_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An srun whose controller hangs: the report says so, within the budget of all the
    version commands together (issue 27), instead of waiting for each in turn."""
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "srun").write_text("#!/bin/sh\nexec /bin/sleep 30\n")
    (tools / "srun").chmod(0o755)
    monkeypatch.setenv("PATH", str(tools))
    machine = collect_machine(GpuInventory, slurm_env(1, 1))
    assert machine.launchers == {"slurm": "unknown: `srun --version` did not answer within 2 s"}


@pytest.mark.parametrize(
    ("master", "warned"), [("localhost", True), ("127.0.1.1", False), ("198.18.0.1", False)]
)
def test_a_main_address_that_resolves_to_loopback_on_a_multi_node_job_is_a_warning(
    master: str, warned: bool
) -> None:
    env = slurm_env(2, 2, 3, nodelist=HERE) | {"MASTER_ADDR": master, "CUDA_VISIBLE_DEVICES": ""}
    found = [w for w in live_report(env).warnings if w.id == "loopback-main-address"]
    assert bool(found) is warned
    if warned:
        assert "the other 1 node(s) cannot reach rank 0 there" in found[0].message
    one_node = slurm_env(1, 2, 1) | {"MASTER_ADDR": master, "CUDA_VISIBLE_DEVICES": ""}
    assert not [w for w in live_report(one_node).warnings if w.id == "loopback-main-address"]
