"""A name server that is slow, says "try again" or says "no such name", for the pre-flight
check's certainty (issue 47), seen through the real resolver of glibc.

``python name_server.py RULE... -- COMMAND...``, run in a mount namespace of its own
(``unshare -m --propagation private``), binds this namespace's ``/etc/resolv.conf`` to one
that names the server (127.0.0.153, port 53, UDP), ``/etc/nsswitch.conf`` to ``hosts: files
dns`` and ``/etc/hosts`` to localhost and this host's name alone, answers while COMMAND runs
and exits with its status. The machine's own files are untouched: the binds end with the
namespace.

The answer is this host's first address of global scope (``ip -4 addr``): a name of this
host that is not loopback, as a real node's is. A RULE is ``NAME=late:S`` (the answer after
S seconds: slower than the check's
budget, well within glibc's own 5 s), ``NAME=again:S`` (SERVFAIL, which glibc reports as
``EAI_AGAIN``, for S seconds after the first question about NAME, then the answer) or
``NAME=none`` (NXDOMAIN). Any other name: NXDOMAIN at once.
"""

from __future__ import annotations

import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ADDRESS = "127.0.0.153"
_NOERROR, _SERVFAIL, _NXDOMAIN = 0, 2, 3
_A = 1


def _question(packet: bytes) -> tuple[str, int, int]:
    """The name asked about, its type and where the question ends."""
    labels, at = [], 12
    while packet[at]:
        labels.append(packet[at + 1 : at + 1 + packet[at]].decode("ascii", "replace"))
        at += 1 + packet[at]
    (kind,) = struct.unpack_from("!H", packet, at + 1)
    return ".".join(labels).lower(), kind, at + 5


def own_address() -> str:
    """This host's first IPv4 address of global scope."""
    shown = subprocess.run(
        ["ip", "-o", "-4", "addr", "show", "scope", "global"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return shown[shown.index("inet") + 1].partition("/")[0]


def _reply(packet: bytes, code: int, answer: str | None) -> bytes:
    """The reply to ``packet``: its question, with the address ``answer`` if any."""
    _, _, end = _question(packet)
    flags = 0x8080 | (struct.unpack_from("!H", packet, 2)[0] & 0x0100) | code
    head = struct.pack(
        "!HHHHHH", struct.unpack_from("!H", packet)[0], flags, 1, int(bool(answer)), 0, 0
    )
    record = struct.pack("!HHHIH", 0xC00C, _A, 1, 0, 4) + socket.inet_aton(answer or "0.0.0.0")
    return head + packet[12:end] + (record if answer else b"")


def serve(server: socket.socket, rules: dict[str, tuple[str, float]], address: str) -> None:
    first: dict[str, float] = {}
    while True:
        packet, peer = server.recvfrom(4096)
        name, kind, _ = _question(packet)
        rule, seconds = rules.get(name, ("none", 0.0))
        first.setdefault(name, time.monotonic())
        delay, code = 0.0, _NOERROR
        if rule == "none":
            code = _NXDOMAIN
        elif rule == "again" and time.monotonic() < first[name] + seconds:
            code = _SERVFAIL
        elif rule == "late":
            delay = seconds
        reply = _reply(packet, code, address if code == _NOERROR and kind == _A else None)
        threading.Timer(delay, server.sendto, (reply, peer)).start()


def main(argv: list[str]) -> int:
    split = argv.index("--")
    rules = {}
    for rule in argv[:split]:
        name, _, how = rule.partition("=")
        kind, _, seconds = how.partition(":")
        rules[name.lower()] = (kind, float(seconds or 0))
    files = {
        "resolv.conf": f"nameserver {ADDRESS}\n",
        "nsswitch.conf": "hosts: files dns\n",
        "hosts": f"127.0.0.1 localhost {socket.gethostname()}\n",
    }
    with tempfile.TemporaryDirectory(prefix="clusterenv-names-") as folder:
        for name, text in files.items():
            (Path(folder) / name).write_text(text)
            subprocess.run(["mount", "--bind", f"{folder}/{name}", f"/etc/{name}"], check=True)
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind((ADDRESS, 53))
    threading.Thread(target=serve, args=(server, rules, own_address()), daemon=True).start()
    return subprocess.run(argv[split + 1 :]).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
