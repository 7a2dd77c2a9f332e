"""Addresses and name lookups, shared by the probe and the pre-flight check (which must
not import the probe: `inspect` and every adapter run the check)."""

from __future__ import annotations

import ipaddress
import socket
import threading
import time

__all__ = ["Address", "is_address", "is_loopback", "lookup", "loopback"]

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
