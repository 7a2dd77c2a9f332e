"""How many CPUs each rank may use: what the scheduler grants, capped by what this process
may really run on (its CPU affinity), so a DataLoader's ``num_workers`` fits."""

from __future__ import annotations

import os
from collections.abc import Callable

from clusterenv._core.reader import EnvReader
from clusterenv._core.spec import Fields, Role

__all__ = ["CpuProbe", "cpus_per_rank", "probe_cpus"]

#: Returns how many CPUs this process may run on; ``None`` when unknown.
CpuProbe = Callable[[], "int | None"]


def probe_cpus() -> int | None:
    """The CPUs in this process's affinity mask (what cgroups, ``taskset`` and the
    launcher's binding leave), else the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count()


def cpus_per_rank(reader: EnvReader, fields: Fields, cpu_probe: CpuProbe) -> int | None:
    """The grant a source read (``fields["cpus_per_rank"]``), capped by ``cpu_probe``.

    Without a grant, the ranks of this node are taken to share what this process sees
    (torchrun's and mpirun's workers inherit one mask): ``affinity // ranks on the node``.
    That never oversubscribes; a launcher that binds each rank to its own CPUs without a
    grant makes it an underestimate. A salloc shell's CPUs are the submit host's: the
    grant alone then.
    """
    granted = fields.get("cpus_per_rank")
    available = None if fields["role"] is Role.SHELL else cpu_probe()
    if available is None or available < 1:
        return granted
    if granted is not None:
        return min(granted, available)
    reader.derive("cpus_per_rank", "devices_per_node")
    return max(1, available // fields["devices_per_node"])
