"""clusterenv: what resources does this process have, and what is its place in the job?

>>> import clusterenv
>>> spec = clusterenv.detect_environment({"CUDA_VISIBLE_DEVICES": ""})
>>> spec.source.value, spec.world_size, spec.accelerator.value
('local', 1, 'cpu')

Importing clusterenv never imports torch or lightning.
"""

from clusterenv._detect import detect_environment
from clusterenv._probe import ProbeError, ProbeReport, probe
from clusterenv._spec import Accelerator, ResourceSpec, Role, Source
from clusterenv.exceptions import (
    ClusterEnvError,
    HostlistError,
    InconsistentEnvironmentError,
    InvalidVariableError,
    MissingDependencyError,
    MissingVariableError,
)
from clusterenv.hostlist import compress_hostlist, expand_hostlist, first_host

__version__ = "0.1.0.dev0"

__all__ = [
    "Accelerator",
    "ClusterEnvError",
    "HostlistError",
    "InconsistentEnvironmentError",
    "InvalidVariableError",
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
    "first_host",
    "probe",
]
