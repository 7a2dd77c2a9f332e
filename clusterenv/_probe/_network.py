"""Where the probe's rank 0 is: the main address resolved within the deadline, and the
socket rank 0 listens on."""

from __future__ import annotations

import errno
import ipaddress
import socket
import threading
import time
from collections.abc import Mapping
from typing import NamedTuple

from clusterenv._probe._report import ProbeError
from clusterenv._spec import ResourceSpec

__all__ = [
    "Address",
    "Route",
    "is_address",
    "is_loopback",
    "listen",
    "lookup",
    "loopback",
    "own_addresses",
    "resolve",
    "route",
]

#: One address of the main address, as ``getaddrinfo`` gives it: family and socket address.
Address = tuple[socket.AddressFamily, tuple[str, int]]


def lookup(host: str, port: int, deadline: float) -> list[Address]:
    """The addresses of ``host``, asked of the name service in a thread so that one that
    never answers costs no more than the time left: ``socket.gaierror`` where the name does
    not resolve, ``TimeoutError`` where no answer came by ``deadline``."""
    found: list[Address] = []
    failed: list[socket.gaierror] = []

    def ask() -> None:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            found.extend((info[0], (str(info[4][0]), int(info[4][1]))) for info in infos)
        except socket.gaierror as error:
            failed.append(error)

    thread = threading.Thread(target=ask, name="clusterenv-resolve", daemon=True)
    thread.start()
    thread.join(max(0.0, deadline - time.monotonic()))
    if failed:
        raise failed[0]
    if not found:
        raise TimeoutError("the name service did not answer in time")
    return found


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


def is_address(host: str) -> bool:
    """Whether ``host`` is an IP address literal rather than a name."""
    try:
        ipaddress.ip_address(host.partition("%")[0])
    except ValueError:
        return False
    return True


def is_loopback(address: str) -> bool:
    """Whether IP address ``address`` is a loopback one (127.0.0.0/8, ::1); an IPv6 zone
    (``fe80::1%eth0``) is not part of the address."""
    return ipaddress.ip_address(address.partition("%")[0]).is_loopback


def loopback(addresses: list[Address]) -> bool:
    """Whether every one of ``addresses`` is a loopback address."""
    return all(is_loopback(host) for _, (host, _) in addresses)


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
