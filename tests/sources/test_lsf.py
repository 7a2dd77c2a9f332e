"""LSF job scripts and jsrun tasks, from the variables the IBM documentation lists (LSF
"Environment variables": LSB_JOBID, LSB_DJOB_HOSTFILE, LSB_MCPU_HOSTS, LSB_HOSTS; jsrun:
JSM_NAMESPACE_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE)."""

from __future__ import annotations

from typing import Any

import pytest

from clusterenv import InvalidVariableError, MissingVariableError
from clusterenv.testing import Launch, lsf_env
from tests.envs import detect, fields

H2 = ("h01", "h02")
SCRIPT = {"source": "lsf", "role": "batch", "global_rank": 0, "node_rank": 0}
TASK6 = {"source": "lsf", "role": "rank", "global_rank": 6, "local_rank": 2, "node_rank": 1}
GEOMETRY = {"num_nodes": 2, "devices_per_node": 4, "world_size": 8}
PLACE = {"master_addr": "h01", "hostnames": H2}


@pytest.mark.parametrize(
    ("launch", "expected"),
    [
        (lsf_env(2, 4), SCRIPT),
        (lsf_env(2, 4, launch_node="batch1"), SCRIPT),
        (lsf_env(2, 4, 6), TASK6),
        (lsf_env(2, 4, 6, launch_node="batch1"), TASK6),
        (Launch({"LSB_JOBID": "42", "LSB_MCPU_HOSTS": "batch1 1 h01 4 h02 4"}), SCRIPT),
    ],
    ids=["script", "script-launch-node", "jsrun", "jsrun-launch-node", "mcpu-hosts"],
)
def test_geometry(launch: Launch, expected: dict[str, Any]) -> None:
    expected = expected | GEOMETRY | PLACE
    assert fields(detect(launch), expected) == expected


@pytest.mark.parametrize(
    ("env", "error", "words"),
    [
        ({"LSB_JOBID": "42"}, MissingVariableError, "LSB_DJOB_HOSTFILE or LSB_MCPU_HOSTS"),
        (
            {"LSB_JOBID": "42", "LSB_MCPU_HOSTS": "h1 4 h2"},
            InvalidVariableError,
            "'host count' pairs",
        ),
    ],
    ids=["no-hosts", "mcpu-hosts-odd"],
)
def test_wrong_but_common_environments(env: dict[str, str], error: type[Any], words: str) -> None:
    with pytest.raises(error, match="HINT") as raised:
        detect(env)
    assert words in str(raised.value)


def test_the_launch_node_is_never_the_main_address() -> None:
    """Compute hosts with one slot each and a jsrun over fewer nodes than allocated: the
    first line of LSB_DJOB_HOSTFILE is the launch node (LSF on CSM systems), not rank 0's."""
    hostfile = "batch1\nh01\nh02\nh03\n"
    env = Launch(
        {
            "LSB_JOBID": "42",
            "LSB_DJOB_HOSTFILE": "/hf",
            "JSM_NAMESPACE_RANK": "1",
            "JSM_NAMESPACE_SIZE": "2",
            "JSM_NAMESPACE_LOCAL_RANK": "0",
            "JSM_NAMESPACE_LOCAL_SIZE": "1",
            "MASTER_PORT": "29500",
        },
        {"/hf": hostfile},
    )
    spec = detect(env)
    assert (spec.num_nodes, spec.master_addr) == (2, "h01")


def test_a_jsrun_task_without_the_jobs_lsb_variables() -> None:
    """JSM_NAMESPACE_* present, LSB_* not: still a jsrun task, never a local rank 0 of 1."""
    env = {
        "JSM_NAMESPACE_RANK": "5",
        "JSM_NAMESPACE_SIZE": "12",
        "JSM_NAMESPACE_LOCAL_RANK": "1",
        "JSM_NAMESPACE_LOCAL_SIZE": "4",
        "MASTER_ADDR": "h1",
    }
    spec = detect(env)
    assert (spec.source.value, spec.node_rank, spec.num_nodes, spec.job_id) == ("lsf", 1, 3, None)
    with pytest.raises(MissingVariableError, match="jsrun -E MASTER_ADDR"):
        detect({k: v for k, v in env.items() if k != "MASTER_ADDR"})
