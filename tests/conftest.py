from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True)
def _no_real_launcher(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unit tests pass their environment explicitly; a test run inside a real job or
    under torchrun must not leak into ``os.environ``-based calls."""
    for name in list(os.environ):
        if name.startswith(("SLURM_", "TORCHELASTIC_", "CLUSTERENV_")) or name in (
            "CUDA_VISIBLE_DEVICES",
            "MASTER_ADDR",
            "MASTER_PORT",
        ):
            monkeypatch.delenv(name)
