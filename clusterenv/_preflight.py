"""The pre-flight check: the diagnosis `inspect` prints, run where training starts
(`clusterenv run`, :func:`clusterenv.torch.init_process_group`, :func:`clusterenv.jax.initialize`,
:func:`clusterenv.lightning.trainer_kwargs`), before anything can hang.

Warnings are printed once per process, on the rank that can tell: what the launch says
(the variables, the same on every node) on global rank 0, what this node says (its
interfaces, its name service, its container) on each node's local rank 0. Errors — a hang
is certain — raise :class:`~clusterenv.exceptions.PreflightError` on every rank.
``CLUSTERENV_STRICT=1`` makes warnings fail too; ``CLUSTERENV_PREFLIGHT=0`` skips the check,
``CLUSTERENV_PREFLIGHT=launch`` keeps only what the variables say (the pytest plugin's
``cluster_env`` sets it: a mocked launch's node is not the machine the test runs on).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar

from clusterenv._container import container_runtime
from clusterenv._detect import detect_environment
from clusterenv._diagnose import diagnose
from clusterenv._finding import Finding
from clusterenv._machine import INTERFACE_VARIABLES, Machine, interfaces, machine_findings
from clusterenv._names import is_address, is_loopback, lookup
from clusterenv._nccl import SLINGSHOT, nccl_plugin, wants_network_facts
from clusterenv._safe import escape, redact_text
from clusterenv._spawned import spawned_by
from clusterenv._spec import ResourceSpec, Role
from clusterenv.exceptions import PreflightError
from clusterenv.sources import command_findings

__all__ = [
    "OPT_OUT",
    "STRICT",
    "main_address_findings",
    "preflight",
    "resolve_main",
    "suspended",
]

#: ``CLUSTERENV_PREFLIGHT=0``: no pre-flight check. ``CLUSTERENV_STRICT=1``: warnings fail.
OPT_OUT = "CLUSTERENV_PREFLIGHT"
STRICT = "CLUSTERENV_STRICT"
#: Seconds the name service may take to answer for the main address.
RESOLVE_S = 1.0

_OUTSIDE = (Role.BATCH, Role.SHELL)
#: The findings this process has printed: adapters called twice print nothing new.
_printed: set[str] = set()
#: Set within :func:`suspended`: `inspect --lightning` diagnoses on its own.
_suspended: ContextVar[bool] = ContextVar("clusterenv_preflight_suspended", default=False)


@contextlib.contextmanager
def suspended() -> Iterator[None]:
    """No pre-flight check within the block (`inspect` reports the findings itself)."""
    token = _suspended.set(True)
    try:
        yield
    finally:
        _suspended.reset(token)


def resolve_main(spec: ResourceSpec) -> dict[str, list[str]]:
    """Where the main address of a multi-node job resolves here (``[]``: nowhere); ``{}``
    where there is nothing to look up: one node, an address literal (deliberate), or a
    process that will not connect to it (a batch step or an allocation's shell)."""
    if spec.num_nodes < 2 or is_address(spec.master_addr) or spec.role in _OUTSIDE:
        return {}
    try:
        found = lookup(spec.master_addr, spec.master_port, time.monotonic() + RESOLVE_S)
    except (OSError, TimeoutError):
        found = []
    return {spec.master_addr: sorted({host for _, (host, _) in found})}


def main_address_findings(spec: ResourceSpec, machine: Machine) -> list[Finding]:
    """A main address that does not resolve where the machine looked it up, or resolves to
    loopback only (Debian's /etc/hosts maps a host's own name to 127.0.1.1): no rank
    reaches rank 0 there."""
    addresses = machine.resolved.get(spec.master_addr)
    if addresses is None or spec.num_nodes < 2:
        return []
    if not addresses:
        return [
            Finding(
                id="main-address-unresolved",
                message=f"the main address {spec.master_addr!r} does not resolve on this "
                "node: this rank cannot reach rank 0",
                fix="export MASTER_ADDR as a name every node resolves (or rank 0's IP "
                "address); check /etc/hosts and DNS on this node",
                level="error",
            )
        ]
    if not all(is_loopback(address) for address in addresses):
        return []
    return [
        Finding(
            id="loopback-main-address",
            message=f"the main address {spec.master_addr!r} resolves to "
            f"{', '.join(addresses)} on this node, a loopback address: the other "
            f"{spec.num_nodes - 1} node(s) cannot reach rank 0 there",
            fix="export MASTER_ADDR as rank 0's address on the cluster network (its IP), or "
            "map its name to that address in /etc/hosts (not 127.0.1.1)",
        )
    ]


def node_findings(spec: ResourceSpec, env: Mapping[str, str]) -> list[Finding]:
    """What this node tells, cheaply: its interfaces, its container, its name service,
    whether this process is a multiprocessing copy of a rank, and (NCCL between nodes over
    Slingshot) whether NCCL finds its network plugin."""
    named = any(name in env for name in INTERFACE_VARIABLES)
    nccl = wants_network_facts(spec)  # NCCL between nodes: over Slingshot, with its plugin?
    names = interfaces() if named or nccl else None
    slingshot = nccl and any(name.startswith(SLINGSHOT) for name in names or ())
    machine = Machine(
        interfaces=names,
        nccl_plugin=nccl_plugin(env) if slingshot else None,
        container=container_runtime(env),
        resolved=resolve_main(spec),
        spawned_by=spawned_by(env),
    )
    return [*machine_findings(spec, env, machine), *main_address_findings(spec, machine)]


def preflight(
    spec: ResourceSpec | None = None,
    env: Mapping[str, str] | None = None,
    *,
    command: Sequence[str] = (),
) -> list[Finding]:
    """Check the launch of this process before training starts: print its warnings (once,
    to standard error, on the rank that can tell), raise :class:`PreflightError` for those
    that make a hang certain (every warning with ``CLUSTERENV_STRICT=1``). ``command`` is
    what this process is about to run (`clusterenv run`'s script or module and its
    arguments: a launcher's own options are checked too). Returns the warnings and errors
    found (notes left out); ``[]`` with ``CLUSTERENV_PREFLIGHT=0``."""
    env = os.environ if env is None else env
    mode = env.get(OPT_OUT, "").strip().lower()
    if mode in ("0", "off") or _suspended.get():
        return []
    spec = detect_environment(env) if spec is None else spec
    job = [f for f in diagnose(spec, env) + command_findings(spec, command) if f.level != "info"]
    node = [] if mode == "launch" else node_findings(spec, env)
    node = [finding for finding in node if finding.level != "info"]
    shown = (job if spec.global_rank == 0 else []) + (node if spec.local_rank == 0 else [])
    for finding in shown:
        text = f"clusterenv: {finding.level} [{finding.id}]: {finding}"
        if text not in _printed:
            _printed.add(text)
            print(escape(redact_text(text)), file=sys.stderr, flush=True)
    strict = env.get(STRICT, "").strip() == "1"
    failing = [f for f in (*job, *node) if f.level == "error" or strict]
    if failing:
        ids = ", ".join(f.id for f in failing)
        raise PreflightError(
            f"the pre-flight check stops this rank ({spec.global_rank}) before it hangs: {ids}: "
            + "; ".join(f.message for f in failing),
            variables=[STRICT] if strict else [],
            hint="; ".join(dict.fromkeys(f.fix for f in failing))
            + (f" (or unset {STRICT} to let warnings pass)" if strict else "")
            + f"; {OPT_OUT}=0 skips the check",
        )
    return [*job, *node]
