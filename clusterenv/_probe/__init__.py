"""`clusterenv probe`: prove that every rank reaches rank 0 before training starts.

A rendezvous over plain TCP at the spec's ``master_addr:master_port`` — the very address
and port the training's process group will use, so a port that is taken or firewalled
shows up here. Where the launcher itself listens on ``MASTER_PORT`` (torchrun's agent) the
probe uses the next port (:func:`probe_port`).

Rank 0 listens (on the main address's interface where it can) and serves every rank from
one event loop (:mod:`._server`); every other rank resolves the main address, connects
(retrying until the deadline, since rank 0 may start later) and sends a hello: what it
believes about the launch, with a proof of the launch's key (:mod:`._protocol`). Rank 0
checks the ranks are exactly ``0..world_size-1``, that all agree on the launch, and that
each node runs ``devices_per_node`` ranks (:mod:`._checks`); then it answers every rank
with the verdict. Every wait is bounded by the deadline, so a broken launch fails in
seconds instead of hanging, and no stranger on the port can stall, crash or pass it.

A second process that claims rank 0 finds the port taken; it then connects as a client,
so rank 0 can report the duplicate (the typical double launch) instead of a bare
"address in use".

May import diagnosis, the engine and everything below; never the CLI."""

from __future__ import annotations

import errno
import os
import socket
import time
from collections import Counter
from collections.abc import Mapping
from typing import Any

from clusterenv._adapters.frameworks import (
    DEFAULT_TIMEOUT,
    MAX_TIMEOUT,
    launcher_for,
    valid_timeout,
)
from clusterenv._adapters.frameworks import listen_port as probe_port
from clusterenv._core.spec import ResourceSpec, Role
from clusterenv._engine.detect import explain_environment
from clusterenv._node.names import is_loopback, loopback
from clusterenv._probe._backend import check_backend
from clusterenv._probe._checks import check
from clusterenv._probe._client import ask
from clusterenv._probe._network import Route, listen, own_addresses, resolve, route
from clusterenv._probe._protocol import Hello, Said, hello_proof, launch_key, new_nonce, said
from clusterenv._probe._report import ProbeError, ProbeReport, probe_address
from clusterenv._probe._server import Rendezvous, serve

__all__ = [
    "MAX_RANKS",
    "ProbeError",
    "ProbeReport",
    "probe",
    "probe_port",
]

#: Where torch.distributed's backends are told which interface to use.
_INTERFACE_VARIABLES = ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")
#: The most ranks one probe takes: rank 0 keeps a small record per rank.
MAX_RANKS = 1_000_000


def probe(
    spec: ResourceSpec | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    backend: str | None = None,
    env: Mapping[str, str] | None = None,
) -> ProbeReport:
    """Rendezvous with every rank of this launch at the main address; raise if it fails.

    Call it in every rank (``srun clusterenv probe`` does). Returns the report on success
    (with the table on rank 0); raises :class:`~clusterenv.ProbeError` naming the problem
    and its fix otherwise. Never takes much longer than ``timeout`` seconds; with
    ``backend="gloo"`` it then also runs torch.distributed's ``init_process_group`` and an
    ``all_reduce`` with the same parameters (what Lightning will do), in a child process
    stopped after another ``timeout`` plus 15 s (:mod:`._backend`). ``env`` (default
    ``os.environ``) gives the launch's key (see :mod:`clusterenv._probe._protocol`).
    """
    if not valid_timeout(timeout):
        raise ProbeError(
            f"timeout={timeout!r} is not a finite number of seconds above 0 and at most "
            f"{MAX_TIMEOUT:.0f}",
            hint="pass --timeout 30 (seconds)",
        )
    report = _rendezvous(spec, timeout, os.environ if env is None else env)
    if backend is not None:
        try:
            check_backend(report.spec, backend, timeout)
        except ProbeError as error:
            if report.rows:  # rank 0: its table says every rank reached it, then this
                error.report = report
            raise
    return report


def _how_to_launch(spec: ResourceSpec) -> str:
    launcher = launcher_for(spec)
    if launcher.startswith("torchrun"):
        return f"run the probe like the training: {launcher} -m clusterenv probe"
    return (
        f"run the probe like the training: {launcher} clusterenv probe, or torchrun ... -m "
        "clusterenv probe"
    )


def _rendezvous(spec: ResourceSpec | None, timeout: float, env: Mapping[str, str]) -> ProbeReport:
    origins: Mapping[str, str] = {}
    if spec is None:
        detection = explain_environment(env)
        spec, origins = detection.spec, detection.origins
    if spec.role is not Role.RANK:
        raise ProbeError(
            f"this process is not one rank of a launch (role {spec.role.value})",
            hint=_how_to_launch(spec),
        )
    if spec.world_size > MAX_RANKS:
        raise ProbeError(
            f"world_size={spec.world_size} is more ranks than the probe takes ({MAX_RANKS})",
            hint="check WORLD_SIZE / the launch's task count; no real launch is that large",
        )
    if spec.world_size == 1:  # nothing to rendezvous with: say what was not checked
        note = (
            "alone: a one-rank launch; no port was opened and the main address "
            f"{probe_address(spec)} was not checked"
        )
        return ProbeReport(spec, [_row(spec, "alone", socket.gethostname())], note=note)
    deadline = time.monotonic() + timeout
    port = probe_port(spec)
    addresses = resolve(spec, port, origins, deadline)
    key = launch_key(spec, env, port)
    # The resolved address: no name lookup in the retries, so none that outlasts the deadline.
    rank_0 = (spec.master_addr, addresses[0][1])
    chosen = any(env.get(name) for name in _INTERFACE_VARIABLES)
    hello = _hello(spec, key, addresses[0][1][0], route(addresses[0][1], deadline), chosen=chosen)
    if spec.global_rank == 0:
        try:
            # A multi-node launch whose main address is loopback here: other nodes may
            # resolve it to a real address (a 127.0.1.1 line on this node only). Listen on
            # every interface, so that they arrive and the verdict can say what is wrong.
            listener = listen(addresses, port, anywhere=spec.num_nodes > 1 and loopback(addresses))
        except OSError as error:
            if error.errno != errno.EADDRINUSE:
                raise ProbeError(
                    f"rank 0 cannot listen on port {port}: {error.strerror}",
                    hint="export MASTER_PORT as a free port above 1024",
                ) from None
            return _verdict(spec, ask(*rank_0, hello, key, deadline, taken=True))
        with listener:
            return _serve(spec, listener, hello, key, deadline=deadline, timeout=timeout)
    return _verdict(spec, ask(*rank_0, hello, key, deadline, taken=False))


def _hello(spec: ResourceSpec, key: bytes, reached: str, path: Route, *, chosen: bool) -> Hello:
    nonce = new_nonce()
    return Hello(
        reached=reached,
        via=path.via,
        interface=path.interface,
        name_is_loopback=path.name_is_loopback,
        interface_chosen=chosen,
        nonce=nonce,
        proof=hello_proof(key, nonce, spec.global_rank),
        rank=spec.global_rank,
        world_size=spec.world_size,
        num_nodes=spec.num_nodes,
        node_rank=spec.node_rank,
        local_rank=spec.local_rank,
        devices_per_node=spec.devices_per_node,
        master_addr=spec.master_addr,
        master_port=spec.master_port,
        job_id=spec.job_id,
        host=socket.gethostname()[:256],
        gpus=list(spec.visible_devices)[:64],
    )


def _serve(
    spec: ResourceSpec,
    listener: socket.socket,
    own: Hello,
    key: bytes,
    *,
    deadline: float,
    timeout: float,
) -> ProbeReport:
    address = probe_address(spec)

    def judge(seen: Rendezvous) -> list[str]:
        hellos = [said(own), *seen.hellos.values()]
        return check(spec.world_size, hellos, address, timeout, (seen.strangers, seen.examples))

    seen, problems = serve(listener, key, spec.world_size, deadline=deadline, judge=judge)
    hellos = [said(own), *seen.hellos.values()]
    ranks = [hello.rank for hello in hellos]
    counts = Counter(ranks)
    through = tuple(sorted({h.interface or h.via for h in hellos if h.via}))[:8]
    held = [f"{name} {address}" for name, address in own_addresses() if not is_loopback(address)]
    report = ProbeReport(spec, problems=problems, through=through, addresses=tuple(held[:8]))
    for index, hello in enumerate(hellos):
        status = "listening" if index == 0 else "connected"
        report.rows.append(_row_of(hello, "DUPLICATE" if counts[hello.rank] > 1 else status))
    if not report.ok:
        raise ProbeError(
            "the launch is broken:\n" + "\n".join(f"  - {p}" for p in report.problems),
            hint="fix the first problem listed; `clusterenv inspect` in each rank shows what "
            "it got",
            report=report,
        )
    return report


def _verdict(spec: ResourceSpec, verdict: Any) -> ProbeReport:
    if not verdict.ok:
        raise ProbeError(
            f"rank {spec.global_rank}: rank 0 reports a broken launch:\n"
            + "\n".join(f"  - {problem}" for problem in verdict.problems),
            hint="see rank 0's table; `clusterenv inspect` in each rank shows what it got",
        )
    return ProbeReport(spec)


def _row(spec: ResourceSpec, status: str, host: str) -> dict[str, Any]:
    return {
        "rank": spec.global_rank,
        "host": host,
        "node": spec.node_rank,
        "local": spec.local_rank,
        "gpus": list(spec.visible_devices),
        "status": status,
    }


def _row_of(hello: Said, status: str) -> dict[str, Any]:
    return {
        "rank": hello.rank,
        "host": hello.host,
        "node": hello.node_rank,
        "local": hello.local_rank,
        "gpus": list(hello.gpus),
        "status": status,
        "from": " ".join(filter(None, (hello.interface, hello.via))),
    }
