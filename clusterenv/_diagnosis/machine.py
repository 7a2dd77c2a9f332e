"""Where a process runs and with what: the facts `inspect` shows and `capture` records
beside the variables, so that a report read on another machine is the same report.

Everything here is cheap and torch-free: package versions come from their metadata
(``torch 2.13.0+rocm6.2`` names the GPU runtime a wheel was built for), GPUs from the
probe, CPUs from the affinity mask.
"""

from __future__ import annotations

import os
import platform
import socket
import time
from collections.abc import Mapping
from importlib import metadata

from pydantic import BaseModel, ConfigDict

from clusterenv._core.finding import Finding
from clusterenv._core.reader import GpuProbe
from clusterenv._core.safe import redact_value, shorten
from clusterenv._core.spec import GpuInventory, ResourceSpec
from clusterenv._diagnosis.spawned import spawned_by, spawned_findings
from clusterenv._node.container import container_findings, container_runtime
from clusterenv._node.cpu import probe_cpus
from clusterenv._node.gpu import inventory
from clusterenv._node.nccl import nccl_plugin, slingshot_findings
from clusterenv.sources import present

__all__ = [
    "INTERFACE_VARIABLES",
    "NETWORK_PREFIXES",
    "Machine",
    "collect_machine",
    "interfaces",
    "machine_findings",
    "network_variables",
]

#: The packages whose versions a bug report needs (those installed are listed).
PACKAGES = ("clusterenv-hpc", "pydantic", "torch", "lightning", "pytorch_lightning", "mpi4py")
#: Variables that decide whether rendezvous and collectives find each other: the main
#: address, the interfaces NCCL/Gloo bind, NCCL's, torch's and libfabric's settings.
NETWORK_PREFIXES = ("MASTER_", "NCCL_", "GLOO_", "TORCH_", "FI_", "UCX_")
_NETWORK_SUFFIXES = ("_SOCKET_IFNAME",)
#: The variables that name the interface NCCL and Gloo bind.
INTERFACE_VARIABLES = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME")


class Machine(BaseModel):
    """The machine a report describes; ``None`` where it was not recorded."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    host: str | None = None
    os: str | None = None
    python: str | None = None
    #: Installed versions of :data:`PACKAGES` (absent ones left out).
    packages: dict[str, str] = {}
    #: What the GPU probe found; ``None``: not recorded (a plain environment dump).
    gpus: GpuInventory | None = None
    cpus: int | None = None
    #: The CPUs this process may run on (its affinity mask), as a count and a list.
    affinity: int | None = None
    affinity_list: str | None = None
    #: The version of each scheduler and launcher present (by source: the first line its
    #: ``version_command`` prints), where the command is installed.
    launchers: dict[str, str] = {}
    #: This node's network interfaces (``None``: not recorded).
    interfaces: list[str] | None = None
    #: The container runtime this process runs in, by its own markers (``None``: none).
    container: str | None = None
    #: Names looked up here: the main address of a multi-node job -> its addresses (``[]``:
    #: it does not resolve on this machine).
    resolved: dict[str, list[str]] = {}
    #: Names the name service gave no certain answer for (it timed out, or said "try
    #: again" until the budget was spent): the name -> what it said. Not proof of anything.
    unanswered: dict[str, str] = {}
    #: The process that started this one with Python's multiprocessing, where this one has
    #: its launcher variables unchanged (``None``: none, or not recorded).
    spawned_by: int | None = None
    #: Where NCCL would find its network plugin (``""``: nowhere; ``None``: not looked up).
    nccl_plugin: str | None = None


def _versions() -> dict[str, str]:
    """The ``Version:`` header of each installed package's METADATA, read directly:
    ``metadata.version`` parses the whole file with the email parser: 15 ms, 40% of what
    `inspect` adds to detection."""
    versions = {}
    for name in PACKAGES:
        try:
            found = metadata.distribution(name)  # PKG-INFO: an egg-info's
            text = found.read_text("METADATA") or found.read_text("PKG-INFO") or ""
        except metadata.PackageNotFoundError:
            continue
        for line in text.splitlines():
            if line.startswith("Version:"):
                versions[name] = line.removeprefix("Version:").strip()
                break
            if not line:  # the end of the headers
                break
    return versions


def _ranges(cpus: list[int]) -> str:
    """``0-3,8`` for CPUs 0, 1, 2, 3 and 8."""
    spans: list[list[int]] = []
    for cpu in sorted(cpus):
        if spans and cpu == spans[-1][1] + 1:
            spans[-1][1] = cpu
        else:
            spans.append([cpu, cpu])
    return ",".join(f"{a}-{b}" if b > a else str(a) for a, b in spans)


#: Seconds all the version commands of one report may take together: a wedged launcher
#: (an srun whose controller is down) must not hold the report.
VERSION_BUDGET = 2.0


def _launcher_versions(env: Mapping[str, str]) -> dict[str, str]:
    import shutil  # noqa: PLC0415 - only for inspect and capture, never for detection
    import subprocess  # noqa: PLC0415

    versions = {}
    deadline = time.monotonic() + VERSION_BUDGET
    for detector in present(env):
        command = detector.version_command
        if not command or shutil.which(command[0]) is None:
            continue
        left = deadline - time.monotonic()
        try:
            if left <= 0:
                raise subprocess.TimeoutExpired(command, 0)
            # errors="replace": a launcher may echo a hostile variable's bytes back.
            result = subprocess.run(
                command, capture_output=True, text=True, errors="replace", timeout=left
            )
        except subprocess.TimeoutExpired:
            versions[detector.source.value] = (
                f"unknown: `{' '.join(command)}` did not answer within {VERSION_BUDGET:.0f} s"
            )
            continue
        except (OSError, subprocess.SubprocessError):
            continue
        lines = (line.strip() for line in result.stdout.splitlines())
        first = next((line for line in lines if line), "")
        if result.returncode == 0 and first:  # srun without a config says only errors
            versions[detector.source.value] = shorten(first, 120)
    return versions


def interfaces() -> list[str]:
    """This node's network interfaces, by name."""
    return sorted(name for _, name in socket.if_nameindex())


def collect_machine(gpu_probe: GpuProbe, env: Mapping[str, str]) -> Machine:
    """This machine, this process: host, OS, Python, packages, GPUs, CPUs, and the versions
    of the schedulers and launchers ``env`` comes from."""
    gpus = inventory(gpu_probe)
    try:
        mask = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        mask = []
    return Machine(
        host=socket.gethostname(),
        os=platform.platform(),
        python=platform.python_version(),
        packages=_versions(),
        gpus=gpus,
        cpus=os.cpu_count(),
        affinity=len(mask) if mask else probe_cpus(),  # one affinity query, not two
        affinity_list=_ranges(mask) or None,
        launchers=_launcher_versions(env),
        interfaces=interfaces(),
        container=container_runtime(env),
        spawned_by=spawned_by(env),
        nccl_plugin=nccl_plugin(env),
    )


def machine_findings(spec: ResourceSpec, env: Mapping[str, str], machine: Machine) -> list[Finding]:
    """What only this machine tells: the container it runs in, interfaces that are not here,
    a process that multiprocessing copied from a rank, NCCL over Slingshot without its plugin."""
    found = [
        *container_findings(spec, machine.container),
        *spawned_findings(spec, machine.spawned_by),
        *slingshot_findings(spec, machine.interfaces, machine.nccl_plugin),
    ]
    for name in INTERFACE_VARIABLES:
        value = env.get(name)
        if value is None or machine.interfaces is None or _matches(name, value, machine.interfaces):
            continue
        here = ", ".join(machine.interfaces) or "none"
        found.append(
            Finding(
                id="interface-missing",
                message=f"{name}={shorten(value)!r} names no interface of this node ({here}): "
                f"{name.split('_')[0]} then fails to connect, NCCL silently",
                fix=f"set {name} to this node's interface on the network the ranks share "
                "(the same name on every node), or unset it",
            )
        )
    return found


def _matches(name: str, value: str, interfaces: list[str]) -> bool:
    """Whether ``value`` selects an interface here: NCCL's list matches name prefixes (an
    exact name after ``=``, an exclusion list after ``^``), Gloo's names exactly."""
    items = [item.strip() for item in value.split(",") if item.strip()]
    if name.startswith("GLOO"):
        return any(item in interfaces for item in items)
    if value.lstrip().startswith("^"):  # only exclusions: some interface is left
        return True
    exact = value.lstrip().startswith("=")
    wanted = [item.lstrip("=") for item in items]
    return any(i == w if exact else i.startswith(w) for i in interfaces for w in wanted)


def is_network(name: str) -> bool:
    return name.startswith(NETWORK_PREFIXES) or name.endswith(_NETWORK_SUFFIXES)


def network_variables(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``env`` that decide rendezvous and collectives, sorted, redacted."""
    return {name: redact_value(name, env[name]) for name in sorted(env) if is_network(name)}
