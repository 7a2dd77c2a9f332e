"""The probe across real network stacks (issue 31): three "hosts" that are network
namespaces (tests/launchers/netns-up.sh, 198.18.0.1..3), and faults injected with real
tools inside them (nftables drop, reject and random loss, a link taken down, one host
alone cut off). Each fault is named for what it is within the probe's timeout. A wrong
/etc/hosts line on rank 0's host is in test_hosts.py, under Slurm."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType

import pytest

from tests.launchers.harness import ON_HOST, free_port

pytestmark = pytest.mark.usefixtures("network")

MAIN = "198.18.0.1"  # rank 0's host, ce-n1


def probe_in(
    host: int,
    rank: int,
    port: int,
    timeout: float,
    *args: str,
    own_name: bool,
    extra: Mapping[str, str],
) -> subprocess.Popen[str]:
    """``clusterenv probe ARGS`` as rank ``rank`` of 3, one per host, on host ``host``:
    with the host's own name (on-host.sh), or with the machine's (``own_name=False``), which
    every host's /etc/hosts maps to 127.0.1.1 as Debian's installer does."""
    env = dict(extra) | {
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
    on = [str(ON_HOST), str(host)] if own_name else ["ip", "netns", "exec", f"ce-n{host}"]
    return subprocess.Popen(
        [*on, sys.executable, "-m", "clusterenv", "probe", "--timeout", str(timeout), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


#: The interface the emulated hosts reach each other through: what gloo and NCCL must use
#: where the host name resolves to loopback.
ETH0 = {"GLOO_SOCKET_IFNAME": "eth0"}


def launch(
    timeout: float = 10,
    *args: str,
    own_name: bool = True,
    port: int = 0,
    extra: Mapping[str, str] = MappingProxyType({}),
) -> dict[int, tuple[int, str]]:
    """Every rank, rank 0 first: rank -> (exit status, output)."""
    port = port or free_port()
    started = [
        probe_in(rank + 1, rank, port, timeout, *args, own_name=own_name, extra=extra)
        for rank in range(3)
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


#: Every TCP connection into a host from the emulated network, on the ports above 1024.
INTO_HOST = "ip saddr 198.18.0.0/24 tcp dport 1024-65535"


@contextmanager
def firewalled(namespace: str, *rules: str, hook: str = "input") -> Iterator[None]:
    """nftables ``rules``, in order, on ``hook`` of host ``namespace`` for the ``with`` block."""
    chain = f"nft add chain inet ce {hook} {{ type filter hook {hook} priority 0 ; }}"
    added = [f"nft add rule inet ce {hook} {rule}" for rule in rules]
    with in_namespace(
        namespace, "nft add table inet ce", chain, *added, undo="nft delete table inet ce"
    ):
        yield


def test_three_hosts_meet_and_gloo_connects_through_the_interface_the_probe_names() -> None:
    """Without an interface, gloo would bind to the host name's loopback address and hang:
    the probe fails and names eth0; with it, the probe passes and gloo really connects."""
    code, out = launch(10, own_name=False)[0]
    assert code == 2
    assert "rank(s) 0, 1, 2 reach rank 0 through eth0" in out
    assert "export GLOO_SOCKET_IFNAME=eth0 NCCL_SOCKET_IFNAME=eth0 in every rank" in out
    results = launch(20, "--backend", "gloo", own_name=False, extra=ETH0)
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
    with firewalled("ce-n1", f"{INTO_HOST} {verdict}"):
        results = launch(3)
    for rank in (1, 2):
        code, out = results[rank]
        assert code == 2
        assert all(words in out for words in named), out
    assert "2 rank(s) (1, 2) never reached" in results[0][1]


def test_a_host_whose_link_is_down_has_no_route() -> None:
    with in_namespace("ce-n3", "ip link set eth0 down", undo="ip link set eth0 up"):
        results = launch(3)
    code, out = results[2]
    assert code == 2
    assert "this node has no route to 198.18.0.1" in out
    assert results[1][0] == 2  # rank 0 reports the missing rank: every rank fails alike
    assert "1 rank(s) (2) never reached" in results[0][1]


def test_rank_0_unreachable_from_one_host_only_is_told_from_a_rank_0_nobody_reaches() -> None:
    """n3 alone drops what it sends to rank 0; n2 still reaches it."""
    with firewalled("ce-n3", f"ip daddr {MAIN} tcp dport 1024-65535 drop", hook="output"):
        results = launch(3)
    assert "are dropped (a firewall filters it)" in results[2][1]
    rank_0 = results[0][1]
    assert "1 rank(s) (2) never reached 198.18.0.1:" in rank_0
    assert "other nodes reached it (n2), so look at the missing ranks' nodes" in rank_0


def test_random_loss_slows_the_probe_but_is_no_fault() -> None:
    """A quarter of the packets into rank 0's host lost: TCP sends them again."""
    lossy = "ip saddr 198.18.0.0/24 numgen random mod 100 < 25 tcp dport 1024-65535 drop"
    with firewalled("ce-n1", lossy):
        results = launch(20)
    assert all(code == 0 for code, _ in results.values()), results
    assert "OK: 3 ranks on 3 node(s) reached 198.18.0.1:" in results[0][1]


def test_a_firewall_open_for_the_main_port_alone_stops_gloo_within_the_probes_time() -> None:
    """n2 accepts new connections on MASTER_PORT only: the TCP probe passes, but gloo's
    pairwise connections (ports the system picks) are dropped. gloo itself would wait for
    TCP's retries; the probe stops it and names the ports."""
    port = free_port()
    rules = (
        "ct state established,related accept",
        f"ip saddr 198.18.0.0/24 tcp dport != {port} drop",
    )
    with firewalled("ce-n2", *rules):
        results = launch(4, "--backend", "gloo", port=port)
    for rank in (0, 1, 2):
        code, out = results[rank]
        assert code == 2, out
        assert "torch.distributed (gloo)" in out
        assert "open the ports above 1024 between the nodes" in out
    assert "OK: 3 ranks on 3 node(s) reached 198.18.0.1:" in results[0][1]  # TCP passed
