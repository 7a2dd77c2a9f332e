"""AMD and Intel GPUs: each runtime's visible-devices rules, the vendor, the sysfs probe.

Shapes follow the documentation:
- ROCm, "ROCm environment variables", GPU isolation: ``ROCR_VISIBLE_DEVICES`` (indices or
  UUIDs, e.g. ``0,GPU-4b2c...``) is applied first, ``HIP_VISIBLE_DEVICES`` (or
  ``CUDA_VISIBLE_DEVICES``) then indexes what it leaves; PyTorch's ROCm build counts them
  the same way (``torch.cuda._parse_visible_devices``, "HIP_VISIBLE_DEVICES contains more
  devices than ROCR_VISIBLE_DEVICES").
- Level Zero spec, "Affinity Mask", and Intel's "Flattening GPU Tile Hierarchy": entries
  ``N`` or ``N.M`` (tile M of device N); FLAT (the default since 2023) makes every tile a
  device, COMPOSITE exposes a device whose tiles are selected together.
- gres.conf(5), ``Flags``: ``nvidia_gpu_env``/``amd_gpu_env``/``intel_gpu_env`` set only
  ``CUDA_VISIBLE_DEVICES``/``ROCR_VISIBLE_DEVICES``/``ZE_AFFINITY_MASK``; without flags
  all are set (measured on both loopback clusters: tests/data/captures/*gpus*).
- The kernel's kfd topology (``/sys/class/kfd/kfd/topology/nodes/N/gpu_id``, 0 for CPU
  nodes), read by rocminfo and amd-smi; DRM cards (``/sys/class/drm/cardN/device/vendor``
  0x8086, ``class`` 0x038000 for Data Center GPU Max, one ``gt/gtN`` per tile under i915,
  one ``device/tileN`` under xe).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import pytest

import clusterenv.lightning as cl
from clusterenv import GpuInventory, GpuVendor, InconsistentEnvironmentError, explain_environment
from clusterenv._diagnosis.diagnose import diagnose
from clusterenv._node.gpu import parse_ze_affinity_mask
from clusterenv._node.gpu_probe import probe_sysfs
from clusterenv.testing import slurm_env, torchrun_env

NONE = GpuInventory()
AMD_NODE = GpuInventory(vendor=GpuVendor.AMD, devices=tuple("01234567"))  # LUMI-G: 8 GCDs
AURORA = GpuInventory(
    vendor=GpuVendor.INTEL, devices=tuple(f"{g}.{t}" for g in range(6) for t in (0, 1))
)


def gpus(env: Mapping[str, str], found: GpuInventory = NONE) -> tuple[str | None, tuple[str, ...]]:
    spec = explain_environment(env, gpu_probe=lambda: found, cpu_probe=lambda: None).spec
    return (spec.gpu_vendor.value if spec.gpu_vendor else None), spec.visible_devices


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"ROCR_VISIBLE_DEVICES": "0,1"}, ("amd", ("0", "1"))),
        (
            {"ROCR_VISIBLE_DEVICES": "0,GPU-4b2c1a9f8d3e6f7a"},
            ("amd", ("0", "GPU-4b2c1a9f8d3e6f7a")),
        ),
        ({"ROCR_VISIBLE_DEVICES": "1,2,3", "HIP_VISIBLE_DEVICES": "0"}, ("amd", ("0",))),
        ({"HIP_VISIBLE_DEVICES": "0,2"}, ("amd", ("0", "2"))),
        ({"ROCR_VISIBLE_DEVICES": ""}, (None, ())),
        ({"ZE_AFFINITY_MASK": "0,1"}, ("intel", ("0", "1"))),
        ({"ZE_AFFINITY_MASK": "0.0,0.1"}, ("intel", ("0.0", "0.1"))),
        (
            {"ZE_AFFINITY_MASK": "0.0,0.1", "ZE_FLAT_DEVICE_HIERARCHY": "COMPOSITE"},
            ("intel", ("0",)),
        ),
        ({"ONEAPI_DEVICE_SELECTOR": "level_zero:2,3"}, ("intel", ("2", "3"))),
    ],
)
def test_each_vendor_variable_alone_names_the_vendor(
    env: dict[str, str], expected: tuple[str | None, tuple[str, ...]]
) -> None:
    assert gpus(env) == expected


def test_hip_naming_more_gpus_than_rocr_leaves_is_refused() -> None:
    with pytest.raises(InconsistentEnvironmentError, match="HIP_VISIBLE_DEVICES") as caught:
        gpus({"ROCR_VISIBLE_DEVICES": "0", "HIP_VISIBLE_DEVICES": "0,1"})
    assert caught.value.variables == ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")


def test_slurms_every_vendor_variables_are_decided_by_the_machine() -> None:
    """Without gres Flags Slurm sets CUDA_, ROCR_ and ZE_ at once: the probe decides, and
    a GPU-less machine (an env file read elsewhere) keeps the NVIDIA reading."""
    env = slurm_env(2, 2, 1, gpus_per_node=2)
    assert {"CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "ZE_AFFINITY_MASK"} <= set(env)
    assert gpus(env, AMD_NODE) == ("amd", ("0", "1"))
    assert gpus(env) == ("nvidia", ("0", "1"))


def test_without_variables_the_probe_gives_vendor_and_devices() -> None:
    assert gpus({}, AMD_NODE) == ("amd", AMD_NODE.devices)
    assert gpus({}, AURORA)[1] == AURORA.devices  # flat: 12 tiles, 12 ranks per node
    assert gpus({"ZE_FLAT_DEVICE_HIERARCHY": "COMPOSITE"}, AURORA) == ("intel", tuple("012345"))
    assert gpus({}, GpuInventory(vendor=GpuVendor.NVIDIA, devices=("0",))) == ("nvidia", ("0",))
    assert gpus({}) == (None, ())


def test_a_plain_list_from_a_probe_means_nvidia() -> None:
    spec = explain_environment({}, gpu_probe=lambda: ["0", "1"], cpu_probe=lambda: None).spec
    assert (spec.gpu_vendor, spec.visible_devices) == ("nvidia", ("0", "1"))


@pytest.mark.parametrize(
    ("vendor", "variable"),
    [("amd", "ROCR_VISIBLE_DEVICES"), ("intel", "ZE_AFFINITY_MASK")],
)
def test_a_vendor_rank_is_detected_and_told_its_per_task_gpu(vendor: str, variable: str) -> None:
    env = slurm_env(1, 2, 1, gpus_per_task=1, gpu_vendor=vendor)  # type: ignore[arg-type]
    assert set(env) & {"CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "ZE_AFFINITY_MASK"} == {
        variable
    }
    detection = explain_environment(env, gpu_probe=lambda: NONE, cpu_probe=lambda: None)
    spec = detection.spec
    assert (spec.gpu_vendor, spec.visible_devices, spec.gpus_per_node) == (vendor, ("1",), 2)
    assert variable in detection.origins["visible_devices"]
    assert [finding.id for finding in diagnose(spec, env)] == ["gpus-per-task"]  # no other


def test_the_warning_for_hidden_gpus_names_the_vendors_variable() -> None:
    env = slurm_env(1, 2, 1, gpus_per_node=2, gpu_vendor="amd") | {"ROCR_VISIBLE_DEVICES": ""}
    spec = explain_environment(env, gpu_probe=lambda: NONE, cpu_probe=lambda: None).spec
    (warning,) = diagnose(spec, env)
    assert warning.id == "gpus-hidden"
    assert "ROCR_VISIBLE_DEVICES is ''" in str(warning)
    assert "CUDA_VISIBLE_DEVICES" not in str(warning)


def test_torchrun_on_an_amd_node_sees_the_node() -> None:
    spec = explain_environment(torchrun_env(1, 8, 3), gpu_probe=lambda: AMD_NODE).spec
    assert (spec.gpu_vendor, spec.gpus_per_node, spec.devices_per_node) == ("amd", 8, 8)


@pytest.mark.parametrize(
    ("mask", "composite", "devices"),
    [
        ("0,1", False, ("0", "1")),
        ("0.0,0.1,1.0", False, ("0.0", "0.1", "1.0")),
        ("0.0,0.1,1.0", True, ("0", "1.0")),
        ("0,x,,1,0", False, ("0", "1")),  # not an index: ignored, as by the driver
        ("", False, ()),
    ],
)
def test_ze_affinity_mask(mask: str, composite: bool, devices: tuple[str, ...]) -> None:
    assert parse_ze_affinity_mask(mask, composite=composite) == devices


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def test_sysfs_probe_finds_amd_gpus_by_kfd_topology(tmp_path: Path) -> None:
    nodes = tmp_path / "sys/class/kfd/kfd/topology/nodes"
    for node, gpu_id in enumerate(["0", "45412", "61808"]):  # node 0: the CPU socket
        _write(nodes / str(node) / "gpu_id", gpu_id)
        _write(nodes / str(node) / "name", "gfx90a" if node else "")
    _write(tmp_path / "sys/module/amdgpu/version", "6.3.6")
    found = probe_sysfs(str(tmp_path))
    assert found == GpuInventory(
        vendor=GpuVendor.AMD, devices=("0", "1"), models=("gfx90a",) * 2, driver="6.3.6"
    )


def test_sysfs_probe_finds_intel_data_centre_gpus_and_their_tiles(tmp_path: Path) -> None:
    drm = tmp_path / "sys/class/drm"
    cards = {"card0": ("0x8086", "0x030000", 1), "card1": ("0x8086", "0x038000", 2)}
    cards |= {"card2": ("0x8086", "0x038000", 2), "card3": ("0x10de", "0x030200", 1)}
    for card, (vendor, pci_class, tiles) in cards.items():
        _write(drm / card / "device/vendor", vendor)
        _write(drm / card / "device/class", pci_class)
        for tile in range(tiles):  # i915: gt/gtN; xe (card2): device/tileN
            tile_dir = (
                drm / card / "device" / f"tile{tile}"
                if card == "card2"
                else drm / card / "gt" / f"gt{tile}"
            )
            tile_dir.mkdir(parents=True)
    (drm / "renderD128").mkdir()
    found = probe_sysfs(str(tmp_path))
    assert found == GpuInventory(vendor=GpuVendor.INTEL, devices=("0.0", "0.1", "1.0", "1.1"))


def test_sysfs_probe_reads_only_regular_files(tmp_path: Path) -> None:
    nodes = tmp_path / "sys/class/kfd/kfd/topology/nodes/1"
    nodes.mkdir(parents=True)
    os.mkfifo(nodes / "gpu_id")  # a FIFO with no writer would block a plain open()
    assert probe_sysfs(str(tmp_path)) == GpuInventory()


@pytest.mark.parametrize(
    ("vendor", "name"), [("nvidia", "cuda"), ("amd", "cuda"), ("intel", "xpu")]
)
def test_lightning_accelerator_per_vendor(vendor: str, name: str) -> None:
    found = GpuInventory(vendor=GpuVendor(vendor), devices=("0", "1"))
    spec = explain_environment({}, gpu_probe=lambda: found, cpu_probe=lambda: None).spec
    assert cl.accelerator(spec) == name
    assert cl.accelerator(explain_environment({}, gpu_probe=lambda: NONE).spec) == "cpu"
