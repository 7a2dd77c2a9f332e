from __future__ import annotations

import sys
from pathlib import Path

import pytest

from clusterenv import InvalidVariableError, MissingVariableError, _gpu, detect_environment
from clusterenv._gpu import parse_cuda_visible_devices
from tests.envs import srun_task, torchrun_worker


def test_torchrun_worker() -> None:
    spec = detect_environment(torchrun_worker(3, nproc_per_node=2, nnodes=2), gpu_probe=lambda: ())
    assert (spec.source.value, spec.role.value) == ("torchelastic", "rank")
    assert (spec.num_nodes, spec.devices_per_node, spec.world_size) == (2, 2, 4)
    assert (spec.global_rank, spec.local_rank, spec.node_rank) == (3, 1, 1)
    assert (spec.master_addr, spec.master_port, spec.job_id) == ("localhost", 29400, None)


def test_torchrun_run_id_becomes_the_job_id() -> None:
    spec = detect_environment(torchrun_worker(run_id="exp7"), gpu_probe=lambda: ())
    assert spec.job_id == "exp7"


def test_torchrun_inside_slurm_is_torchrun() -> None:
    """One srun task per node running torchrun: the workers are torchrun's, not srun's."""
    env = srun_task([1, 1], 1) | torchrun_worker(3, nproc_per_node=2, nnodes=2, master_addr="cn001")
    spec = detect_environment(env, gpu_probe=lambda: ())
    assert (spec.source.value, spec.global_rank, spec.world_size) == ("torchelastic", 3, 4)


def test_torchrun_gpus_come_from_the_machine() -> None:
    spec = detect_environment(torchrun_worker(), gpu_probe=lambda: ("0", "1"))
    assert (spec.accelerator.value, spec.gpus_per_node, spec.visible_devices) == (
        "gpu",
        2,
        ("0", "1"),
    )


@pytest.mark.parametrize(
    "missing", ["RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_PORT"]
)
def test_torchrun_missing_variable(missing: str) -> None:
    env = torchrun_worker()
    del env[missing]
    with pytest.raises(MissingVariableError, match=missing):
        detect_environment(env, gpu_probe=lambda: ())


def test_torchrun_bad_rank() -> None:
    with pytest.raises(InvalidVariableError, match="RANK='one'"):
        detect_environment(torchrun_worker() | {"RANK": "one"}, gpu_probe=lambda: ())


@pytest.mark.parametrize(
    ("value", "devices"),
    [
        ("0,1", ("0", "1")),
        (" 2 , 3 ", ("2", "3")),
        ("", ()),
        ("-1", ()),
        ("NoDevFiles", ()),
        ("0,-1,1", ("0",)),
        ("GPU-8d1f0f5e-6b1b-4b0e-9f0b-123456789abc", ("GPU-8d1f0f5e-6b1b-4b0e-9f0b-123456789abc",)),
        ("MIG-4b3a1f1e-1c2d-5e6f-7a8b-9c0d1e2f3a4b", ("MIG-4b3a1f1e-1c2d-5e6f-7a8b-9c0d1e2f3a4b",)),
        ("MIG-GPU-8d1f0f5e/1/0", ("MIG-GPU-8d1f0f5e/1/0",)),
    ],
)
def test_cuda_visible_devices(value: str, devices: tuple[str, ...]) -> None:
    assert parse_cuda_visible_devices(value) == devices
    spec = detect_environment({"CUDA_VISIBLE_DEVICES": value}, gpu_probe=lambda: ("0",) * 8)
    assert spec.visible_devices == devices
    assert spec.world_size == spec.devices_per_node == max(1, len(devices))
    assert spec.accelerator.value == ("gpu" if devices else "cpu")


def test_local_probe_only_without_cuda_visible_devices() -> None:
    def probe() -> tuple[str, ...]:
        raise AssertionError("probed although CUDA_VISIBLE_DEVICES is set")

    assert detect_environment({"CUDA_VISIBLE_DEVICES": "0"}, gpu_probe=probe).gpus_per_node == 1
    spec = detect_environment({}, gpu_probe=lambda: ("0", "1", "2", "3"))
    assert (spec.source.value, spec.role.value, spec.world_size, spec.master_addr) == (
        "local",
        "standalone",
        4,
        "127.0.0.1",
    )


def test_local_main_address_overrides() -> None:
    spec = detect_environment({"MASTER_ADDR": "node7", "MASTER_PORT": "1234"}, gpu_probe=lambda: ())
    assert (spec.master_addr, spec.master_port) == ("node7", 1234)


def test_probe_reads_the_driver_then_nvidia_smi(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # the nvml extra is not installed
    gpus = tmp_path / "gpus"
    for address in ("0000:07:00.0", "0000:0b:00.0"):
        (gpus / address).mkdir(parents=True)
    monkeypatch.setattr(_gpu, "_PROC_GPUS", str(gpus))
    assert _gpu.probe_gpus() == ("0", "1")

    monkeypatch.setattr(_gpu, "_PROC_GPUS", str(tmp_path / "no-driver"))
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.parent.mkdir()
    smi.write_text(
        "#!/bin/sh\n"
        "echo 'GPU 0: NVIDIA H200 (UUID: GPU-1)'\n"
        "echo 'GPU 1: NVIDIA H200 (UUID: GPU-2)'\n"
    )
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", str(smi.parent))
    assert _gpu.probe_gpus() == ("0", "1")

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert _gpu.probe_gpus() == ()
