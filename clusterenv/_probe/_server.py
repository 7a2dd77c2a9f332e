"""Rank 0's side of the probe: one event loop (``selectors``) serving every rank at once.

Each connection costs a bounded buffer and must deliver its hello within ``HELLO_S``; a
dripping or flooding peer, or one that sends anything but a hello of this launch, is closed
and counted as foreign without delaying anyone. A peer that has sent nothing by then may be
a real rank that is merely slow (a loaded node): it is told to retry, never judged, so the
verdict depends only on who arrived by the deadline. Rank 0 holds the connections of ranks
waiting for the verdict up to what its open file limit allows (``capacity``); past that it
records the hello and answers ``Retry``, and the rank asks again. So 10 000 ranks
rendezvous under the default soft limit of 1 024.
"""

from __future__ import annotations

import contextlib
import json
import math
import resource
import selectors
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from clusterenv._adapters.frameworks import endpoint
from clusterenv._probe._protocol import (
    MAX_MESSAGE,
    MAX_PROBLEM,
    MAX_PROBLEMS,
    Hello,
    Retry,
    Said,
    Verdict,
    decode,
    encode,
    equal,
    hello_proof,
    said,
    verdict_proof,
)

__all__ = ["HELLO_S", "Rendezvous", "capacity", "serve"]

HELLO_S = 5.0  # a peer that has not said hello by then is not a rank
GRACE_S = 2.0  # past the deadline, how long ranks that were told to retry may still ask
RETRY_S = 1.0
#: Asks a second that rank 0 can spare for ranks coming back: a rank told to retry waits
#: world_size / this (at least RETRY_S, at most 30 s), so that 100 000 ranks ask about
#: twice each instead of every second.
_RETRIES_PER_S = 4000
_RESERVED_FILES = 64  # for Python, the listener, logs and whatever the caller has open


def capacity() -> int:
    """How many connections rank 0 may hold: the soft open-file limit, raised to the hard
    one where allowed, less a reserve."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return max(16, soft - _RESERVED_FILES)


@dataclass
class _Peer:
    sock: socket.socket
    opened: float
    #: ``host:port`` it connected from, so that a stranger can be found.
    address: str
    buffer: bytearray = field(default_factory=bytearray)
    hello: Hello | None = None


@dataclass
class Rendezvous:
    """What rank 0 saw: the hellos (by rank and nonce), and the foreign connections."""

    hellos: dict[tuple[int, str], Said] = field(default_factory=dict)
    strangers: int = 0
    examples: list[str] = field(default_factory=list)

    def stranger(self, why: str, peer: _Peer) -> None:
        self.strangers += 1
        if len(self.examples) < 3:
            self.examples.append(f"{why}, from {peer.address}")


def serve(
    listener: socket.socket,
    key: bytes,
    world_size: int,
    *,
    deadline: float,
    judge: Callable[[Rendezvous], list[str]],
    limit: int | None = None,
) -> tuple[Rendezvous, list[str]]:
    """Collect hellos until every rank is there or ``deadline``; answer each with the
    verdict (``judge``'s problems); return what was seen and the problems."""
    loop = _Loop(listener, key, capacity() if limit is None else limit, world_size)
    try:
        return loop.seen, loop.run(world_size, deadline, judge)
    finally:
        loop.close()


class _Loop:
    """The event loop's state: connections saying hello, and those held for the verdict."""

    def __init__(self, listener: socket.socket, key: bytes, limit: int, world_size: int) -> None:
        self.listener, self.key, self.limit = listener, key, limit
        # Connections held for the verdict leave room for others still saying hello.
        self.hold = limit - min(256, limit // 4)
        self.seen = Rendezvous()
        self.peers: dict[socket.socket, _Peer] = {}
        self.waiting: dict[socket.socket, Hello] = {}
        #: The ranks other than 0 that said hello, kept as they arrive: counting them from
        #: the hellos in every turn of the loop made 100 000 ranks quadratic.
        self.others: set[int] = set()
        self.answered: set[tuple[int, str]] = set()
        self.problems: list[str] | None = None
        self.verdict: Callable[[str], bytes] | None = None
        self.selector = selectors.DefaultSelector()
        self.wait = min(30.0, max(RETRY_S, world_size / _RETRIES_PER_S))
        self.retry = encode(Retry(after=self.wait))
        listener.setblocking(False)
        self.listening = False

    def run(
        self, world_size: int, deadline: float, judge: Callable[[Rendezvous], list[str]]
    ) -> list[str]:
        stop = math.inf  # set once the verdict is out
        while (now := time.monotonic()) < stop:
            arrived = len(self.others) >= world_size - 1
            if self.problems is None and (arrived or now >= deadline):
                self.problems = judge(self.seen)
                for sock, hello in self.waiting.items():
                    self._answer(sock, hello)
                self.waiting.clear()
                # Ranks told to retry ask again: serve them until the deadline, their
                # longest wait (the client's jitter is at most 1.5x) and a grace.
                stop = max(now, deadline) + 1.5 * self.wait + GRACE_S
            if self.problems is not None and len(self.answered) >= len(self.seen.hellos):
                break
            self._expire(now)
            self._listen()
            wake = min(stop, deadline) if self.problems is None else stop
            for event, _ in self.selector.select(timeout=min(0.2, max(0.0, wake - now))):
                if event.fileobj is self.listener:
                    self._accept()
                else:
                    assert isinstance(event.fileobj, socket.socket)
                    self._receive(event.fileobj)
        assert self.problems is not None
        return self.problems

    def _expire(self, now: float) -> None:
        for sock in [s for s, peer in self.peers.items() if now - peer.opened > HELLO_S]:
            self._receive(sock)  # a loaded rank 0 may simply not have read it yet
            if sock in self.peers:
                peer = self.peers[sock]
                if peer.buffer:  # part of a message, dripping: no rank sends that slowly
                    self.seen.stranger("no complete hello within 5 s", peer)
                else:  # nothing yet: perhaps a slow rank, which asks again
                    _send(sock, encode(Retry(after=RETRY_S)))
                self._drop(sock)

    def _listen(self) -> None:
        room = self.limit - len(self.waiting) - len(self.peers) > 0
        if room and not self.listening:
            self.selector.register(self.listener, selectors.EVENT_READ)
        elif not room and self.listening:  # full: the rest wait in the listen backlog
            self.selector.unregister(self.listener)
        self.listening = room

    def _accept(self) -> None:
        for _ in range(64):  # bounded work per event: the others get their turn
            if len(self.peers) + len(self.waiting) >= self.limit:
                return
            try:
                sock, address = self.listener.accept()
            except OSError:  # nothing pending, or EMFILE: wait for connections to close
                return
            sock.setblocking(False)
            self.peers[sock] = _Peer(sock, time.monotonic(), endpoint(address[0], address[1]))
            self.selector.register(sock, selectors.EVENT_READ)

    def _receive(self, sock: socket.socket) -> None:
        hello = _read(self.peers[sock], self.key, self.seen)
        if hello is _WAIT:
            return
        if not isinstance(hello, Hello):  # foreign: recorded as a stranger
            self._drop(sock)
            return
        self.seen.hellos[(hello.rank, hello.nonce)] = said(hello)
        if hello.rank:  # rank 0 is this process
            self.others.add(hello.rank)
        self.selector.unregister(sock)
        self.peers.pop(sock)
        if self.problems is not None:
            self._answer(sock, hello)
        elif len(self.waiting) < self.hold:
            self.waiting[sock] = hello
        else:
            _send(sock, self.retry)
            sock.close()

    def _answer(self, sock: socket.socket, hello: Hello) -> None:
        if self.verdict is None:  # encoded once: only the proof differs between ranks
            self.verdict = _verdicts(self.key, self.problems or [])
        _send(sock, self.verdict(hello.nonce))
        self.answered.add((hello.rank, hello.nonce))
        sock.close()

    def _drop(self, sock: socket.socket) -> None:
        self.selector.unregister(sock)
        self.peers.pop(sock)
        sock.close()

    def close(self) -> None:
        for sock in [*self.peers, *self.waiting]:
            sock.close()
        self.selector.close()


_WAIT = object()  # _read: the hello is not complete yet


def _read(peer: _Peer, key: bytes, seen: Rendezvous) -> Hello | object | None:
    """A complete, valid hello; ``_WAIT`` while it is incomplete; ``None`` for a foreign
    peer (recorded as a stranger)."""
    try:
        data = peer.sock.recv(MAX_MESSAGE + 1 - len(peer.buffer))
    except (BlockingIOError, InterruptedError):
        return _WAIT
    except OSError:
        data = b""
    peer.buffer += data
    line, newline, _ = peer.buffer.partition(b"\n")
    if not newline:
        if data and len(peer.buffer) <= MAX_MESSAGE:
            return _WAIT
        if data:  # a peer that closes having sent nothing is no one: not counted
            seen.stranger("a message over the size limit", peer)
        return None
    message = decode(bytes(line), (Hello,))
    if not isinstance(message, Hello):
        seen.stranger("not a probe hello", peer)
        return None
    if not equal(message.proof, hello_proof(key, message.nonce, message.rank)):
        seen.stranger(f"a hello for rank {message.rank} without this launch's key", peer)
        return None
    peer.hello = message
    return message


def _verdicts(key: bytes, problems: list[str]) -> Callable[[str], bytes]:
    """The verdict line for a rank's nonce: the message encoded once, its proof (the last
    field) put in per rank."""
    listed, room = [], MAX_MESSAGE - 512  # the verdict's other fields take less
    for problem in problems[:MAX_PROBLEMS]:
        cut = problem if len(problem) <= MAX_PROBLEM else problem[: MAX_PROBLEM - 1] + "…"
        room -= len(json.dumps(cut, ensure_ascii=False).encode()) + 1
        if room < 0:  # a line over MAX_MESSAGE is no verdict to the ranks
            break
        listed.append(cut)
    ok = not problems
    blank = "0" * 64
    head, _, tail = encode(Verdict(ok=ok, problems=listed, proof=blank)).rpartition(blank.encode())
    return lambda nonce: head + verdict_proof(key, nonce, ok, listed).encode() + tail


def _send(sock: socket.socket, data: bytes) -> None:
    """Non-blocking: a new connection's send buffer (16 KiB) holds any message. A failure
    is that rank's to report (rank 0 did not answer)."""
    with contextlib.suppress(OSError):
        sock.sendall(data)
