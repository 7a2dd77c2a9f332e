"""Which CUDA devices this process may use, without importing torch."""

from __future__ import annotations

import os
import re

from clusterenv._reader import EnvReader, GpuProbe
from clusterenv._spec import Accelerator, Fields

__all__ = ["gpu_fields", "parse_cuda_visible_devices", "probe_gpus", "visible_gpus"]

_LEADING_INDEX = re.compile(r"\+?([0-9]{1,9})")  # strtoul's digits; -N ends the list
_PROC_GPUS = "/proc/driver/nvidia/gpus"


def parse_cuda_visible_devices(value: str) -> tuple[str, ...]:
    """Device ids in ``CUDA_VISIBLE_DEVICES``, as the CUDA runtime reads them.

    The rules are those PyTorch's ``torch.cuda._parse_visible_devices`` reproduces from
    the CUDA runtime: a list of ``GPU-``/``MIG-`` UUIDs (all with the prefix of the first;
    the list ends at the first that lacks it), or of indices each read like C's
    ``strtoul`` (``" 2 "`` is 2, ``"+1"`` is 1, ``"1e3"`` and ``"1gpu"`` are 1) where a
    negative or non-numeric entry ends the list (``"0,-1,1"`` is ``0``; ``""``, ``"-1"``
    and Slurm's ``"NoDevFiles"`` are none) and a repeated one hides every GPU
    (``"0,0"`` is none).
    """
    stripped = value.strip()
    prefix = next((p for p in ("GPU-", "MIG-") if stripped.startswith(p)), None)
    devices: list[str] = []
    for entry in stripped.split(",") if prefix else value.split(","):
        if prefix is not None:
            if not entry.startswith(prefix):
                break
            device = entry
        else:
            number = _LEADING_INDEX.match(entry.strip())
            if number is None:
                break
            device = str(int(number.group(1)))
        if device in devices:
            return ()
        devices.append(device)
    return tuple(devices)


def probe_gpus() -> tuple[str, ...]:
    """Indices of the NVIDIA GPUs on this machine: NVML, else the driver's /proc, else nvidia-smi.

    Never raises: a missing or broken driver means no GPU.
    """
    try:
        import pynvml  # noqa: PLC0415 - the optional `nvml` extra, only imported when probing
    except ImportError:
        pass
    else:
        try:
            pynvml.nvmlInit()
            try:
                return tuple(str(i) for i in range(pynvml.nvmlDeviceGetCount()))
            finally:
                pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass
    try:
        return tuple(str(i) for i in range(len(os.listdir(_PROC_GPUS))))
    except OSError:
        pass
    import shutil  # noqa: PLC0415 - only here: these imports would cost every caller ~5 ms
    import subprocess  # noqa: PLC0415

    smi = shutil.which("nvidia-smi")
    if smi is None:
        return ()
    try:
        listing = subprocess.run(
            [smi, "-L"], capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return ()
    count = sum(line.startswith("GPU ") for line in listing.stdout.splitlines())
    return tuple(str(i) for i in range(count))


def visible_gpus(reader: EnvReader, gpu_probe: GpuProbe) -> tuple[str, ...]:
    """``CUDA_VISIBLE_DEVICES`` when set (even empty), else whatever ``gpu_probe`` finds."""
    value = reader.env.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return tuple(gpu_probe())
    reader.note("visible_devices", "CUDA_VISIBLE_DEVICES")
    return parse_cuda_visible_devices(value)


def gpu_fields(reader: EnvReader, gpu_probe: GpuProbe) -> Fields:
    """``accelerator``, ``gpus_per_node`` and ``visible_devices`` for a source whose GPUs
    per node are the ones this process sees."""
    devices = visible_gpus(reader, gpu_probe)
    reader.derive("gpus_per_node", "visible_devices")
    return {
        "accelerator": Accelerator.GPU if devices else Accelerator.CPU,
        "gpus_per_node": len(devices),
        "visible_devices": devices,
    }
