"""Which variables describe a launch, for `clusterenv capture` and the recorded test captures."""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["launcher_variables"]

_PREFIXES = (
    "SLURM_",
    "SLURMD_",
    "TORCHELASTIC_",
    "OMPI_",
    "PMI_",
    "PMIX_",
    "MPI_",
    "MV2_",
    "FLUX_",
    "LSB_",
    "LSF_",
    "JSM_",
    "PBS_",
    "CUDA_",
)
_NAMES = frozenset(
    [
        *("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE"),
        *("ROLE_RANK", "ROLE_WORLD_SIZE", "ROLE_NAME", "MASTER_ADDR", "MASTER_PORT", "NODE_RANK"),
        *("ENVIRONMENT", "OMP_NUM_THREADS", "CLUSTERENV_SOURCE", "NCPUS"),
        *("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"),
    ]
)
_SECRET = re.compile(r"TOKEN|SECRET|PASSW|CRED|KEY|AUTH|COOKIE|SESSION", re.IGNORECASE)


def launcher_variables(env: Mapping[str, str], *, redact: bool = True) -> dict[str, str]:
    """The scheduler, launcher and CUDA variables of ``env``, sorted; secrets redacted."""
    return {
        name: "<redacted>" if redact and _SECRET.search(name) else value
        for name, value in sorted(env.items())
        if name.startswith(_PREFIXES) or name in _NAMES
    }
