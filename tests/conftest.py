from __future__ import annotations

import os

import pytest
from hypothesis import settings

from clusterenv._diagnosis.capture import launcher_variables

pytest_plugins = ["pytester"]

# In CI the property tests draw the same examples on every run (a run lands or fails on the
# code, not on chance); locally they keep exploring.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI") == "true":
    settings.load_profile("ci")


@pytest.fixture(autouse=True)
def _no_real_launcher(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unit tests pass their environment explicitly; a test run inside a real job or
    under torchrun must not leak into ``os.environ``-based calls."""
    for name in launcher_variables(os.environ):
        monkeypatch.delenv(name)
    for name in [name for name in os.environ if name.startswith("CLUSTERENV_")]:
        monkeypatch.delenv(name)
    # The mocked launches' node names do not resolve on this machine: the adapters' pre-flight
    # check judges the launch, not this node (tests/test_preflight.py checks the node part).
    monkeypatch.setenv("CLUSTERENV_PREFLIGHT", "launch")
