"""A plain machine."""

from __future__ import annotations

from clusterenv._models.launch import Launch, check, ids

__all__ = ["examples", "local_env"]


def local_env(gpus: int | None = None) -> Launch:
    """A plain machine: nothing set, or ``CUDA_VISIBLE_DEVICES`` for ``gpus`` GPUs.

    With ``gpus=None`` detection asks the GPU probe; fake it with the ``fake_gpus``
    fixture of clusterenv's pytest plugin.
    """
    if gpus is None:
        return Launch({})
    check("local_env", gpus >= 0, f"gpus={gpus} is negative", "pass gpus >= 0 (0: no GPU)")
    return Launch({"CUDA_VISIBLE_DEVICES": ids(range(gpus))})


def examples() -> list[Launch]:
    """One launch per role this source produces: the contract tests run every source's."""
    return [local_env(2), local_env()]
