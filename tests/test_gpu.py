"""Which GPUs a process may use: CUDA_VISIBLE_DEVICES as the CUDA runtime reads it, and the
torch-free probe."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from clusterenv import GpuInventory, GpuVendor, detect_environment
from clusterenv._node import gpu_probe as _gpu_probe
from clusterenv._node.gpu import parse_cuda_visible_devices


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


def test_probe_reads_the_driver_then_nvidia_smi(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # the nvml extra is not installed
    for address in ("0000:07:00.0", "0000:0b:00.0"):  # the driver's own files, shaped as on a node
        gpu = tmp_path / "proc/driver/nvidia/gpus" / address
        gpu.mkdir(parents=True)
        (gpu / "information").write_text("Model: \t\t NVIDIA H200\nIRQ:   \t\t 42\n")
    (tmp_path / "proc/driver/nvidia/version").write_text(
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n"
    )
    assert _gpu_probe.probe_sysfs(str(tmp_path)) == GpuInventory(
        vendor=GpuVendor.NVIDIA, devices=("0", "1"), models=("NVIDIA H200",) * 2, driver="550.54.15"
    )

    monkeypatch.setattr(_gpu_probe, "probe_sysfs", lambda root: GpuInventory())
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.parent.mkdir()
    smi.write_text(
        "#!/bin/sh\n"
        "echo 'GPU 0: NVIDIA H200 (UUID: GPU-1)'\n"
        "echo 'GPU 1: NVIDIA H200 (UUID: GPU-2)'\n"
    )
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", str(smi.parent))
    probe = _gpu_probe.probe_gpus.__wrapped__  # uncached: the real one asks once per process
    expected = GpuInventory(
        vendor=GpuVendor.NVIDIA, devices=("0", "1"), models=("NVIDIA H200",) * 2
    )
    assert probe() == expected

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert probe() == GpuInventory()
