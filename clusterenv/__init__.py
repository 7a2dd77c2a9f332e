"""clusterenv: what resources does this process have, and what is its place in the job?

>>> import clusterenv
>>> spec = clusterenv.detect_environment({"CUDA_VISIBLE_DEVICES": ""})
>>> spec.source.value, spec.world_size, spec.accelerator.value
('local', 1, 'cpu')

Importing clusterenv never imports torch or lightning, and loads only what detection
needs: the probe (sockets, hmac, json) loads on first use of ``clusterenv.probe``, the
pre-flight check on first use of ``clusterenv.preflight``.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from clusterenv._adapters.rank_zero import is_rank_zero, rank_zero_only, rank_zero_print
from clusterenv._core.launch import Hints, LaunchFacts
from clusterenv._core.spec import Accelerator, GpuInventory, GpuVendor, ResourceSpec, Role, Source
from clusterenv._engine.detect import Detection, detect_environment, explain_environment
from clusterenv.exceptions import (
    ClusterEnvError,
    HostlistError,
    InconsistentEnvironmentError,
    InvalidVariableError,
    LaunchMismatchError,
    MissingDependencyError,
    MissingVariableError,
    PreflightError,
)
from clusterenv.hostlist import compress_hostlist, expand_hostlist, first_host

if TYPE_CHECKING:
    from clusterenv._diagnosis.preflight import preflight
    from clusterenv._probe import ProbeError, ProbeReport, probe

__version__ = "0.1.0.dev0"

#: Public names whose modules load on first use: name -> module.
_LAZY = dict.fromkeys(("probe", "ProbeError", "ProbeReport"), "clusterenv._probe")
_LAZY["preflight"] = "clusterenv._diagnosis.preflight"


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "Accelerator",
    "ClusterEnvError",
    "Detection",
    "GpuInventory",
    "GpuVendor",
    "Hints",
    "HostlistError",
    "InconsistentEnvironmentError",
    "InvalidVariableError",
    "LaunchFacts",
    "LaunchMismatchError",
    "MissingDependencyError",
    "MissingVariableError",
    "PreflightError",
    "ProbeError",
    "ProbeReport",
    "ResourceSpec",
    "Role",
    "Source",
    "__version__",
    "compress_hostlist",
    "detect_environment",
    "expand_hostlist",
    "explain_environment",
    "first_host",
    "is_rank_zero",
    "preflight",
    "probe",
    "rank_zero_only",
    "rank_zero_print",
]
