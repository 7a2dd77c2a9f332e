"""Kubeflow PyTorchJob pods, from the variables the training operator documents
(MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK; Kubernetes sets KUBERNETES_SERVICE_HOST)."""

from __future__ import annotations

import pytest

from clusterenv import MissingVariableError
from clusterenv.testing import kubeflow_env, torchrun_env
from tests.envs import detect, fields


def test_each_pod_is_a_node_of_one_rank() -> None:
    expected = {
        "source": "kubeflow",
        "role": "rank",
        "num_nodes": 3,
        "devices_per_node": 1,
        "world_size": 3,
        "global_rank": 2,
        "local_rank": 0,
        "node_rank": 2,
        "master_addr": "pytorchjob-master-0",
    }
    assert fields(detect(kubeflow_env(3, 2)), expected) == expected


def test_torchrun_inside_a_kubeflow_pod_is_torchrun() -> None:
    env = kubeflow_env(2, 1) | torchrun_env(2, 4, 5, master_addr="pytorchjob-master-0")
    expected = {"source": "torchelastic", "world_size": 8, "node_rank": 1}
    assert fields(detect(env), expected) == expected


def test_a_pod_without_its_port_says_so() -> None:
    env = {k: v for k, v in kubeflow_env(2, 1).items() if k != "MASTER_PORT"}
    with pytest.raises(MissingVariableError, match="HINT") as raised:
        detect(env)
    assert "MASTER_PORT" in str(raised.value)
