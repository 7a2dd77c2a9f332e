"""Which variables a capture keeps, and how machine-specific values are scrubbed."""

from __future__ import annotations

import re
import socket
from collections.abc import Mapping

PREFIXES = ("SLURM_", "SLURMD_", "TORCHELASTIC_", "OMPI_", "PMI_", "PMIX_", "MPI_", "CUDA_")
NAMES = frozenset(
    [
        *("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE"),
        *("ROLE_RANK", "ROLE_WORLD_SIZE", "ROLE_NAME", "MASTER_ADDR", "MASTER_PORT", "NODE_RANK"),
        *("ENVIRONMENT", "OMP_NUM_THREADS", "CLUSTERENV_SOURCE"),
    ]
)


def relevant(env: Mapping[str, str]) -> dict[str, str]:
    """The launcher, scheduler and CUDA variables of ``env``."""
    return {k: v for k, v in sorted(env.items()) if k.startswith(PREFIXES) or k in NAMES}


_OWN_HOST = re.compile(rf"\b{re.escape(socket.gethostname().split('.')[0])}\b")


def scrub_text(text: str) -> str:
    """Replace this machine's host name."""
    return _OWN_HOST.sub("build-host", text)


def scrub(env: Mapping[str, str]) -> dict[str, str]:
    """Replace this machine's host name and paths so a capture is reproducible.

    Paths (values starting with '/': config files, submit dirs, PMIx sockets, argv) carry
    no launcher semantics that detection reads.
    """
    return {
        key: "/scrubbed" if value.startswith("/") else scrub_text(value)
        for key, value in env.items()
    }
