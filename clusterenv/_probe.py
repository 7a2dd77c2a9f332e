"""`clusterenv probe`: prove that every rank reaches rank 0 before training starts.

A rendezvous over plain TCP at the spec's ``master_addr:master_port`` — the very address
and port the training's process group will use, so a port that is taken or firewalled
shows up here. Under torchrun the agent's store already listens on ``MASTER_PORT``; the
probe then uses the next port (:func:`probe_port`).

Rank 0 listens; every other rank resolves the main address, connects (retrying until the
deadline, since rank 0 may start later) and sends its spec and host name as one JSON
line. Rank 0 checks the ranks are exactly ``0..world_size-1``, that all
agree on world size, nodes, main address and port and job id, and that each node runs
``devices_per_node`` ranks; then it answers every rank with the verdict. Every step is
bounded by the timeout, so a broken launch fails in seconds instead of hanging.

A second process that claims rank 0 finds the port taken; it then connects as a client,
so rank 0 can report the duplicate (the typical double launch) instead of a bare
"address in use".
"""

from __future__ import annotations

import errno
import json
import socket
import time
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from clusterenv._detect import explain_environment
from clusterenv._diagnose import launcher_for
from clusterenv._spec import ResourceSpec, Role
from clusterenv.exceptions import ProbeError
from clusterenv.sources import detector_for

__all__ = ["ProbeReport", "probe", "probe_port"]

DEFAULT_TIMEOUT = 30.0
_AGREED = ("world_size", "num_nodes", "master_addr", "master_port", "job_id")
_RETRY_S = 0.2


@dataclass
class ProbeReport:
    """What rank 0 saw: one row per rank (other ranks get an empty ``rows``)."""

    spec: ResourceSpec
    rows: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def table(self) -> str:
        lines = [f"{'rank':>5}  {'host':<20} {'node':>4} {'local':>5}  {'GPUs':<12} status"]
        for row in sorted(self.rows, key=lambda row: (row["rank"], row["status"])):
            gpus = ",".join(row["gpus"]) or "-"
            lines.append(
                f"{row['rank']:>5}  {row['host']:<20.20} {row['node']:>4} {row['local']:>5}  "
                f"{gpus:<12.12} {row['status']}"
            )
        if self.ok:  # a failure's problems follow in the ProbeError's message
            spec = self.spec
            lines.append(
                f"OK: {spec.world_size} ranks on {spec.num_nodes} node(s) reached "
                f"{spec.master_addr}:{probe_port(spec)}"
            )
        return "\n".join(lines)


def probe(
    spec: ResourceSpec | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    backend: str | None = None,
) -> ProbeReport:
    """Rendezvous with every rank of this launch at the main address; raise if it fails.

    Call it in every rank (``srun clusterenv probe`` does). Returns the report on success
    (with the table on rank 0); raises :class:`ProbeError` naming the problem and its fix
    otherwise. Never takes much longer than ``timeout`` seconds (twice that with
    ``backend="gloo"``, which then also runs torch.distributed's ``init_process_group`` and
    an ``all_reduce`` with the same parameters: what Lightning will do).
    """
    report = _rendezvous(spec, timeout)
    if backend is not None:
        _torch_distributed(report.spec, backend, timeout)
    return report


def _rendezvous(spec: ResourceSpec | None, timeout: float) -> ProbeReport:
    origins: Mapping[str, str] = {}
    if spec is None:
        detection = explain_environment()
        spec, origins = detection.spec, detection.origins
    if spec.role is not Role.RANK:
        raise ProbeError(
            f"this process is not one rank of a launch (role {spec.role.value})",
            hint=f"run the probe like the training: {launcher_for(spec)} clusterenv probe, "
            "or torchrun ... -m clusterenv probe",
        )
    if spec.world_size == 1:  # no process group to form
        return ProbeReport(spec, [_row(spec, "alone")])
    deadline = time.monotonic() + timeout
    _resolve(spec, origins)
    if spec.global_rank == 0:
        try:
            listener = _listen(probe_port(spec))
        except OSError as error:
            if error.errno != errno.EADDRINUSE:
                raise
            return _client(spec, deadline, timeout, taken=True)  # perhaps another rank 0
        with listener:
            return _serve(spec, listener, deadline, timeout)
    return _client(spec, deadline, timeout, taken=False)


def _torch_distributed(spec: ResourceSpec, backend: str, timeout: float) -> None:
    from datetime import timedelta  # noqa: PLC0415

    try:
        import torch  # noqa: PLC0415 - only for --backend
        import torch.distributed as dist  # noqa: PLC0415
    except ImportError:
        raise ProbeError(
            f"--backend {backend} needs torch", hint="pip install torch, or drop --backend"
        ) from None
    try:
        dist.init_process_group(
            backend,
            init_method=f"tcp://{spec.master_addr}:{spec.master_port}",
            rank=spec.global_rank,
            world_size=spec.world_size,
            timeout=timedelta(seconds=timeout),
        )
        total = torch.ones(1)
        dist.all_reduce(total)
        dist.destroy_process_group()
    except (RuntimeError, ValueError) as error:  # torch's DistBackendError is a RuntimeError
        raise ProbeError(
            f"torch.distributed ({backend}) failed on rank {spec.global_rank}: "
            f"{str(error).splitlines()[0] if str(error) else type(error).__name__}",
            hint="the TCP probe passed, so look at the backend: network interfaces "
            "(GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME) and the torch build",
        ) from None
    if total.item() != spec.world_size:
        raise ProbeError(
            f"all_reduce over {spec.world_size} ranks gave {total.item():g}",
            hint="the ranks do not form one process group; check they come from one launch",
        )


def probe_port(spec: ResourceSpec) -> int:
    """The main port, or where the launcher holds it (torchrun's agent store) the next one."""
    if not detector_for(spec.source).holds_main_port:
        return spec.master_port
    return spec.master_port + 1 if spec.master_port < 65535 else spec.master_port - 1


def _resolve(spec: ResourceSpec, origins: Mapping[str, str]) -> None:
    try:
        socket.getaddrinfo(spec.master_addr, spec.master_port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        origin = f" (from {origins['master_addr']})" if "master_addr" in origins else ""
        raise ProbeError(
            f"rank {spec.global_rank} on {socket.gethostname()}: the main address "
            f"{spec.master_addr!r}{origin} does not resolve ({error.strerror})",
            hint="export MASTER_ADDR as an address of rank 0's node that every node resolves "
            "(e.g. its IP), or fix the name service (/etc/hosts, DNS)",
        ) from None


def _listen(port: int) -> socket.socket:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        # SO_REUSEADDR only skips TIME_WAIT: a port that is really taken still fails.
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("", port))
        listener.listen(128)
    except OSError:
        listener.close()
        raise
    return listener


def _row(spec: ResourceSpec, status: str, host: str | None = None) -> dict[str, Any]:
    return {
        "rank": spec.global_rank,
        "host": host or socket.gethostname(),
        "node": spec.node_rank,
        "local": spec.local_rank,
        "gpus": list(spec.visible_devices),
        "status": status,
    }


def _hello(spec: ResourceSpec) -> bytes:
    message = {"spec": spec.model_dump(mode="json"), "host": socket.gethostname()}
    return (json.dumps(message) + "\n").encode()


def _serve(
    spec: ResourceSpec, listener: socket.socket, deadline: float, timeout: float
) -> ProbeReport:
    """Rank 0: collect a hello from every other rank, check them, answer each."""
    peers: list[tuple[socket.socket, dict[str, Any]]] = []
    try:
        while len(peers) < spec.world_size - 1 and (left := deadline - time.monotonic()) > 0:
            listener.settimeout(left)
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                break
            conn.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                line = conn.makefile("rb").readline()
                peers.append((conn, json.loads(line)))
            except (OSError, ValueError):
                conn.close()  # not a probe (a port scanner, a stray client): ignore it
        report = _check(spec, [hello for _, hello in peers], timeout)
        verdict = json.dumps({"ok": report.ok, "problems": report.problems}).encode() + b"\n"
        for conn, _ in peers:
            try:
                conn.sendall(verdict)
                conn.settimeout(1.0)
                conn.recv(1)  # let the client close first: no TIME_WAIT on the port's side
            except OSError:
                pass
    finally:
        for conn, _ in peers:
            conn.close()
    if not report.ok:
        raise ProbeError(
            "the launch is broken:\n" + "\n".join(f"  - {p}" for p in report.problems),
            hint="fix the first problem listed; `clusterenv inspect` in each rank shows what "
            "it got",
            report=report,
        )
    return report


def _check(spec: ResourceSpec, hellos: list[dict[str, Any]], timeout: float) -> ProbeReport:
    specs = [spec.model_dump(mode="json")] + [hello["spec"] for hello in hellos]
    hosts = [socket.gethostname()] + [str(hello["host"]) for hello in hellos]
    report = ProbeReport(spec)
    counts = Counter(s["global_rank"] for s in specs)
    for index, (s, host) in enumerate(zip(specs, hosts, strict=True)):
        status = "rank 0 (listening)" if index == 0 else "connected"
        if counts[s["global_rank"]] > 1:
            status = "DUPLICATE"
        report.rows.append({**_row(spec, status, host), **_fields(s)})
    missing = sorted(set(range(spec.world_size)) - set(counts))
    for rank in missing:
        report.rows.append(
            {"rank": rank, "host": "?", "node": "?", "local": "?", "gpus": [], "status": "MISSING"}
        )
    for rank, count in sorted(counts.items()):
        if count > 1:
            where = ", ".join(
                h for s, h in zip(specs, hosts, strict=True) if s["global_rank"] == rank
            )
            report.problems.append(
                f"rank {rank} is claimed by {count} processes (on {where}): the job was launched "
                "twice (e.g. torchrun inside an srun step with several tasks per node, or "
                "python started without srun). Fix: start each rank exactly once"
            )
    if missing:
        report.problems.append(
            f"rank(s) {_ranges(missing)} never reached {spec.master_addr}:{probe_port(spec)} "
            f"within {timeout:g} s. Fix: run the probe in every task of the same step; check "
            "that their nodes resolve the main address and that no firewall blocks the port"
        )
    for name in _AGREED:
        values: dict[str, list[int]] = defaultdict(list)
        for s in specs:
            values[json.dumps(s[name])].append(s["global_rank"])
        if len(values) > 1:
            said = "; ".join(
                f"{value} on rank(s) {_ranges(sorted(r))}" for value, r in values.items()
            )
            report.problems.append(
                f"the ranks disagree on {name}: {said}. Fix: start all ranks from one srun "
                "step or torchrun launch, and do not export it differently per node"
            )
    report.problems += _per_node(specs, hosts)
    return report


def _fields(spec: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "rank": spec["global_rank"],
        "node": spec["node_rank"],
        "local": spec["local_rank"],
        "gpus": list(spec["visible_devices"]),
    }


def _per_node(specs: list[dict[str, Any]], hosts: list[str]) -> list[str]:
    problems = []
    nodes: dict[int, list[tuple[dict[str, Any], str]]] = defaultdict(list)
    for s, host in zip(specs, hosts, strict=True):
        nodes[s["node_rank"]].append((s, host))
    for node, members in sorted(nodes.items()):
        expected = {s["devices_per_node"] for s, _ in members}
        if expected != {len(members)}:
            problems.append(
                f"node {node} runs {len(members)} rank(s) but they expect "
                f"{'/'.join(map(str, sorted(expected)))} per node (devices_per_node). Fix: "
                "start one task per device on every node (--ntasks-per-node)"
            )
        if len({host for _, host in members}) > 1:
            problems.append(
                f"node rank {node} is reported from several hosts "
                f"({', '.join(sorted({host for _, host in members}))})"
            )
    return problems


def _ranges(numbers: list[int]) -> str:
    return ", ".join(map(str, numbers)) if len(numbers) < 8 else f"{numbers[0]}..{numbers[-1]}"


def _client(spec: ResourceSpec, deadline: float, timeout: float, *, taken: bool) -> ProbeReport:
    """Any rank but 0 (or a second rank 0): connect, say hello, read the verdict."""
    address, last = (spec.master_addr, probe_port(spec)), "no attempt"
    while True:
        try:
            conn = socket.create_connection(address, timeout=max(0.1, deadline - time.monotonic()))
            break
        except OSError as error:
            last = error.strerror or str(error)
        if time.monotonic() + _RETRY_S > deadline:
            raise ProbeError(
                f"rank {spec.global_rank} on {socket.gethostname()} could not connect to rank 0 "
                f"at {address[0]}:{address[1]} within {timeout:g} s (last error: {last})",
                hint="check that rank 0 runs the probe too, that this node can reach "
                f"{address[0]} (firewall) and that MASTER_ADDR names rank 0's node",
            )
        time.sleep(_RETRY_S)
    with conn:
        conn.settimeout(max(0.1, deadline - time.monotonic()) + 5.0)  # rank 0 answers by then
        try:
            conn.sendall(_hello(spec))
            verdict = json.loads(conn.makefile("rb").readline())
        except (OSError, ValueError):
            verdict = None
    if verdict is None:
        raise ProbeError(
            f"port {address[1]} on {address[0]} is in use by another program"
            if taken
            else f"rank 0 at {address[0]}:{address[1]} did not answer the probe",
            hint="export MASTER_PORT as a free port (another job on the node may hold it)"
            if taken
            else "check that rank 0 runs `clusterenv probe` as well",
        )
    if not verdict["ok"]:
        raise ProbeError(
            f"rank {spec.global_rank}: rank 0 reports a broken launch:\n"
            + "\n".join(f"  - {problem}" for problem in verdict["problems"]),
            hint="see rank 0's table; `clusterenv inspect` in each rank shows what it got",
        )
    return ProbeReport(spec)
