"""The pre-flight check: the diagnosis `inspect` prints, run where training starts
(`clusterenv run`, :func:`clusterenv.torch.init_process_group`, :func:`clusterenv.jax.initialize`,
:func:`clusterenv.lightning.trainer_kwargs`), before anything can hang.

Warnings are printed once per process, on the rank that can tell: what the launch says
(the variables, the same on every node) on global rank 0, what this node says (its
interfaces, its name service, its container) on each node's local rank 0. Errors — a hang
is certain — raise :class:`~clusterenv.exceptions.PreflightError` on every rank.
``CLUSTERENV_STRICT=1`` makes warnings fail too; ``CLUSTERENV_IGNORE=id,...`` silences those
findings; ``CLUSTERENV_PREFLIGHT=0`` skips the check,
``CLUSTERENV_PREFLIGHT=launch`` keeps only what the variables say. This node's facts are
judged only on a node of the job (:func:`on_a_node`): a mock of another machine's launch
gets the launch's findings alone.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import NamedTuple

from clusterenv._core.finding import Finding
from clusterenv._core.safe import escape, redact_text
from clusterenv._core.spec import ResourceSpec, Role
from clusterenv._diagnosis.diagnose import diagnose
from clusterenv._diagnosis.ignore import ignored, kept
from clusterenv._diagnosis.machine import INTERFACE_VARIABLES, Machine, interfaces, machine_findings
from clusterenv._diagnosis.spawned import spawned_by
from clusterenv._engine.detect import detect_environment
from clusterenv._node.container import container_runtime
from clusterenv._node.names import (
    is_address,
    is_definitive,
    is_loopback,
    is_own,
    lookup,
    lookup_patiently,
    short_name,
)
from clusterenv._node.nccl import SLINGSHOT, nccl_plugin, wants_network_facts
from clusterenv.exceptions import PreflightError
from clusterenv.sources import command_findings, node_names

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
#: Seconds the name service may take in all to answer for the main address, temporary
#: failures asked again within them; then it is a warning, not an error (torch retries).
RESOLVE_S = 3.0
#: Seconds for the scheduler's name of this node (only where the host's own name is not one
#: of the job's hosts).
NODE_NAME_S = 0.5

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


class Answers(NamedTuple):
    """What the name service said of the main address: :attr:`Machine.resolved` and
    :attr:`Machine.unanswered`, as ``model_copy(update=answers._asdict())`` takes them."""

    resolved: dict[str, list[str]]
    unanswered: dict[str, str]


def resolve_main(spec: ResourceSpec) -> Answers:
    """Where the main address of a multi-node job resolves here: its addresses, ``[]`` only
    where the name service said the name has none (``EAI_NONAME``, NXDOMAIN); a timeout or a
    temporary failure, asked again within :data:`RESOLVE_S`, goes to ``unanswered``. Nothing
    where there is nothing to look up: one node, an address literal (deliberate), or a
    process that will not connect to it (a batch step or an allocation's shell)."""
    if spec.num_nodes < 2 or is_address(spec.master_addr) or spec.role in _OUTSIDE:
        return Answers({}, {})
    name = spec.master_addr
    try:
        found = lookup_patiently(name, spec.master_port, time.monotonic() + RESOLVE_S)
    except socket.gaierror as error:
        if not is_definitive(error):
            return Answers({}, {name: f"{error.strerror or error} (asked for {RESOLVE_S:.0f} s)"})
        found = []
    except TimeoutError:
        return Answers({}, {name: f"no answer within {RESOLVE_S:.0f} s"})
    except OSError as error:  # not the name service's answer: nothing is known
        return Answers({}, {name: str(error)})
    return Answers({name: sorted({host for _, (host, _) in found})}, {})


def on_a_node(spec: ResourceSpec, env: Mapping[str, str]) -> bool:
    """Whether this process runs on one of the job's hosts (or the launch names none): by
    this host's name, or by the scheduler's name for the node where that name is an address
    of this machine. A test's mock of a launch, or a replay of another machine's process,
    is not on a node of it: what this machine's name service, interfaces and container say
    is then no evidence about the job."""
    if not spec.hostnames:
        return True
    hosts = {short_name(host) for host in spec.hostnames}
    if short_name(socket.gethostname()) in hosts:
        return True
    for name in node_names(env):
        if short_name(name) not in hosts:
            continue
        try:
            if is_own(lookup(name, 0, time.monotonic() + NODE_NAME_S)):
                return True
        except (OSError, TimeoutError):
            continue
    return False


def main_address_findings(spec: ResourceSpec, machine: Machine) -> list[Finding]:
    """A main address that does not resolve where the machine looked it up (the name
    service said so: an error), whose lookup got no certain answer (a warning), or that
    resolves to loopback only (Debian's /etc/hosts maps a host's own name to 127.0.1.1): no
    rank reaches rank 0 there."""
    if spec.num_nodes < 2:
        return []
    said = machine.unanswered.get(spec.master_addr)
    if said is not None:
        return [
            Finding(
                id="main-address-lookup-slow",
                message=f"the name service gave no answer for the main address "
                f"{spec.master_addr!r} on this node ({said}): slow or overloaded (many ranks "
                "starting at once), which proves nothing about the name; torch's rendezvous "
                "asks again",
                fix="nothing if the job trains; if the ranks hang at rendezvous, export "
                "MASTER_ADDR as rank 0's IP address, or ask the site about the name service "
                "on the nodes (a local cache such as nscd or sssd)",
            )
        ]
    addresses = machine.resolved.get(spec.master_addr)
    if addresses is None:
        return []
    if not addresses:
        return [
            Finding(
                id="main-address-unresolved",
                message=f"the main address {spec.master_addr!r} does not resolve on this "
                "node (the name service says no such name): this rank cannot reach rank 0",
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
    Slingshot) whether NCCL finds its network plugin; on a machine that is not a node of
    the job (:func:`on_a_node`), only the multiprocessing copy."""
    if not on_a_node(spec, env):  # a mock, a replay: only the process's own ancestry
        return machine_findings(spec, env, Machine(spawned_by=spawned_by(env)))
    named = any(name in env for name in INTERFACE_VARIABLES)
    nccl = wants_network_facts(spec)  # NCCL between nodes: over Slingshot, with its plugin?
    names = interfaces() if named or nccl else None
    slingshot = nccl and any(name.startswith(SLINGSHOT) for name in names or ())
    machine = Machine(
        interfaces=names,
        nccl_plugin=nccl_plugin(env) if slingshot else None,
        container=container_runtime(env),
        spawned_by=spawned_by(env),
        **resolve_main(spec)._asdict(),
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
    silenced = ignored(env)
    spec = detect_environment(env) if spec is None else spec
    job = kept(diagnose(spec, env) + command_findings(spec, command, env), silenced)
    job = [finding for finding in job if finding.level != "info"]
    node = [] if mode == "launch" else kept(node_findings(spec, env), silenced)
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
