"""Vertex AI custom jobs, shaped as Vertex AI documents ``CLUSTER_SPEC`` ("Distributed
training")."""

from __future__ import annotations

import json

import pytest

from clusterenv import InconsistentEnvironmentError, InvalidVariableError
from clusterenv.testing import torchrun_env, vertex_env
from tests.envs import detect, fields

PRIMARY = "cmle-training-workerpool0-1234567890-0"


def test_the_primary_then_the_workers_are_the_nodes() -> None:
    expected = {
        "source": "vertex",
        "role": "node",
        "num_nodes": 3,
        "devices_per_node": 2,
        "world_size": 6,
        "node_rank": 2,
        "master_addr": PRIMARY,
        "master_port": 2222,
    }
    spec = detect(vertex_env(2, "workerpool1", 1), gpus=("0", "1"))
    assert fields(spec, expected) == expected
    assert spec.hostnames[0] == PRIMARY
    assert detect(vertex_env(2)).node_rank == 0


def test_per_replica_rank_and_world_size_are_not_read_as_processes() -> None:
    env = vertex_env(1, "workerpool1", 0) | {"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": PRIMARY}
    spec = detect(env, gpus=("0", "1", "2", "3"))
    assert (spec.world_size, spec.global_rank, spec.role.value) == (8, 4, "node")


def test_a_reduction_server_runs_no_training_ranks() -> None:
    spec = detect(vertex_env(1, "workerpool2", 0, servers=1))
    assert (spec.role.value, spec.num_nodes) == ("standalone", 1)


def test_torchrun_inside_a_replica_wins() -> None:
    assert detect(vertex_env(1) | torchrun_env(2, 2, 1)).source.value == "torchelastic"


def test_a_spec_with_two_primaries_or_no_task_is_refused() -> None:
    spec = json.loads(vertex_env(1)["CLUSTER_SPEC"])
    spec["cluster"]["workerpool0"].append("other-0:2222")
    with pytest.raises(InconsistentEnvironmentError, match="workerpool0 lists 2"):
        detect({"CLUSTER_SPEC": json.dumps(spec)})
    with pytest.raises(InvalidVariableError, match="CLUSTER_SPEC"):
        detect({"CLUSTER_SPEC": '{"cluster": {}}'})
    with pytest.raises(InvalidVariableError, match="not valid JSON"):
        detect({"CLUSTER_SPEC": "{"})
