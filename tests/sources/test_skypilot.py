"""SkyPilot tasks, shaped as SkyPilot documents its variables ("Environment variables and
secrets", "Distributed multi-node jobs")."""

from __future__ import annotations

import pytest

from clusterenv import InconsistentEnvironmentError, InvalidVariableError
from clusterenv._engine.rules import job_port
from clusterenv.testing import skypilot_env, torchrun_env
from tests.envs import detect, fields


def test_a_node_with_eight_gpus_describes_its_eight_ranks() -> None:
    expected = {
        "source": "skypilot",
        "role": "node",
        "num_nodes": 2,
        "devices_per_node": 8,
        "world_size": 16,
        "global_rank": 8,
        "hostnames": ("10.0.0.10", "10.0.0.11"),
        "master_addr": "10.0.0.10",
        "master_port": job_port("sky-2026-12-03-21-00-00-000001_mycluster_1"),
    }
    spec = detect(skypilot_env(2, 1, gpus_per_node=8), gpus=[str(i) for i in range(8)])
    assert fields(spec, expected) == expected


def test_torchrun_in_the_run_commands_wins() -> None:
    assert detect(skypilot_env(2, 1) | torchrun_env(2, 2, 3)).source.value == "torchelastic"


def test_a_node_count_that_contradicts_the_ips_is_refused() -> None:
    with pytest.raises(InconsistentEnvironmentError, match="SKYPILOT_NUM_NODES=3"):
        detect(skypilot_env(2, 1) | {"SKYPILOT_NUM_NODES": "3"})


def test_a_rank_beyond_the_nodes_or_a_bad_ip_is_refused() -> None:
    with pytest.raises(InvalidVariableError, match="SKYPILOT_NODE_RANK"):
        detect(skypilot_env(2, 1) | {"SKYPILOT_NODE_RANK": "2"})
    with pytest.raises(InvalidVariableError, match="SKYPILOT_NODE_IPS"):
        detect(skypilot_env(1) | {"SKYPILOT_NODE_IPS": "10.0.0.1;rm -rf /\n"})
