"""clusterenv: what resources does this process have, and what is its place in the job?

>>> import clusterenv
>>> spec = clusterenv.detect_environment({"CUDA_VISIBLE_DEVICES": ""})
>>> spec.source.value, spec.world_size, spec.accelerator.value
('local', 1, 'cpu')

Importing clusterenv never imports torch or lightning.
"""

from clusterenv._detect import Detection, detect_environment, explain_environment
from clusterenv._probe import ProbeReport, probe
from clusterenv._rank_zero import is_rank_zero, rank_zero_only, rank_zero_print
from clusterenv._spec import Accelerator, GpuInventory, GpuVendor, ResourceSpec, Role, Source
from clusterenv.exceptions import (
    ClusterEnvError,
    HostlistError,
    InconsistentEnvironmentError,
    InvalidVariableError,
    LaunchMismatchError,
    MissingDependencyError,
    MissingVariableError,
    ProbeError,
)
from clusterenv.hostlist import compress_hostlist, expand_hostlist, first_host

__version__ = "0.1.0.dev0"

__all__ = [
    "Accelerator",
    "ClusterEnvError",
    "Detection",
    "GpuInventory",
    "GpuVendor",
    "HostlistError",
    "InconsistentEnvironmentError",
    "InvalidVariableError",
    "LaunchMismatchError",
    "MissingDependencyError",
    "MissingVariableError",
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
    "probe",
    "rank_zero_only",
    "rank_zero_print",
]
