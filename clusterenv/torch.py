"""Plain ``torch.distributed`` from the detected spec: the process group and this rank's
device, whatever launched it (srun, torchrun, mpirun, the DeepSpeed launcher, a platform).

    import clusterenv.torch

    spec = clusterenv.torch.init_process_group()   # nccl on NVIDIA/AMD, xccl on Intel, else gloo
    model = model.to(clusterenv.torch.device(spec))

torch is imported here, never by ``import clusterenv``.
"""

from __future__ import annotations

import warnings
from datetime import timedelta

import torch
import torch.distributed as dist

from clusterenv._adapters.frameworks import device_indices, endpoint, processes
from clusterenv._core.spec import GpuVendor, ResourceSpec
from clusterenv._diagnosis.preflight import preflight
from clusterenv._engine.detect import detect_environment, launch_facts

__all__ = ["device", "init_process_group"]

#: torch's device type per GPU vendor: ROCm builds answer to "cuda" too.
_DEVICE_TYPES = {GpuVendor.NVIDIA: "cuda", GpuVendor.AMD: "cuda", GpuVendor.INTEL: "xpu"}
_BACKENDS = {"cuda": "nccl", "xpu": "xccl", "cpu": "gloo"}


def device(spec: ResourceSpec | None = None) -> torch.device:
    """This rank's device: its GPU as the runtime numbers the visible ones (after
    ``CUDA_VISIBLE_DEVICES`` renumbered them), else the CPU."""
    spec = detect_environment() if spec is None else spec
    indices = device_indices(spec)
    if not indices or spec.gpu_vendor is None:
        return torch.device("cpu")
    kind = _DEVICE_TYPES[spec.gpu_vendor]
    if not getattr(torch, kind).is_available():  # a CPU build, or a launcher's fake GPUs
        warnings.warn(
            f"clusterenv: the launch gives this rank GPUs {','.join(spec.visible_devices)} but "
            f"torch {torch.__version__} sees no {kind} device: using the CPU",
            stacklevel=2,
        )
        return torch.device("cpu")
    return torch.device(kind, indices[0])


def init_process_group(
    backend: str | None = None,
    *,
    timeout: float | timedelta | None = None,
    spec: ResourceSpec | None = None,
) -> ResourceSpec:
    """Set this rank's device and initialise the default process group from ``spec``
    (detected when not given), not from whatever variables happen to be set; returns the
    spec. ``backend`` defaults to the device's (nccl, xccl or gloo); ``timeout`` is in
    seconds or a ``timedelta``. Raises :class:`~clusterenv.ClusterEnvError` where this
    process is not a rank (a batch step, a salloc shell); runs the pre-flight check
    (:func:`clusterenv.preflight`) first."""
    spec = detect_environment() if spec is None else spec
    preflight(spec)
    world, rank = processes(spec)
    here = device(spec)
    if here.type == "cuda":
        torch.cuda.set_device(here)
    elif here.type == "xpu":
        torch.xpu.set_device(here)
    # Where the launcher holds the main port (torchrun's agent store) its workers join that
    # store through env://, whose variables it set; elsewhere rank 0 listens on it.
    if launch_facts(spec).holds_main_port:
        init_method = "env://"
    else:
        init_method = f"tcp://{endpoint(spec.master_addr, spec.master_port)}"
    seconds = timedelta(seconds=timeout) if isinstance(timeout, (int, float)) else timeout
    dist.init_process_group(
        backend or _BACKENDS[here.type],
        init_method=init_method,
        world_size=world,
        rank=rank,
        timeout=seconds,
    )
    return spec
