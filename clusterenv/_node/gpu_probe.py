"""Which GPUs this machine has, asked of the drivers without torch: NVIDIA, AMD, Intel.

Each vendor is asked the cheapest way first. The kernel's own files (``/proc`` and
``/sys``, what ``nvidia-smi``, ``amd-smi`` and ``xpu-smi`` read themselves) cost well under
a millisecond; NVML and ``nvidia-smi`` only run where NVIDIA's driver is present. Files are
read through :func:`~clusterenv._core.hostfile.read_bytes` (regular files, bounded), every command
has a timeout, and nothing here raises: a missing or broken driver means no GPU.
"""

from __future__ import annotations

import os
from functools import cache

from clusterenv._core.hostfile import read_bytes
from clusterenv._core.spec import GpuInventory, GpuVendor

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
    for probe in (_nvidia_proc, _amd_kfd, _intel_drm):
        found = probe(root)
        if found.devices:
            return found
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


def _field(text: str, key: str) -> str:
    """The value of ``key:`` in a ``Key: value`` file ('' where absent)."""
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == key:
            return value.strip()
    return ""


def _nvidia_proc(root: str) -> GpuInventory:
    gpus = os.path.join(root, _NVIDIA_PROC)
    addresses = _listdir(gpus)
    models = [_field(_read(os.path.join(gpus, a, "information")), "Model") for a in addresses]
    version = _read(os.path.join(root, "proc/driver/nvidia/version")).split("Kernel Module")
    return GpuInventory(
        vendor=GpuVendor.NVIDIA,
        devices=_indices(len(addresses)),
        models=tuple(model for model in models if model),
        driver=version[1].split()[0] if len(version) > 1 and version[1].split() else None,
    )


def _amd_kfd(root: str) -> GpuInventory:
    nodes = os.path.join(root, _KFD_NODES)
    gpus = [n for n in _listdir(nodes) if _read(os.path.join(nodes, n, "gpu_id")) not in ("", "0")]
    models = [_read(os.path.join(nodes, n, "name")) for n in gpus]  # the gfx target: gfx90a
    return GpuInventory(
        vendor=GpuVendor.AMD,
        devices=_indices(len(gpus)),
        models=tuple(model for model in models if model),
        driver=_read(os.path.join(root, "sys/module/amdgpu/version")) or None,
    )


def _intel_drm(root: str) -> GpuInventory:
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
            gpus.append(_tiles(os.path.join(drm, card)))
    devices = [f"{gpu}.{tile}" for gpu, tiles in enumerate(gpus) for tile in range(max(1, tiles))]
    return GpuInventory(vendor=GpuVendor.INTEL, devices=tuple(devices))


def _tiles(card: str) -> int:
    """A card's tiles: ``gt/gtN`` under the i915 driver, ``device/tileN`` under xe."""
    i915 = sum(name.startswith("gt") for name in _listdir(os.path.join(card, "gt")))
    return i915 or sum(name.startswith("tile") for name in _listdir(os.path.join(card, "device")))


def _nvml() -> GpuInventory | None:
    try:
        import pynvml  # noqa: PLC0415 - the optional `nvml` extra, only imported when probing
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        try:
            handles = [
                pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())
            ]
            models = tuple(
                f"{_text(pynvml.nvmlDeviceGetName(h))} "
                f"({pynvml.nvmlDeviceGetMemoryInfo(h).total >> 30} GiB)"
                for h in handles
            )
            driver = _text(pynvml.nvmlSystemGetDriverVersion())
        finally:
            pynvml.nvmlShutdown()
    except pynvml.NVMLError:
        return None
    if not handles:
        return None
    return GpuInventory(
        vendor=GpuVendor.NVIDIA, devices=_indices(len(handles)), models=models, driver=driver
    )


def _text(value: str | bytes) -> str:
    """NVML's strings: ``bytes`` in older pynvml releases."""
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def _nvidia_smi() -> GpuInventory:
    import shutil  # noqa: PLC0415 - only here: these imports would cost every caller ~5 ms
    import subprocess  # noqa: PLC0415

    smi = shutil.which("nvidia-smi")
    if smi is None:
        return GpuInventory()
    try:
        listing = subprocess.run(
            # Bounded tightly: this may run on the detection path, and a wedged driver
            # makes nvidia-smi hang.
            [smi, "-L"],
            capture_output=True,
            text=True,
            errors="replace",  # never a crash on the output's bytes
            timeout=2,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return GpuInventory()
    # "GPU 0: NVIDIA H200 (UUID: GPU-...)"
    models = [
        line.partition(": ")[2].rpartition(" (UUID")[0]
        for line in listing.stdout.splitlines()
        if line.startswith("GPU ")
    ]
    if not models:
        return GpuInventory()
    return GpuInventory(
        vendor=GpuVendor.NVIDIA, devices=_indices(len(models)), models=tuple(models)
    )
