"""Which variables describe a launch, for `clusterenv capture` and the recorded test captures."""

from __future__ import annotations

from collections.abc import Mapping

from clusterenv._core.safe import redact_value
from clusterenv._diagnosis.machine import is_network
from clusterenv._engine.detect import FORCE_VARIABLE, MAIN_ADDR_TEMPLATE
from clusterenv._node.gpu import GPU_VARIABLES
from clusterenv.sources import read_by_a_source

__all__ = ["launcher_variables"]

# Besides each source's own variables: the GPUs (read by clusterenv._node.gpu), clusterenv's own
# overrides, and the network variables that decide whether rendezvous and collectives connect.
_CORE_PREFIXES = ("CUDA_",)
_CORE_NAMES = frozenset({FORCE_VARIABLE, MAIN_ADDR_TEMPLATE, *GPU_VARIABLES})


def _captured(name: str, env: Mapping[str, str]) -> bool:
    return (
        name.startswith(_CORE_PREFIXES)
        or name in _CORE_NAMES
        or read_by_a_source(name, env)
        or is_network(name)
    )


def launcher_variables(env: Mapping[str, str], *, redact: bool = True) -> dict[str, str]:
    """The scheduler, launcher, GPU and network variables of ``env``, sorted; secrets redacted by
    name and by value (:mod:`clusterenv._core.safe`)."""
    return {
        name: redact_value(name, value) if redact else value
        for name, value in sorted(env.items())
        if _captured(name, env)
    }
