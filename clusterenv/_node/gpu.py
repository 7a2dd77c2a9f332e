"""Which GPUs this process may use, by each vendor's runtime rules, without importing torch.

Which vendor's rules apply: the vendor whose variables are set, where only one vendor's
are (``ROCR_VISIBLE_DEVICES`` on an AMD node); otherwise this machine's GPUs decide (the
probe), because Slurm sets every vendor's variable unless gres.conf names the vendor
(``Flags=amd_gpu_env``, gres.conf(5)). With neither, ``CUDA_VISIBLE_DEVICES`` means NVIDIA.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from clusterenv._core.finding import Finding
from clusterenv._core.reader import EnvReader, GpuProbe
from clusterenv._core.safe import shorten
from clusterenv._core.spec import Accelerator, Fields, GpuInventory, GpuVendor, ResourceSpec, Role
from clusterenv.exceptions import InconsistentEnvironmentError

__all__ = [
    "GPU_VARIABLES",
    "VENDOR_VARIABLES",
    "Gpus",
    "gpu_findings",
    "inventory",
    "parse_cuda_visible_devices",
    "parse_ze_affinity_mask",
    "visible_gpus",
]

#: The variables that choose the visible GPUs, per vendor, in the runtime's precedence.
VENDOR_VARIABLES: dict[GpuVendor, tuple[str, ...]] = {
    GpuVendor.NVIDIA: ("CUDA_VISIBLE_DEVICES",),
    GpuVendor.AMD: ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"),
    GpuVendor.INTEL: ("ZE_AFFINITY_MASK", "ONEAPI_DEVICE_SELECTOR"),
}
#: Every variable read here (``clusterenv capture`` records them).
GPU_VARIABLES = (
    *(n for names in VENDOR_VARIABLES.values() for n in names),
    "ZE_FLAT_DEVICE_HIERARCHY",
)

_LEADING_INDEX = re.compile(r"\+?([0-9]{1,9})")  # strtoul's digits; -N ends the list
_ZE_ENTRY = re.compile(r"[0-9]{1,9}(?:\.[0-9]{1,9}){0,2}")


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


def parse_ze_affinity_mask(value: str, *, composite: bool = False) -> tuple[str, ...]:
    """Devices that Level Zero's ``ZE_AFFINITY_MASK`` exposes: ``0,1`` are devices, ``0.1``
    tile 1 of device 0. In the default flat hierarchy every entry is a device (a rank per
    tile on Aurora: ``0.0``); with ``ZE_FLAT_DEVICE_HIERARCHY=COMPOSITE`` several tiles of
    one device are that device. Entries that are not indices are ignored, as by the driver.
    """
    entries = list(
        dict.fromkeys(e.strip() for e in value.split(",") if _ZE_ENTRY.fullmatch(e.strip()))
    )
    if not composite:
        return tuple(entries)
    roots: dict[str, list[str]] = {}
    for entry in entries:
        roots.setdefault(entry.partition(".")[0], []).append(entry)
    return tuple(tiles[0] if len(tiles) == 1 else root for root, tiles in roots.items())


def _rocm_devices(reader: EnvReader, found: GpuInventory) -> tuple[str, ...]:
    """ROCm's rules, as PyTorch's ROCm build counts them: ``ROCR_VISIBLE_DEVICES`` first,
    then ``HIP_VISIBLE_DEVICES`` (or ``CUDA_VISIBLE_DEVICES``) picks among those."""
    env = reader.env
    rocr, hip = env.get("ROCR_VISIBLE_DEVICES"), env.get("HIP_VISIBLE_DEVICES")
    if rocr is not None:
        runtime = tuple(entry.strip() for entry in rocr.split(",") if entry.strip())
        if hip is None:
            reader.note("visible_devices", "ROCR_VISIBLE_DEVICES")
            return runtime
        chosen = parse_cuda_visible_devices(hip)
        if len(chosen) > len(runtime):
            raise InconsistentEnvironmentError(
                f"HIP_VISIBLE_DEVICES={shorten(hip)!r} names {len(chosen)} GPUs but "
                f"ROCR_VISIBLE_DEVICES={shorten(rocr)!r} leaves {len(runtime)}",
                variables=("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"),
                hint="HIP_VISIBLE_DEVICES indexes the GPUs ROCR_VISIBLE_DEVICES leaves; "
                "set only ROCR_VISIBLE_DEVICES",
            )
        reader.note("visible_devices", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")
        return chosen
    for name in ("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"):
        if name in env:
            reader.note("visible_devices", name)
            return parse_cuda_visible_devices(env[name])
    return found.devices


def _level_zero_devices(reader: EnvReader, found: GpuInventory) -> tuple[str, ...]:
    """Level Zero's rules: ``ZE_AFFINITY_MASK``, else a plain ``level_zero:0,1`` selector."""
    env = reader.env
    composite = env.get("ZE_FLAT_DEVICE_HIERARCHY", "").strip().upper() in ("COMPOSITE", "COMBINED")
    if "ZE_AFFINITY_MASK" in env:
        reader.note("visible_devices", "ZE_AFFINITY_MASK", "ZE_FLAT_DEVICE_HIERARCHY")
        return parse_ze_affinity_mask(env["ZE_AFFINITY_MASK"], composite=composite)
    backend, _, selected = env.get("ONEAPI_DEVICE_SELECTOR", "").strip().partition(":")
    if backend == "level_zero" and all(_ZE_ENTRY.fullmatch(e.strip()) for e in selected.split(",")):
        reader.note("visible_devices", "ONEAPI_DEVICE_SELECTOR")
        return parse_ze_affinity_mask(selected, composite=composite)
    if composite:  # one device per card, not per tile
        return tuple(dict.fromkeys(device.partition(".")[0] for device in found.devices))
    return found.devices


def inventory(gpu_probe: GpuProbe) -> GpuInventory:
    """What ``gpu_probe`` found, as an inventory; ``None`` means it could not tell (none)."""
    found = gpu_probe()
    if isinstance(found, GpuInventory):
        return found
    devices = tuple(found or ())  # a plain list of ids: NVIDIA's, as before vendors were known
    return GpuInventory(vendor=GpuVendor.NVIDIA if devices else None, devices=devices)


def _vendor(env: Mapping[str, str], gpu_probe: GpuProbe) -> tuple[GpuVendor | None, GpuInventory]:
    named = [v for v, names in VENDOR_VARIABLES.items() if any(n in env for n in names)]
    if len(named) == 1:
        return named[0], GpuInventory()
    found = inventory(gpu_probe)  # none or several vendors' variables: the machine decides
    if found.devices and found.vendor is not None:
        return found.vendor, found
    return (named[0] if named else None), found


def visible_gpus(
    reader: EnvReader, gpu_probe: GpuProbe
) -> tuple[GpuVendor | None, tuple[str, ...]]:
    """The vendor and the ids of the GPUs this process may use: its vendor's variables
    where set (even empty: none), else whatever ``gpu_probe`` finds."""
    vendor, found = _vendor(reader.env, gpu_probe)
    if vendor is GpuVendor.AMD:
        devices = _rocm_devices(reader, found)
    elif vendor is GpuVendor.INTEL:
        devices = _level_zero_devices(reader, found)
    elif "CUDA_VISIBLE_DEVICES" in reader.env:
        reader.note("visible_devices", "CUDA_VISIBLE_DEVICES")
        devices = parse_cuda_visible_devices(reader.env["CUDA_VISIBLE_DEVICES"])
    else:
        devices = found.devices
    if vendor is not None:
        reader.note("gpu_vendor", *VENDOR_VARIABLES[vendor])
    return vendor, devices


class Gpus:
    """The GPUs this process sees, found once, on first use: the GPU fields of every spec
    whose source grants none, and the rank count of a source that runs one rank per GPU."""

    def __init__(self, reader: EnvReader, gpu_probe: GpuProbe) -> None:
        self._reader, self._probe = reader, gpu_probe
        self._visible: tuple[GpuVendor | None, tuple[str, ...]] | None = None

    def visible(self) -> tuple[GpuVendor | None, tuple[str, ...]]:
        """The vendor and the ids of the GPUs this process may use (:func:`visible_gpus`)."""
        if self._visible is None:
            self._visible = visible_gpus(self._reader, self._probe)
        return self._visible

    def __call__(self) -> Fields:
        """``accelerator``, ``gpus_per_node``, ``visible_devices`` and ``gpu_vendor``."""
        vendor, devices = self.visible()
        self._reader.derive("gpus_per_node", "visible_devices")
        return {
            "accelerator": Accelerator.GPU if devices else Accelerator.CPU,
            "gpus_per_node": len(devices),
            "visible_devices": devices,
            "gpu_vendor": vendor if devices else None,
        }

    @property
    def count(self) -> int:
        """How many GPUs this process sees."""
        return self()["gpus_per_node"]


def gpu_findings(spec: ResourceSpec, env: Mapping[str, str]) -> list[Finding]:
    """What makes a rank miss its GPU: none visible of those granted, two vendors' masks at
    once, several MIG slices (CUDA uses one), a local rank past the GPUs this task sees, GPU
    ids that code may mistake for device indices."""
    found = []
    if spec.gpus_per_node and not spec.visible_devices and spec.role is not Role.SHELL:
        names = VENDOR_VARIABLES[spec.gpu_vendor or GpuVendor.NVIDIA]
        name = next((name for name in names if name in env), names[0])
        shown = repr(shorten(env[name])) if name in env else "unset"
        found.append(
            Finding(
                id="gpus-hidden",
                message=f"{spec.gpus_per_node} GPUs per node are allocated but {name} is "
                f"{shown} and none is visible",
                fix=f"do not set {name} in the job script",
            )
        )
    if "ROCR_VISIBLE_DEVICES" in env and "HIP_VISIBLE_DEVICES" in env:
        rocr, hip = shorten(env["ROCR_VISIBLE_DEVICES"]), shorten(env["HIP_VISIBLE_DEVICES"])
        found.append(
            Finding(
                id="gpus-double-mask",
                message=f"ROCR_VISIBLE_DEVICES={rocr!r} and HIP_VISIBLE_DEVICES={hip!r}: HIP "
                "numbers the GPUs ROCr left visible from 0, so the second mask picks among "
                "those, and PyTorch may find no GPU at all",
                fix="set one of them (Slurm sets ROCR_VISIBLE_DEVICES; unset HIP_VISIBLE_DEVICES)",
            )
        )
    slices = [d for d in spec.visible_devices if d.startswith("MIG-")]
    if len(slices) > 1:
        found.append(
            Finding(
                id="gpus-several-mig",
                message=f"{len(slices)} MIG slices visible to one process "
                f"({shorten(', '.join(slices))}): CUDA uses only the first",
                fix="give each rank one slice (one task per MIG device, or "
                "CUDA_VISIBLE_DEVICES=<its MIG UUID> per rank)",
            )
        )
    seen = len(spec.visible_devices)
    if spec.role is Role.RANK and 0 < seen <= spec.local_rank < spec.devices_per_node:
        found.append(
            Finding(
                id="gpus-per-task",
                message=f"local rank {spec.local_rank} will ask for GPU {spec.local_rank}, "
                f"which this task cannot see: it sees {seen} "
                f"({shorten(','.join(spec.visible_devices))}), as a per-task binding gives",
                fix="let every task see all GPUs of its node (srun --gpu-bind=none, "
                "--gpus-per-node instead of --gpus-per-task), or index the GPUs this task "
                "sees (clusterenv.torch.device())",
            )
        )
    per_task = any(finding.id == "gpus-per-task" for finding in found)  # says it already
    return found if per_task else found + _not_from_zero(spec, env)


def _not_from_zero(spec: ResourceSpec, env: Mapping[str, str]) -> list[Finding]:
    """GPU ids that do not start at 0 (``CUDA_VISIBLE_DEVICES=2,3``: a part of a node, no
    cgroup renumbering): right as they are, but the runtimes number them from 0, so code that
    passes the ids as device indices asks for GPUs that do not exist (JAX issue 23452)."""
    names = VENDOR_VARIABLES[spec.gpu_vendor or GpuVendor.NVIDIA]
    name = next((name for name in names if name in env), None)
    ids = spec.visible_devices
    if name is None or spec.role is Role.SHELL or not ids or not all(i.isdigit() for i in ids):
        return []
    if min(len(i) for i in ids) > 4 or min(int(i) for i in ids) == 0:
        return []
    gpus = (
        f"GPUs {ids[0]}, {ids[1]}{', ...' if len(ids) > 2 else ''}" if ids[1:] else f"GPU {ids[0]}"
    )
    numbers = f"0..{len(ids) - 1}" if ids[1:] else "0"
    return [
        Finding(
            id="gpus-not-from-zero",
            message=f"{name}={shorten(env[name])!r}: this task has {gpus} of its node, which "
            f"CUDA, ROCm, PyTorch and JAX number {numbers}: code that passes the ids as device "
            "indices "
            f"(torch.device('cuda:{ids[0]}'), jax.distributed.initialize(local_device_ids="
            f"[{ids[0]}])) fails with 'invalid device ordinal'",
            fix="index the visible GPUs from 0, never by the ids in the variable "
            "(clusterenv.torch.device() and clusterenv.jax.initialize() do)",
            level="info",
        )
    ]
