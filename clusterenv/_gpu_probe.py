"""Which GPUs this machine has, asked of the drivers without torch: NVIDIA, AMD, Intel.

Each vendor is asked the cheapest way first. The kernel's own files (``/proc`` and
``/sys``, what ``nvidia-smi``, ``amd-smi`` and ``xpu-smi`` read themselves) cost well under
a millisecond; NVML and ``nvidia-smi`` only run where NVIDIA's driver is present. Files are
read through :func:`~clusterenv._reader.read_bytes` (regular files, bounded), every command
has a timeout, and nothing here raises: a missing or broken driver means no GPU.
"""

from __future__ import annotations

import os
from functools import cache

from clusterenv._reader import read_bytes
from clusterenv._spec import GpuInventory, GpuVendor

__all__ = ["probe_gpus", "probe_sysfs"]

_NVIDIA_PROC = "proc/driver/nvidia/gpus"
# ROCm's kernel driver lists one topology node per CPU socket and per GPU; a GPU node has
# a non-zero gpu_id (the layout rocminfo, amd-smi and PyTorch's amdsmi queries read).
_KFD_NODES = "sys/class/kfd/kfd/topology/nodes"
_DRM = "sys/class/drm"
_INTEL = "0x8086"
# PCI class 0x0380 ("display controller") is Intel's data-centre GPUs (Max, Flex); the
# integrated and client GPUs of laptops are 0x0300 (VGA) and are not training devices.
_INTEL_DATA_CENTRE_CLASS = "0x0380"


@cache
def probe_gpus() -> GpuInventory:
    """This machine's GPUs: NVIDIA's, else AMD's, else Intel's. Asked once per process
    (the hardware does not change under a running process)."""
    found = probe_sysfs("/")
    if found.devices and found.vendor is not GpuVendor.NVIDIA:
        return found
    nvml = _nvml()  # NVML first: in a container it counts what the container may use
    if nvml is not None:
        return nvml
    return found if found.devices else _nvidia_smi()


def probe_sysfs(root: str) -> GpuInventory:
    """The GPUs that the kernel's files under ``root`` (``/`` on a real machine) describe."""
    for vendor, probe in (
        (GpuVendor.NVIDIA, _nvidia_proc),
        (GpuVendor.AMD, _amd_kfd),
        (GpuVendor.INTEL, _intel_drm),
    ):
        devices = probe(root)
        if devices:
            return GpuInventory(vendor=vendor, devices=devices)
    return GpuInventory()


def _listdir(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _read(path: str) -> str:
    try:
        return read_bytes(path).decode("ascii", errors="replace").strip()
    except OSError:
        return ""


def _indices(count: int) -> tuple[str, ...]:
    return tuple(str(index) for index in range(count))


def _nvidia_proc(root: str) -> tuple[str, ...]:
    return _indices(len(_listdir(os.path.join(root, _NVIDIA_PROC))))


def _amd_kfd(root: str) -> tuple[str, ...]:
    nodes = os.path.join(root, _KFD_NODES)
    gpus = [n for n in _listdir(nodes) if _read(os.path.join(nodes, n, "gpu_id")) not in ("", "0")]
    return _indices(len(gpus))


def _intel_drm(root: str) -> tuple[str, ...]:
    """Intel data-centre GPUs as ``card.tile`` ids (``"0.0"``, ``"0.1"``): with Level
    Zero's default flat hierarchy every tile is a device."""
    drm = os.path.join(root, _DRM)
    cards = [name for name in _listdir(drm) if name.startswith("card") and name[4:].isdigit()]
    gpus = []
    for card in sorted(cards, key=lambda name: int(name[4:])):
        device = os.path.join(drm, card, "device")
        if _read(os.path.join(device, "vendor")) == _INTEL and _read(
            os.path.join(device, "class")
        ).startswith(_INTEL_DATA_CENTRE_CLASS):
            gpus.append(sum(gt.startswith("gt") for gt in _listdir(os.path.join(drm, card, "gt"))))
    return tuple(f"{gpu}.{tile}" for gpu, tiles in enumerate(gpus) for tile in range(max(1, tiles)))


def _nvml() -> GpuInventory | None:
    try:
        import pynvml  # noqa: PLC0415 - the optional `nvml` extra, only imported when probing
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        try:
            count = pynvml.nvmlDeviceGetCount()
        finally:
            pynvml.nvmlShutdown()
    except pynvml.NVMLError:
        return None
    return GpuInventory(vendor=GpuVendor.NVIDIA, devices=_indices(count)) if count else None


def _nvidia_smi() -> GpuInventory:
    import shutil  # noqa: PLC0415 - only here: these imports would cost every caller ~5 ms
    import subprocess  # noqa: PLC0415

    smi = shutil.which("nvidia-smi")
    if smi is None:
        return GpuInventory()
    try:
        listing = subprocess.run(
            [smi, "-L"], capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return GpuInventory()
    count = sum(line.startswith("GPU ") for line in listing.stdout.splitlines())
    return (
        GpuInventory(vendor=GpuVendor.NVIDIA, devices=_indices(count)) if count else GpuInventory()
    )
