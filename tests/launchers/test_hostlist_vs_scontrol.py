"""Differential test: clusterenv.expand_hostlist against the real `scontrol show hostnames`."""

from __future__ import annotations

import random
import re

import pytest

from clusterenv import HostlistError, expand_hostlist
from tests.launchers.harness import Cluster, scontrol_hostnames

pytestmark = pytest.mark.slurm


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


def _followed_newer_slurm(hostlist: str, ours: list[str] | None, theirs: list[str] | None) -> bool:
    """Where clusterenv follows a different Slurm release than the one asked, on purpose.

    * A suffix after a bracket (``cn[1-2]-ib``): 22.05 rejects it, 23.02+ expand it, and so
      does clusterenv (InfiniBand interface names are written this way).
    * A stray closing bracket (``n[1-2]]``): 24.11 reads it as part of the names (``n1]``),
      22.05 and clusterenv reject it, since no host name has a bracket: it is a typo.
    """
    suffix = ours is not None and theirs is None and re.search(r"\][^,\[\]]", hostlist)
    stray = ours is None and theirs is not None and any("]" in host for host in theirs)
    return bool(suffix) or stray


@pytest.mark.parametrize("seed", range(4))
def test_expand_hostlist_agrees_with_scontrol(seed: int, slurm_cluster: Cluster) -> None:
    disagreements = []
    for hostlist in [*generated_hostlists(75, seed), "cn[1-2]-ib", "n[1-2]]"]:
        try:
            ours: list[str] | None = expand_hostlist(hostlist)
        except HostlistError:
            ours = None
        theirs = scontrol_hostnames(hostlist, slurm_cluster)
        if ours != theirs and not _followed_newer_slurm(hostlist, ours, theirs):
            disagreements.append((hostlist, ours and ours[:5], theirs and theirs[:5]))
    assert not disagreements


def test_suffix_after_bracket_follows_newer_slurm(slurm_cluster: Cluster) -> None:
    assert expand_hostlist("cn[1-2]-ib") == ["cn1-ib", "cn2-ib"]
    expected = None if slurm_cluster.version.startswith("22.") else ["cn1-ib", "cn2-ib"]
    assert scontrol_hostnames("cn[1-2]-ib", slurm_cluster) == expected
