"""``jax.distributed`` from the detected spec, one process per GPU (srun, mpirun) or one per
node (a platform's node process driving all its GPUs), both.

    import clusterenv.jax

    clusterenv.jax.initialize()          # or: jax.distributed.initialize(**initialize_kwargs())

``local_device_ids`` are numbered as JAX sees the visible GPUs, after ``CUDA_VISIBLE_DEVICES``
(or ``ROCR_VISIBLE_DEVICES``) renumbered them. On CPUs the cross-process collectives use
gloo. JAX is imported only by :func:`initialize`, never by ``import clusterenv``.
"""

from __future__ import annotations

from typing import Any, cast

from clusterenv._adapters.frameworks import device_indices, endpoint, listen_port, processes
from clusterenv._core.spec import Accelerator, ResourceSpec
from clusterenv._diagnosis.preflight import preflight
from clusterenv._engine.detect import detect_environment

__all__ = ["initialize", "initialize_kwargs"]


def initialize_kwargs(spec: ResourceSpec | None = None) -> dict[str, Any]:
    """The arguments of ``jax.distributed.initialize`` for this process: the coordinator at
    the main address (on the next port where the launcher holds the main one), the number of
    processes, this one's index and, on GPUs, the local devices it drives."""
    spec = detect_environment() if spec is None else spec
    count, index = processes(spec)
    kwargs: dict[str, Any] = {
        "coordinator_address": endpoint(spec.master_addr, listen_port(spec)),
        "num_processes": count,
        "process_id": index,
    }
    devices = device_indices(spec)
    if devices:
        kwargs["local_device_ids"] = list(devices)
    return kwargs


def initialize(spec: ResourceSpec | None = None, **overrides: Any) -> ResourceSpec:
    """``jax.distributed.initialize`` from ``spec`` (detected when not given); ``overrides``
    replace any of its arguments; runs the pre-flight check (:func:`clusterenv.preflight`)
    first. Returns the spec."""
    import jax  # noqa: PLC0415 - only here: `import clusterenv.jax` must stay cheap

    spec = detect_environment() if spec is None else spec
    preflight(spec)
    if spec.accelerator is Accelerator.CPU:  # CPU collectives across processes need gloo
        # (cast: jax's config is untyped where jax is installed, absent where it is not)
        cast(Any, jax.config).update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(**(initialize_kwargs(spec) | overrides))
    return spec
