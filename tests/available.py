"""What a test needs that may be missing here: outside CI it skips with the reason; with
CI=true it fails the run, so that CI never passes by skipping."""

from __future__ import annotations

import importlib.util
import os
from typing import NoReturn

import pytest

__all__ = ["IN_CI", "require_modules", "unavailable"]

IN_CI = os.environ.get("CI", "").lower() == "true"
#: The limit on a subprocess of a test: a guard against a hang, never a speed check (a loaded
#: 2-core machine takes seconds to import Lightning).
HANG_GUARD_S = 300


def unavailable(reason: str) -> NoReturn:
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: a missing launcher fails the run)", pytrace=False)
    pytest.skip(reason)


def require_modules(*names: str) -> None:
    """Skip (fail in CI) unless every module in ``names`` is installed; at module level too."""
    missing = [name for name in names if importlib.util.find_spec(name) is None]
    if not missing:
        return
    reason = (
        f"{', '.join(missing)} not installed (pip install -e '.[dev,lightning,pytorch-lightning]')"
    )
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: a missing dependency fails the run)", pytrace=False)
    pytest.skip(reason, allow_module_level=True)
