"""NCCL on HPE Slingshot: without its network plugin (aws-ofi-nccl, ``libnccl-net.so``),
NCCL does not use the Slingshot NICs' libfabric provider and falls back to TCP sockets over
them, at a fraction of the bandwidth, without a word.

Slingshot shows in a node's interfaces (``hsn0``..., and ``cxi0`` where the CXI driver
names them); NCCL finds its plugin by ``NCCL_NET_PLUGIN`` or as ``libnccl-net.so`` on the
library path. Both are looked up cheaply, without loading anything.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from clusterenv._core.finding import Finding
from clusterenv._core.hostfile import read_bytes
from clusterenv._core.spec import GpuVendor, ResourceSpec, Role

__all__ = ["SLINGSHOT", "nccl_plugin", "slingshot_findings", "wants_network_facts"]

#: Interface names of HPE Slingshot NICs.
SLINGSHOT = ("hsn", "cxi")
#: Where a system installs libraries besides LD_LIBRARY_PATH.
_SYSTEM_LIBS = ("/usr/lib64", "/usr/lib", "/usr/lib/x86_64-linux-gnu", "/usr/local/lib")
_LD_CACHE = "/etc/ld.so.cache"


def wants_network_facts(spec: ResourceSpec) -> bool:
    """Whether NCCL will connect this rank to other nodes (NVIDIA GPUs, several nodes)."""
    nvidia = spec.gpu_vendor in (None, GpuVendor.NVIDIA) and spec.gpus_per_node > 0
    return nvidia and spec.num_nodes > 1 and spec.role is Role.RANK


def nccl_plugin(
    env: Mapping[str, str],
    exists: Callable[[str], bool] = os.path.exists,
    read: Callable[[str], bytes] = read_bytes,
) -> str:
    """Where NCCL would find its network plugin (a path, or ``ld.so.cache``); ``""`` where
    it would find none."""
    named = env.get("NCCL_NET_PLUGIN", "").strip()
    if named and "/" in named:
        return named if exists(named) else ""
    libraries = [f"libnccl-net-{named}.so", named] if named else ["libnccl-net.so"]
    folders = [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p][:64]
    for folder in (*folders, *_SYSTEM_LIBS):
        for library in libraries:
            if exists(os.path.join(folder, library)):
                return os.path.join(folder, library)
    try:
        cache = read(_LD_CACHE)
    except OSError:
        return ""
    return _LD_CACHE if any(library.encode() in cache for library in libraries) else ""


def slingshot_findings(
    spec: ResourceSpec, interfaces: list[str] | None, plugin: str | None
) -> list[Finding]:
    """NCCL over Slingshot without its plugin (``plugin`` ``""``; ``None``: not looked up)."""
    slingshot = [name for name in interfaces or () if name.startswith(SLINGSHOT)]
    if not slingshot or plugin != "" or not wants_network_facts(spec):
        return []
    return [
        Finding(
            id="nccl-ofi-missing",
            message=f"this node has HPE Slingshot interfaces ({', '.join(slingshot[:4])}) but "
            "NCCL finds no network plugin (libnccl-net.so of aws-ofi-nccl): it falls back to "
            "TCP sockets over them, at a fraction of their bandwidth, without a word",
            fix="load the site's aws-ofi-nccl (module load aws-ofi-nccl, or add its lib "
            "folder to LD_LIBRARY_PATH); NCCL_NET='AWS Libfabric' makes NCCL fail instead "
            "of falling back",
        )
    ]
