"""Rank-zero helpers that work before torch.distributed exists, and never import Lightning."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec, TypeVar

from clusterenv._core.spec import Role
from clusterenv._engine.detect import explain_environment

__all__ = ["is_rank_zero", "rank_zero_only", "rank_zero_print"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


def is_rank_zero(env: Mapping[str, str] | None = None) -> bool:
    """True in the one process per job that should print and save.

    Works before ``torch.distributed`` is initialised: a rank of a launch asks its spec;
    a process that Lightning started itself (it sets ``LOCAL_RANK`` in the ones it
    spawns) is rank zero only as the first of them.
    """
    env = os.environ if env is None else env
    spec = explain_environment(env).spec
    if spec.role is Role.RANK:
        return spec.is_main_process
    return env.get("LOCAL_RANK", "0") == "0"


def rank_zero_only(function: Callable[_P, _R]) -> Callable[_P, _R | None]:
    """Decorator: call ``function`` on rank zero only (see :func:`is_rank_zero`)."""

    @functools.wraps(function)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R | None:
        return function(*args, **kwargs) if is_rank_zero() else None

    return wrapper


@rank_zero_only
def rank_zero_print(*values: object, **kwargs: Any) -> None:
    """``print`` on rank zero only."""
    print(*values, **kwargs)
