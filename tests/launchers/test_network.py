"""The probe across real network stacks (issue 31): three "hosts" that are network
namespaces (tests/launchers/netns-up.sh, 198.18.0.1..3 on one bridge), and faults injected
with real tools inside them (nftables drop and reject, a link taken down). Each fault is
named for what it is within the probe's timeout."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.launchers.harness import free_port

pytestmark = pytest.mark.usefixtures("network")

MAIN = "198.18.0.1"  # rank 0's host, ce-n1


def probe_in(
    namespace: str, rank: int, port: int, timeout: float, *args: str, **extra: str
) -> subprocess.Popen[str]:
    """``clusterenv probe ARGS`` as rank ``rank`` of 3, one per host, inside ``namespace``."""
    env = extra | {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/root"),
        "RANK": str(rank),
        "WORLD_SIZE": "3",
        "LOCAL_RANK": "0",
        "LOCAL_WORLD_SIZE": "1",
        "NODE_RANK": str(rank),
        "MASTER_ADDR": MAIN,
        "MASTER_PORT": str(port),
        "CUDA_VISIBLE_DEVICES": "",
    }
    argv = ["ip", "netns", "exec", namespace, sys.executable, "-m", "clusterenv", "probe"]
    return subprocess.Popen(
        [*argv, "--timeout", str(timeout), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


#: The interface the emulated hosts reach each other through: what gloo and NCCL must use,
#: since the host name (shared by the namespaces) resolves to 127.0.0.1.
ETH0 = {"GLOO_SOCKET_IFNAME": "eth0"}


def launch(timeout: float = 10, *args: str, **extra: str) -> dict[int, tuple[int, str]]:
    """Every rank, rank 0 first: rank -> (exit status, output)."""
    port = free_port()
    started = [
        probe_in(f"ce-n{rank + 1}", rank, port, timeout, *args, **extra) for rank in range(3)
    ]
    results = {}
    for rank, process in enumerate(started):
        out, _ = process.communicate(timeout=timeout + 30)
        results[rank] = (process.returncode, out)
    return results


@contextmanager
def in_namespace(namespace: str, *commands: str, undo: str) -> Iterator[None]:
    for command in commands:
        subprocess.run(["ip", "netns", "exec", namespace, *command.split()], check=True)
    try:
        yield
    finally:
        subprocess.run(["ip", "netns", "exec", namespace, *undo.split()], check=False)


def firewall(verdict: str) -> list[str]:
    """nftables rules in rank 0's host: ``verdict`` for every TCP connection to it."""
    return [
        "nft add table inet ce",
        "nft add chain inet ce input { type filter hook input priority 0 ; }",
        f"nft add rule inet ce input ip saddr 198.18.0.0/24 tcp dport 1024-65535 {verdict}",
    ]


def test_three_hosts_meet_and_gloo_connects_through_the_interface_the_probe_names() -> None:
    """Without an interface, gloo would bind to the host name's loopback address and hang:
    the probe fails and names eth0; with it, the probe passes and gloo really connects."""
    code, out = launch(10)[0]
    assert code == 2
    assert "rank(s) 0, 1, 2 reach rank 0 through eth0" in out
    assert "export GLOO_SOCKET_IFNAME=eth0 NCCL_SOCKET_IFNAME=eth0 in every rank" in out
    results = launch(20, "--backend", "gloo", **ETH0)
    assert all(code == 0 for code, _ in results.values()), results
    assert f"OK: 3 ranks on 3 node(s) reached {MAIN}:" in results[0][1]
    assert "through eth0" in results[0][1]
    assert "gloo: init_process_group and all_reduce over 3 ranks OK" in results[0][1]


@pytest.mark.parametrize(
    ("verdict", "named"),
    [
        ("drop", ("packets to port", "are dropped (a firewall filters it)")),
        (
            "reject with tcp reset",
            ("nothing accepts connections on port", "a firewall rejects the port"),
        ),
    ],
    ids=["dropped-is-filtered", "rejected-is-refused"],
)
def test_a_firewalled_port_is_named_for_what_the_firewall_does(
    verdict: str, named: tuple[str, str]
) -> None:
    with in_namespace("ce-n1", *firewall(verdict), undo="nft delete table inet ce"):
        results = launch(3, **ETH0)
    for rank in (1, 2):
        code, out = results[rank]
        assert code == 2
        assert all(words in out for words in named), out
    assert "2 rank(s) (1, 2) never reached" in results[0][1]


def test_a_host_whose_link_is_down_has_no_route() -> None:
    with in_namespace("ce-n3", "ip link set eth0 down", undo="ip link set eth0 up"):
        results = launch(3, **ETH0)
    code, out = results[2]
    assert code == 2
    assert "this node has no route to 198.18.0.1" in out
    assert results[1][0] == 2  # rank 0 reports the missing rank: every rank fails alike
    assert "1 rank(s) (2) never reached" in results[0][1]
