from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clusterenv import HostlistError, compress_hostlist, expand_hostlist, first_host
from clusterenv.hostlist import MAX_HOSTS, count_hosts

# Expected values are what `scontrol show hostnames` (Slurm 22.05.8) prints.
EXPANSIONS = [
    ("cn001", ["cn001"]),
    ("cn[001-003],gpu-a1", ["cn001", "cn002", "cn003", "gpu-a1"]),
    ("cn[1,3,5-7]", ["cn1", "cn3", "cn5", "cn6", "cn7"]),
    ("r[1-2]n[1-2]", ["r1n1", "r1n2", "r2n1", "r2n2"]),
    ("n[1-2][3-4]", ["n13", "n14", "n23", "n24"]),
    ("r[1-2]-x[3-4]", ["r1-x3", "r1-x4", "r2-x3", "r2-x4"]),
    ("n[01-3]", ["n01", "n02", "n03"]),
    ("n[1-03]", ["n1", "n2", "n3"]),
    ("n[9-11]", ["n9", "n10", "n11"]),
    ("n[09-11]", ["n09", "n10", "n11"]),
    ("n[5-05]", ["n5"]),
    ("n[1-3],n2", ["n1", "n2", "n3", "n2"]),
    ("n1,,n2", ["n1", "n2"]),
    ("n1 n2", ["n1", "n2"]),
    ("n[1-2] ,n3", ["n1", "n2", "n3"]),
    ("[1-2]", ["1", "2"]),
    ("n[1,1]", ["n1", "n1"]),
    ("n1,", ["n1"]),
    # Accepted as a suffix, like newer Slurm; 22.05 rejects it.
    ("cn[1-2]-ib", ["cn1-ib", "cn2-ib"]),
]


@pytest.mark.parametrize(("hostlist", "hosts"), EXPANSIONS)
def test_expand(hostlist: str, hosts: list[str]) -> None:
    assert expand_hostlist(hostlist) == hosts
    assert first_host(hostlist) == hosts[0]
    assert count_hosts(hostlist) == len(hosts)


@pytest.mark.parametrize(
    "hostlist",
    [
        "",
        ",",
        "n[3-1]",
        "n[-1]",
        "n[a-b]",
        "n[1-2]]",
        "n[1-2",
        "n1-2]",
        "n[]",
        "n[1-2,,3]",
        "n[1-3-5]",
        "n[[1]]",
        "n[0-65536]",
        "n[ 1-2]",
        "n[1,2-]",
        "r[0-65535]n[0-65535]",
    ],
)
def test_malformed(hostlist: str) -> None:
    with pytest.raises(HostlistError, match="HINT"):
        expand_hostlist(hostlist)


def test_first_host_does_not_expand() -> None:
    huge = "r[00000-65535]n[00000-65535]"  # 4 * 10**9 hosts
    assert first_host(huge) == "r00000n00000"
    assert count_hosts(huge) == MAX_HOSTS + 1  # "more than MAX_HOSTS", without a 10-digit sum
    with pytest.raises(HostlistError, match="more than"):
        expand_hostlist(huge)


@pytest.mark.parametrize(
    ("hosts", "hostlist"),
    [
        (["cn001", "cn002", "cn003", "gpu-a1"], "cn[001-003],gpu-a1"),
        (["cn001", "cn003", "gpu-a1"], "cn[001,003],gpu-a1"),
        (["n9", "n10", "n11"], "n[9-11]"),
        (["n1", "x", "n2"], "n1,x,n2"),
        (["n2", "n1"], "n[2,1]"),
        (["login"], "login"),
        ([], ""),
    ],
)
def test_compress(hosts: list[str], hostlist: str) -> None:
    assert compress_hostlist(hosts) == hostlist


@pytest.mark.parametrize("host", ["", "a,b", "a[1]", "a b"])
def test_compress_rejects_unlistable_names(host: str) -> None:
    with pytest.raises(HostlistError, match="HINT"):
        compress_hostlist(["n1", host])


_HOST = st.builds(
    lambda prefix, number, width: f"{prefix}{number:0{width}d}" if number is not None else prefix,
    st.sampled_from(["cn", "gpu-a", "r1n", "n", "x-", ""]),
    st.one_of(st.none(), st.integers(0, 1200)),
    st.integers(0, 4),
).filter(bool)


@given(st.lists(_HOST, min_size=1, max_size=60))
def test_round_trip(hosts: list[str]) -> None:
    assert expand_hostlist(compress_hostlist(hosts)) == hosts


def test_long_runs_split_below_slurms_range_limit() -> None:
    hosts = [f"n{i}" for i in range(70000)]
    assert expand_hostlist(compress_hostlist(hosts)) == hosts
