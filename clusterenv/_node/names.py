"""Addresses and name lookups, shared by the probe and the pre-flight check (which must
not import the probe: `inspect` and every adapter run the check)."""

from __future__ import annotations

import ipaddress
import random
import socket
import threading
import time
from collections.abc import Callable

__all__ = [
    "Address",
    "is_address",
    "is_definitive",
    "is_loopback",
    "is_own",
    "lookup",
    "lookup_patiently",
    "loopback",
    "short_name",
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


#: ``getaddrinfo``'s definitive answers: the name does not exist (NXDOMAIN, or no such entry
#: in /etc/hosts), or it exists without an address. ``EAI_AGAIN`` (try again, the resolver's
#: own timeout included) and ``EAI_FAIL`` (a server failure) say nothing about the name.
_DEFINITIVE = frozenset(
    code for code in (getattr(socket, "EAI_NONAME", None), getattr(socket, "EAI_NODATA", None))
    if code is not None
)  # fmt: skip
#: The longest pause before asking again after a temporary failure.
_MAX_PAUSE = 0.5


def is_definitive(error: socket.gaierror) -> bool:
    """Whether ``error`` proves that the name has no address (not that the name service
    was slow or failed)."""
    return error.errno in _DEFINITIVE


def lookup_patiently(
    host: str,
    port: int,
    deadline: float,
    sleep: Callable[[float], None] = time.sleep,
    ask: Callable[[str, int, float], list[Address]] = lookup,
) -> list[Address]:
    """:func:`lookup`, asked again after a temporary failure until ``deadline``, each pause
    random (up to half a second, growing) so that thousands of ranks started together do not
    ask the name server in step. Raises what the last answer was: a definitive
    ``socket.gaierror`` at once, a temporary one or ``TimeoutError`` once time is up."""
    attempt = 0
    while True:
        try:
            return ask(host, port, deadline)
        except socket.gaierror as error:
            left = deadline - time.monotonic()
            if is_definitive(error) or left <= 0:
                raise
        attempt += 1
        sleep(min(left, random.uniform(0.05, min(_MAX_PAUSE, 0.1 * 2**attempt))))


def is_own(addresses: list[Address]) -> bool:
    """Whether one of ``addresses`` belongs to this machine: only an own address (loopback
    included) can be bound."""
    for family, (host, _) in addresses[:8]:
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as probe:
                probe.bind((host, 0))
        except OSError:
            continue
        return True
    return False


def short_name(host: str) -> str:
    """``cn001`` of ``cn001.cluster.example`` (and of ``CN001``): the same host either way."""
    return host.partition(".")[0].lower()


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
