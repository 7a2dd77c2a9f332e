"""Differential test: clusterenv.expand_hostlist against the real `scontrol show hostnames`."""

from __future__ import annotations

import random
import subprocess

import pytest

from clusterenv import HostlistError, expand_hostlist

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("slurm_cluster")]


def _number(rng: random.Random) -> str:
    return str(rng.choice([0, 1, 2, 7, 9, 10, 99, 100, 999, 1000, rng.randrange(5000)])).zfill(
        rng.choice([0, 0, 2, 3, 4])
    )


def _group(rng: random.Random) -> str:
    items = []
    for _ in range(rng.randint(1, 3)):
        lo = _number(rng)
        kind = rng.random()
        if kind < 0.4:
            items.append(lo)
        elif kind < 0.9:
            items.append(f"{lo}-{int(lo) + rng.randint(0, 12)}")
        else:  # malformed on purpose: reversed, empty, not a number, too many hosts
            items.append(rng.choice([f"{int(lo) + 3}-{lo}", "", "a-b", "-1", "0-65536", "1-3-5"]))
    return "[" + ",".join(items) + "]"


def _item(rng: random.Random) -> str:
    prefix = rng.choice(["cn", "gpu-a", "r", "n", "node-", "x"])
    text = prefix + (_group(rng) if rng.random() < 0.8 else _number(rng))
    if rng.random() < 0.25:  # a second group: cartesian product (a literal between is allowed)
        text += rng.choice(["", "n", "-x"]) + _group(rng)
    return text


def generated_hostlists(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    lists = [",".join(_item(rng) for _ in range(rng.randint(1, 4))) for _ in range(count)]
    return [
        *lists,
        "n[1-3],n2",
        "n1,,n2",
        "n[3-1]",
        "n[]",
        "n[1-2]]",
        "[1-2]",
        "n[01-3]",
        "n[1-03]",
    ]


def _scontrol(hostlist: str) -> list[str] | None:
    result = subprocess.run(
        ["scontrol", "show", "hostnames", hostlist], capture_output=True, text=True, timeout=30
    )
    # scontrol 22.05 exits 0 after "Invalid hostlist"; a rejected list prints no host.
    hosts = result.stdout.split()
    return hosts if result.returncode == 0 and hosts else None


@pytest.mark.parametrize("seed", range(4))
def test_expand_hostlist_agrees_with_scontrol(seed: int) -> None:
    disagreements = []
    for hostlist in generated_hostlists(75, seed):
        try:
            ours: list[str] | None = expand_hostlist(hostlist)
        except HostlistError:
            ours = None
        theirs = _scontrol(hostlist)
        if ours != theirs:
            disagreements.append((hostlist, ours and ours[:5], theirs and theirs[:5]))
    assert not disagreements


def test_suffix_after_bracket_is_a_documented_difference() -> None:
    """Slurm 22.05 rejects `cn[1-2]-ib`; clusterenv accepts the suffix like newer releases."""
    assert expand_hostlist("cn[1-2]-ib") == ["cn1-ib", "cn2-ib"]
    version = subprocess.run(["scontrol", "--version"], capture_output=True, text=True).stdout
    if version.split()[-1].startswith("22."):
        assert _scontrol("cn[1-2]-ib") is None
