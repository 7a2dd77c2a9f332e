"""Every rank but 0: connect to rank 0, say hello, wait for its verdict (asking again when
told to retry, or when rank 0 closed the connection without a word, as a busy rank 0 may),
and trust no answer that lacks the launch's key."""

from __future__ import annotations

import errno
import itertools
import random
import socket
import time

from clusterenv._adapters.frameworks import endpoint
from clusterenv._probe._protocol import (
    MAX_MESSAGE,
    Hello,
    Retry,
    Verdict,
    decode,
    encode,
    equal,
    verdict_proof,
)
from clusterenv._probe._report import ProbeError

__all__ = ["ask", "pause_s"]

_CONNECT_RETRY_S = 0.05
#: How long after the deadline rank 0 may still answer (a rank told to retry asks late).
GRACE_S = 5.0
#: How long an answer that has begun may take to end (rank 0 sends it in one write).
LINE_S = 0.5


def ask(
    host: str, address: tuple[str, int], hello: Hello, key: bytes, deadline: float, *, taken: bool
) -> Verdict:
    """Rank 0's verdict for ``hello`` from ``address`` (the main address ``host``, resolved);
    ``ProbeError`` when it cannot be had by ``deadline`` (plus the time rank 0 takes to
    answer) or comes from something that is not rank 0."""
    port = address[1]
    where, started = endpoint(host, port), time.monotonic()
    for attempt in itertools.count():
        try:
            line = _exchange(address, encode(hello), deadline)
        except OSError as error:
            if time.monotonic() + _CONNECT_RETRY_S > deadline:
                why, fix = _unreachable(error, host, port)
                raise ProbeError(
                    f"rank {hello.rank} on {hello.host} could not connect to rank 0 at {where} "
                    f"within {deadline - started:.0f} s (last error: {error.strerror or error}): "
                    f"{why}",
                    hint=fix,
                ) from None
            time.sleep(pause_s(attempt))
            continue
        if line is None and not taken and time.monotonic() + _CONNECT_RETRY_S <= deadline:
            # Closed without a word: a rank 0 too busy for this hello; ask again. Only at
            # the deadline, or where the port is known to be taken, is that judged.
            time.sleep(pause_s(attempt))
            continue
        message = decode(line, (Verdict, Retry)) if line else None
        if isinstance(message, Retry):
            time.sleep(pause_s(attempt, message))
            continue
        if isinstance(message, Verdict) and equal(
            message.proof, verdict_proof(key, hello.nonce, message.ok, message.problems)
        ):
            return message
        if taken:
            problem = f"port {port} on {host} is in use by another program"
        elif line is None:
            problem = (
                f"rank 0 at {where} closed every connection without an answer for "
                f"{deadline - started:.0f} s"
            )
        else:
            problem = f"something at {where} answered the probe, but not as rank 0 of this launch"
        raise ProbeError(
            problem,
            hint="export MASTER_PORT as a free port (another job or user on the node holds it)",
        )
    raise AssertionError("itertools.count() never ends")


def _unreachable(error: OSError, host: str, port: int) -> tuple[str, str]:
    """What the last failed connection says about the network, and what to do."""
    if error.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH):
        return (
            f"this node has no route to {host}: it is on a network this node is not on, or a "
            "link is down",
            "export MASTER_ADDR as rank 0's address on a network every node shares (and "
            "GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME as that network's interface)",
        )
    if error.errno == errno.ECONNREFUSED:
        return (
            f"nothing accepts connections on port {port} there: rank 0 has not started, "
            "listens elsewhere, or a firewall rejects the port",
            f"start the probe in every rank; check that MASTER_ADDR names rank 0's node and "
            f"that no firewall (nftables, iptables) rejects port {port}",
        )
    return (
        f"no answer at all: packets to port {port} are dropped (a firewall filters it) or "
        f"{host} is down",
        f"open port {port} between the nodes (or export MASTER_PORT as one that is open), and "
        "check that MASTER_ADDR names rank 0's node",
    )


def pause_s(attempt: int, retry: Retry | None = None) -> float:
    """How long to wait before asking again, with jitter: thousands of ranks must not storm
    a rank 0 that is still starting or busy. Told to retry, a rank waits at least what rank
    0 asked, spread over half as long again."""
    if retry is not None:
        return retry.after * random.uniform(1.0, 1.5)
    return min(_CONNECT_RETRY_S * 2.0 ** min(attempt, 5), 1.0) * random.uniform(0.5, 1)


def _exchange(address: tuple[str, int], data: bytes, deadline: float) -> bytes | None:
    """Send ``data``, read one line back; ``None`` if the peer closed or reset the
    connection without a line; ``OSError`` if rank 0 is not (yet) reachable.

    Rank 0 answers by the deadline, or a grace period after it for ranks told to retry."""
    left = deadline - time.monotonic()
    conn = socket.create_connection(address, timeout=max(0.1, min(left, 10.0)))
    with conn:
        if conn.getsockname() == conn.getpeername():
            # TCP's self-connect: on one host, retrying a port nobody listens on can pick it
            # as the local port and connect to itself, holding the port rank 0 needs.
            raise ConnectionRefusedError(111, "Connection refused (self-connect)")
        # One end for the whole exchange: a peer that drips a byte at a time must not keep
        # this rank past it (a timeout per recv would restart with every byte).
        end = max(time.monotonic() + 0.1, deadline) + GRACE_S
        reply = bytearray()
        try:
            conn.settimeout(end - time.monotonic())
            conn.sendall(data)
            while b"\n" not in reply and len(reply) <= MAX_MESSAGE:
                left = end - time.monotonic()
                try:
                    if left <= 0:
                        raise TimeoutError(110, "rank 0 did not answer in time")
                    conn.settimeout(left)
                    chunk = conn.recv(MAX_MESSAGE + 1 - len(reply))
                except TimeoutError:
                    if reply:  # a line dripped past its bound: judged as what came
                        break
                    raise
                if not chunk:  # closed: what came so far is the answer, judged as such
                    break
                reply += chunk
                # Rank 0 writes its answer at once: once it has begun, the line is due
                # within LINE_S, whatever the deadline (a byte every half second must not
                # hold this rank until deadline + GRACE_S).
                end = min(end, time.monotonic() + LINE_S)
        except (ConnectionResetError, BrokenPipeError):  # dropped: rank 0 never does that
            return None
    if not reply:
        return None
    return bytes(reply.partition(b"\n")[0]) if b"\n" in reply else bytes(reply)
