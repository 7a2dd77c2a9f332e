"""The probe against strangers and at scale, on loopback: real rank-0 code and real client
code in threads; each hostile case ends within its timeout + 2 s (pytest-timeout) with a
clear ProbeError, and the real ranks are reported correctly."""

from __future__ import annotations

import contextlib
import json
import math
import re
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from clusterenv import ProbeError, ResourceSpec, detect_environment, probe
from clusterenv._probe import _backend, _client, _server
from clusterenv._probe._checks import (
    disagreements,
    duplicates,
    foreign,
    main_address,
    missing,
    network,
    per_node,
)
from clusterenv._probe._protocol import MAX_MESSAGE, Hello, Said, Verdict, decode, encode, said
from clusterenv.testing import torchrun_env
from tests.available import require_modules

TIMEOUT = 3.0
pytestmark = pytest.mark.timeout(TIMEOUT + 10)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def launch(world: int, port: int) -> list[tuple[ResourceSpec, dict[str, str]]]:
    """Every rank of ``torchrun --nproc_per_node=world`` (the probe uses ``port + 1``)."""
    envs = [
        dict(torchrun_env(1, world, rank, master_addr="127.0.0.1", master_port=port - 1))
        for rank in range(world)
    ]
    return [(detect_environment(env, gpu_probe=tuple), env) for env in envs]


def run_ranks(
    ranks: list[tuple[ResourceSpec, dict[str, str]]], before_others: Callable[[], object] = list
) -> dict[int, Any]:
    """Probe every rank in a thread, rank 0 first; rank -> report or ProbeError."""
    results: dict[int, Any] = {}

    def one(spec: ResourceSpec, env: dict[str, str]) -> None:
        try:
            results[spec.global_rank] = probe(spec, timeout=TIMEOUT, env=env)
        except ProbeError as error:
            results[spec.global_rank] = error

    threads = [threading.Thread(target=one, args=rank) for rank in ranks]
    threads[0].start()
    before_others()
    for thread in threads[1:]:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def stranger(port: int, act: Callable[[socket.socket], None]) -> threading.Thread:
    def run() -> None:
        for _ in range(50):  # until rank 0 listens
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT + 5)
            except OSError:
                time.sleep(0.05)
                continue
            with sock, contextlib.suppress(OSError):  # rank 0 hung up on the stranger
                act(sock)
            return

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def send(data: bytes) -> Callable[[socket.socket], None]:
    def act(sock: socket.socket) -> None:
        sock.sendall(data)
        sock.recv(100)

    return act


def drip(sock: socket.socket) -> None:
    for byte in b'{"kind": "hello"':
        sock.sendall(bytes([byte]))
        time.sleep(1.0)


FORGED = Hello(
    nonce="0" * 32,
    proof="0" * 64,
    rank=1,
    world_size=2,
    num_nodes=1,
    node_rank=0,
    local_rank=1,
    devices_per_node=2,
    master_addr="127.0.0.1",
    master_port=1,
    job_id=None,
    host="evil\x1b]0;x\x07",
    gpus=[],
)


@pytest.mark.parametrize(
    "act",
    [
        send(b"{}\n"),
        send(b"42\n"),
        send(b"[" * 5000 + b"\n"),
        send(b"[1, 2]\n"),
        send(b"x" * 1_000_000),
        send(encode(FORGED)),
    ],
    ids=["empty-object", "number", "nested", "list", "flood", "forged-hello"],
)
def test_a_stranger_is_foreign_and_the_real_ranks_are_reported(
    act: Callable[[socket.socket], None],
) -> None:
    port = free_port()
    started = time.monotonic()

    def intrude() -> None:  # the stranger has been dealt with before rank 1 starts
        stranger(port, act).join(timeout=_server.HELLO_S + 1)

    results = run_ranks(launch(2, port), before_others=intrude)
    assert time.monotonic() - started < TIMEOUT + 2
    rank0 = results[0]
    assert isinstance(rank0, ProbeError), "a stranger on the port fails the probe, loudly"
    assert "foreign connection" in str(rank0)
    assert re.search(r", from 127\.0\.0\.1:[0-9]+", str(rank0)), "the stranger is named"
    assert rank0.report is not None
    assert sorted(row["rank"] for row in rank0.report.rows) == [0, 1]  # never a third rank
    assert {row["status"] for row in rank0.report.rows} == {"listening", "connected"}
    assert "\x1b" not in str(rank0)


def test_a_dripping_stranger_delays_no_one() -> None:
    """1 byte a second: the ranks meet as soon as both are there, not after the drip."""
    port = free_port()
    started = time.monotonic()
    results = run_ranks(launch(2, port), before_others=lambda: stranger(port, drip))
    assert time.monotonic() - started < 2
    assert not isinstance(results[0], ProbeError)
    assert not isinstance(results[1], ProbeError)


def test_a_rank_0_that_drips_its_answer_keeps_the_timeout() -> None:
    """Issue 47: something on rank 0's port that answers a byte every half second, never a
    line: the rank says so at its deadline, not GRACE_S after it."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        address = listener.getsockname()

        def serve() -> None:
            with contextlib.suppress(OSError):
                while True:
                    conn, _ = listener.accept()
                    with conn:
                        for _ in range(40):
                            conn.sendall(b"{")
                            time.sleep(0.5)

        threading.Thread(target=serve, daemon=True).start()
        hello = FORGED.model_copy(update={"host": "n2"})
        deadline = time.monotonic() + 1.0
        with pytest.raises(ProbeError, match="not as rank 0"):
            _client.ask("127.0.0.1", address, hello, b"k", deadline, taken=False)
        assert time.monotonic() < deadline + _client.LINE_S + 1.0


def test_a_rank_slower_than_the_hello_limit_is_asked_again_not_judged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A loaded rank connects, then says nothing past the hello limit: rank 0 tells it to
    retry, it asks again, and the probe passes with no foreign connection."""
    monkeypatch.setattr(_server, "HELLO_S", 0.3)
    exchange, slowed = _client._exchange, threading.Event()

    def slow_first(address: tuple[str, int], data: bytes, deadline: float) -> bytes | None:
        if slowed.is_set():
            return exchange(address, data, deadline)
        slowed.set()
        with socket.create_connection(address, timeout=TIMEOUT) as sock:
            time.sleep(0.8)  # rank 0 gives up on it meanwhile
            with contextlib.suppress(OSError):
                sock.sendall(data)
                return sock.recv(9000).partition(b"\n")[0] or None
        return None

    monkeypatch.setattr(_client, "_exchange", slow_first)
    results = run_ranks(launch(2, free_port()))
    assert slowed.is_set()
    assert not isinstance(results[0], ProbeError), results[0]
    assert not isinstance(results[1], ProbeError), results[1]
    assert "foreign" not in results[0].table()


def test_a_rank_0_that_closes_without_a_word_is_asked_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A connection closed without an answer (a busy rank 0) is retried, not judged at once."""
    exchange, calls = _client._exchange, []

    def closed_twice(address: tuple[str, int], data: bytes, deadline: float) -> bytes | None:
        calls.append(address)
        return None if len(calls) <= 2 else exchange(address, data, deadline)

    monkeypatch.setattr(_client, "_exchange", closed_twice)
    results = run_ranks(launch(2, free_port()))
    assert len(calls) == 3
    assert not isinstance(results[1], ProbeError), results[1]


def test_ranks_that_disagree_on_the_world_size_are_told_so() -> None:
    """Not a foreign connection: a rank of this launch that believes another world size."""
    port = free_port()
    ranks = launch(2, port)
    env = dict(torchrun_env(1, 3, 1, master_addr="127.0.0.1", master_port=port - 1))
    ranks[1] = (detect_environment(env, gpu_probe=tuple), env)
    results = run_ranks(ranks)
    for result in results.values():
        assert isinstance(result, ProbeError)
        assert "the ranks disagree on world_size: 2 on rank(s) 0; 3 on rank(s) 1" in str(result)
        assert "foreign" not in str(result)


def test_rank_0_listens_where_an_ipv6_main_address_points() -> None:
    try:
        socket.create_server(("::1", 0), family=socket.AF_INET6).close()
    except OSError:
        pytest.skip("no IPv6 loopback on this machine")
    port = free_port()
    envs = [dict(torchrun_env(1, 2, r, master_addr="::1", master_port=port - 1)) for r in (0, 1)]
    results = run_ranks([(detect_environment(env, gpu_probe=tuple), env) for env in envs])
    assert not isinstance(results[1], ProbeError), results[1]
    assert f"reached [::1]:{port}" in results[0].table()


def test_a_name_service_that_never_answers_fails_at_the_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    released = threading.Event()

    def hang(*args: object, **kwargs: object) -> object:
        released.wait(30)
        raise socket.gaierror(socket.EAI_NONAME, "released by the test")

    monkeypatch.setattr(socket, "getaddrinfo", hang)
    spec, env = launch(2, free_port())[1]
    started = time.monotonic()
    with pytest.raises(ProbeError, match="the name service did not answer in time"):
        probe(spec, timeout=1, env=env)
    assert time.monotonic() - started < 2
    released.set()


def answering_rank_0(port: int, reply: bytes) -> socket.socket:
    """A stranger holding the probe's port that answers every hello with ``reply``."""
    fake = socket.socket()
    fake.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    fake.bind(("127.0.0.1", port))
    fake.listen()

    def answer() -> None:
        conn, _ = fake.accept()
        with conn:
            conn.recv(9000)
            conn.sendall(reply)

    threading.Thread(target=answer, daemon=True).start()
    return fake


@pytest.mark.parametrize(
    "reply",
    [
        encode(Verdict(ok=True, problems=[], proof="f" * 64)),  # forged: no launch key
        b'{"kind": "verdict", "ok": [[[]]]}\n',  # malformed
    ],
    ids=["forged", "malformed"],
)
def test_a_stranger_answering_for_rank_0_never_makes_the_probe_pass(reply: bytes) -> None:
    port = free_port()
    spec, env = launch(2, port)[1]
    with answering_rank_0(port, reply), pytest.raises(ProbeError, match="not as rank 0"):
        probe(spec, timeout=TIMEOUT, env=env)


@pytest.mark.parametrize("timeout", [math.nan, math.inf, 0.0, -1.0, 1e300])
def test_invalid_timeouts(timeout: float) -> None:
    spec, env = launch(2, free_port())[1]
    with pytest.raises(ProbeError, match="finite number of seconds"):
        probe(spec, timeout=timeout, env=env)


def test_a_huge_world_size_is_refused_not_allocated() -> None:
    env = torchrun_env(1, 2, 1, master_addr="127.0.0.1") | {"WORLD_SIZE": "10000000"}
    env |= {"GROUP_WORLD_SIZE": "5000000"}
    spec = detect_environment(env, gpu_probe=tuple)
    with pytest.raises(ProbeError, match="more ranks than the probe takes"):
        probe(spec, timeout=1, env=env)


def test_more_ranks_than_rank_0_may_hold_are_asked_to_retry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A rank 0 allowed 40 connections serves 120 ranks: the rest retry."""
    monkeypatch.setattr(_server, "capacity", lambda: 40)
    results = run_ranks(launch(120, free_port()))
    assert all(not isinstance(result, ProbeError) for result in results.values()), results
    table = results[0].table()
    assert "OK: 120 ranks on 1 node(s)" in table
    assert "104 more ranks: 104 connected on 1 node(s)" in table  # 16 rows, then counts
    assert len(results[0].table(every_row=True).splitlines()) == 122
    said = json.loads(json.dumps(results[0].to_json()))
    assert (said["ok"], said["through"], said["ranks"][1]["from"]) == (True, ["lo"], "lo 127.0.0.1")


def test_one_rank_says_what_it_did_not_check() -> None:
    spec, env = launch(1, free_port())[0]
    report = probe(spec, timeout=1, env=env)
    assert "no port was opened" in report.table()
    assert "reached" not in report.table()


def _hello(rank: int, **changes: Any) -> Said:
    fields = FORGED.model_dump() | {"rank": rank, "host": "n1", "local_rank": rank}
    return said(Hello.model_validate(fields | changes))


def test_each_check_says_what_is_wrong_and_the_fix() -> None:
    two = [_hello(0), _hello(1)]
    assert duplicates([*two, _hello(1, host="n2")]) == [
        "rank 1 is claimed by 2 processes (on n1, n2): the job was launched twice (e.g. torchrun "
        "inside an srun step with several tasks per node, or python started without srun). "
        "Fix: start each rank exactly once"
    ]
    (gone,) = missing(10_000_000, two, "h:1", 3)
    assert gone.startswith("9999998 rank(s) (2, 3, 4, 5, 6, 7, 8, 9 and 9999990 more)")
    (differ,) = disagreements([*two[:1], _hello(1, job_id="7")])
    assert "disagree on job_id: None on rank(s) 0; '7' on rank(s) 1. Fix:" in differ
    crowded, split = per_node([*two, _hello(2, host="n2")])
    assert crowded.startswith("node 0 runs 3 rank(s) but they expect 2 per node")
    assert split.startswith("node rank 0 is reported from several hosts (n1, n2). Fix:")
    assert "2 foreign connection(s)" in foreign(2, ["not a probe hello"])[0]
    assert missing(2, two, "h:1", 3) == [] == disagreements(two) == duplicates(two)


def test_the_network_checks_name_the_address_and_interfaces_that_work() -> None:
    """Rank 0's node maps its own name to 127.0.1.1, the others to its real address."""
    at = {"master_addr": "n1", "via": "198.18.0.2", "interface": "eth0"}
    ranks = [
        _hello(0, master_addr="n1", reached="127.0.1.1", via="127.0.1.1", interface="lo"),
        _hello(1, host="n2", reached="198.18.0.1", **at),
    ]
    (problem,) = main_address(ranks)
    assert problem == (
        "the main address 'n1' is 127.0.1.1 (loopback) on rank 0's node n1, but rank(s) 1 "
        "reached it at 198.18.0.1: rank 0's gloo and NCCL would bind to loopback and the "
        "others never connect. Fix: in n1's /etc/hosts map n1 to 198.18.0.1, not 127.0.1.1 "
        "(Debian's installer writes that line), or export MASTER_ADDR=198.18.0.1 "
        "GLOO_SOCKET_IFNAME=eth0 NCCL_SOCKET_IFNAME=eth0 in every rank"
    )
    one_host = [_hello(0, reached="127.0.0.1"), _hello(1, reached="127.0.0.1")]
    assert main_address(one_host) == [] == network(one_host)
    (stuck,) = network([*ranks[:1], _hello(1, host="n2", name_is_loopback=True, **at)])
    assert "rank(s) 1 reach rank 0 through eth0, but their host names resolve only" in stuck
    assert "export GLOO_SOCKET_IFNAME=eth0 NCCL_SOCKET_IFNAME=eth0 in every rank" in stuck
    assert network([*ranks[:1], _hello(1, name_is_loopback=True, interface_chosen=True)]) == []
    (gone,) = missing(3, ranks, "n1:1", 3)
    assert "s; other nodes reached it (n2), so look at the missing ranks' nodes" in gone
    away = _hello(0, host="n2", reached="198.18.0.1", via="198.18.0.2")  # rank 0 is not on n1
    (nowhere,) = missing(3, [away], "n1:1", 3)
    assert nowhere.startswith(
        "2 rank(s) (1, 2) never reached n1:1 within 3 s: rank 0 runs on n2, but the main "
        "address is 198.18.0.1, another host's, where the ranks look for rank 0. Fix: "
        "MASTER_ADDR must name rank 0's node (n2)"
    )


def test_a_verdict_of_many_long_problems_still_fits_one_message() -> None:
    """Twenty problems of 600 characters, some not ASCII: cut to what a rank accepts."""
    problems = [f"rank {n} on hôst-{'é' * 700}" for n in range(40)]
    line = _server._verdicts(b"k" * 32, problems)("n" * 32)
    assert len(line) <= MAX_MESSAGE
    verdict = decode(line.rstrip(b"\n"), (Verdict,))
    assert isinstance(verdict, Verdict)
    assert not verdict.ok
    assert verdict.problems[0].startswith("rank 0 on hôst-éé")
    assert verdict.problems[0].endswith("…")


def test_the_backend_check_runs_torch_distributed_in_a_child() -> None:
    """One rank: a real gloo process group, made and used in a child process."""
    require_modules("torch")
    spec, _ = launch(1, free_port())[0]
    _backend.check_backend(spec, "gloo", 30)


def test_the_backend_check_is_stopped_at_its_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """No time left for the child at all: it is stopped, and the error names the ports."""
    require_modules("torch")
    monkeypatch.setattr(_backend, "GRACE", 0.0)
    spec, _ = launch(2, free_port())[1]
    with pytest.raises(ProbeError, match=r"did not connect rank 1 with the other 1 within 0.2 s"):
        _backend.check_backend(spec, "gloo", 0.2)


def test_a_fake_rank_0_that_drips_bytes_keeps_no_rank_past_its_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A byte every 0.1 s, never a line: the exchange ends by the deadline plus the grace
    (a timeout per read would restart with every byte) with what came, which the rank
    then judges as no answer of rank 0's."""
    monkeypatch.setattr(_client, "GRACE_S", 0.2)
    stop = threading.Event()
    with socket.create_server(("127.0.0.1", 0)) as server:

        def dripper() -> None:
            conn, _ = server.accept()
            with conn, contextlib.suppress(OSError):
                for _ in range(100):  # then closes: a rank still reading got a partial reply
                    if stop.wait(0.1):
                        return
                    conn.sendall(b"x")

        thread = threading.Thread(target=dripper, daemon=True)
        thread.start()
        try:
            deadline = time.monotonic() + 0.5
            assert set(_client._exchange(server.getsockname(), b"hello\n", deadline) or "") == {
                ord("x")
            }
            assert time.monotonic() < deadline + 0.2 + TIMEOUT
        finally:
            stop.set()
            thread.join(timeout=TIMEOUT)
