"""Where the probe's rank 0 is: the main address resolved within the deadline, and the
socket rank 0 listens on."""

from __future__ import annotations

import errno
import socket
import time
from collections.abc import Mapping
from typing import NamedTuple

from clusterenv._core.spec import ResourceSpec
from clusterenv._node.names import Address, is_loopback, lookup, loopback
from clusterenv._probe._report import ProbeError

__all__ = ["Route", "listen", "own_addresses", "resolve", "route"]


def resolve(
    spec: ResourceSpec, port: int, origins: Mapping[str, str], deadline: float
) -> list[Address]:
    """The addresses of ``spec.master_addr`` within the deadline, else a ``ProbeError``."""
    try:
        return lookup(spec.master_addr, port, deadline)
    except (socket.gaierror, TimeoutError) as error:
        why = error.strerror or str(error)
    origin = f" (from {origins['master_addr']})" if "master_addr" in origins else ""
    raise ProbeError(
        f"rank {spec.global_rank} on {socket.gethostname()}: the main address "
        f"{spec.master_addr!r}{origin} does not resolve ({why})",
        hint="export MASTER_ADDR as an address of rank 0's node that every node resolves (e.g. "
        "its IP), or fix the name service (/etc/hosts, DNS)",
    )


class Route(NamedTuple):
    """How this host reaches rank 0: the local address and interface the kernel picks, and
    whether this host's own name resolves only to loopback (what gloo and NCCL then bind to
    unless GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME say otherwise). The name is looked up only
    where rank 0 is reached over a real network: over loopback it cannot matter."""

    via: str | None
    interface: str | None
    name_is_loopback: bool


def route(rank_0: tuple[str, int], deadline: float) -> Route:
    """This host's :class:`Route` to ``rank_0`` (an address, resolved). A UDP connect sends
    nothing: it only asks the kernel which local address it would use."""
    family = socket.AF_INET6 if ":" in rank_0[0] else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as udp:
            udp.connect(rank_0)
            via: str | None = str(udp.getsockname()[0])
    except OSError:
        via = None
    if via is None or is_loopback(via):
        return Route(via, _interface(via), name_is_loopback=False)
    try:
        own = lookup(socket.gethostname(), 0, min(deadline, time.monotonic() + 1.0))
        name_is_loopback = loopback(own)
    except (OSError, TimeoutError):
        name_is_loopback = True  # unresolvable: gloo and NCCL fail alike
    return Route(via, _interface(via), name_is_loopback)


def own_addresses() -> list[tuple[str, str]]:
    """This host's IPv4 addresses, one per interface that has one: ``(interface, address)``
    (Linux's SIOCGIFADDR; the standard library has no portable call)."""
    import fcntl  # noqa: PLC0415 - only for the probe, and only on Linux
    import struct  # noqa: PLC0415

    found = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for _, name in socket.if_nameindex():
            request = struct.pack("256s", name.encode()[:15])
            try:
                answer = fcntl.ioctl(sock.fileno(), 0x8915, request)  # SIOCGIFADDR
            except OSError:  # down, or without an IPv4 address
                continue
            found.append((name, socket.inet_ntoa(answer[20:24])))
    return found


def _interface(address: str | None) -> str | None:
    """The name of the interface holding IPv4 ``address``."""
    if address is None or ":" in address:
        return None
    return next((name for name, held in own_addresses() if held == address), None)


def listen(addresses: list[Address], port: int, *, anywhere: bool = False) -> socket.socket:
    """Listen on the main address's interface if it is this machine's (IPv4 or IPv6, as it
    resolved), else (or ``anywhere``) on all interfaces: IPv4 and IPv6 together where the
    machine has both. ``create_server`` sets SO_REUSEADDR, which only skips TIME_WAIT: a port
    that is really taken still fails (EADDRINUSE)."""
    for family, (host, _) in [] if anywhere else addresses:
        try:
            return socket.create_server((host, port), family=family, backlog=socket.SOMAXCONN)
        except OSError as error:
            if error.errno not in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT, errno.EINVAL):
                raise
    dual = socket.has_dualstack_ipv6()
    family = socket.AF_INET6 if dual else socket.AF_INET
    return socket.create_server(
        ("", port), family=family, backlog=socket.SOMAXCONN, dualstack_ipv6=dual
    )
