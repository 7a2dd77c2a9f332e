"""pytest plugin (active once clusterenv is installed): fixtures for launcher environments.

    def test_rank_five(cluster_env):
        cluster_env(slurm_env(nodes=2, tasks_per_node=4, gpus_per_node=4, procid=5))
        assert clusterenv.detect_environment().global_rank == 5

``cluster_env(mapping)`` first removes every launcher variable of the real environment
(a test run inside a Slurm job or under torchrun must not leak into the test), then sets
``mapping``. The pre-flight check of the adapters judges the mocked launch; this machine's
name service and interfaces only when the mapping names this machine among the job's
hosts (the mocked nodes' names need not resolve here). ``fake_gpus(n, vendor)`` makes this
machine look as if it had ``n`` GPUs, for clusterenv's probe and for ``torch.cuda``. Both
are undone after the test.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Callable, Mapping

import pytest

from clusterenv._core.spec import GpuInventory, GpuVendor
from clusterenv._diagnosis.capture import launcher_variables
from clusterenv._models.launch import check

#: More GPUs than any node has (16 GPUs, or 8 with 12 tiles each, is the most today).
MAX_GPUS = 256
_N_HINT = f"pass a number of GPUs from 0 to {MAX_GPUS}"

__all__ = ["cluster_env", "fake_gpus"]


@pytest.fixture
def cluster_env(monkeypatch: pytest.MonkeyPatch) -> Callable[[Mapping[str, str]], dict[str, str]]:
    """Replace the launcher variables of ``os.environ`` by a mapping; returns the mapping."""

    def apply(env: Mapping[str, str]) -> dict[str, str]:
        for name in launcher_variables(os.environ, redact=False):
            monkeypatch.delenv(name)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        return dict(env)

    return apply


@pytest.fixture
def fake_gpus(monkeypatch: pytest.MonkeyPatch) -> Callable[..., tuple[str, ...]]:
    """Pretend this machine has ``n`` GPUs (0 for none) of ``vendor`` (``"nvidia"``,
    ``"amd"`` or ``"intel"``); returns their ids.

    Patches clusterenv's GPU probe (used where no visible-devices variable decides) and,
    when torch is installed, ``torch.cuda.device_count`` / ``is_available`` (what PyTorch's
    CUDA and ROCm builds answer; Intel's ``torch.xpu`` is left alone).
    """

    def apply(n: int, vendor: str = "nvidia") -> tuple[str, ...]:
        check(
            "fake_gpus",
            type(n) is int and 0 <= n <= MAX_GPUS,
            f"n={n!r} is not a number of GPUs",
            _N_HINT,
        )
        vendors = [member.value for member in GpuVendor]
        check(
            "fake_gpus",
            vendor in vendors,
            f"vendor={vendor!r} is not a GPU vendor",
            f"pass one of {vendors}",
        )
        ids = tuple(str(index) for index in range(n))
        found = GpuInventory(vendor=GpuVendor(vendor) if n else None, devices=ids)
        monkeypatch.setattr("clusterenv._engine.detect.probe_gpus", lambda: found)
        if importlib.util.find_spec("torch") is not None and vendor != "intel":
            cuda = importlib.import_module("torch.cuda")
            monkeypatch.setattr(cuda, "device_count", lambda: n)
            monkeypatch.setattr(cuda, "is_available", lambda: n > 0)
        return ids

    return apply
