"""Kubeflow PyTorchJob pods, from the variables the training operator documents
(MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK; Kubernetes sets KUBERNETES_SERVICE_HOST)."""

from __future__ import annotations

import pytest

from clusterenv import InconsistentEnvironmentError, MissingVariableError
from clusterenv._diagnosis.diagnose import diagnose
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


def test_operator_1_7_pods_are_nodes_of_nproc_per_node_processes() -> None:
    """PET_* (training operator >= 1.7, Trainer v2): 4 pods x 2 were read as 8 nodes."""
    expected = {
        "source": "kubeflow",
        "role": "node",  # the pod's own process: torchrun starts the two ranks
        "num_nodes": 4,
        "devices_per_node": 2,
        "world_size": 8,
        "node_rank": 1,
        "global_rank": 2,
        "master_addr": "pytorchjob-master-0",
        "master_port": 23456,
    }
    env = kubeflow_env(4, 1, nproc_per_node=2)
    spec = detect(env)
    assert fields(spec, expected) == expected
    (node,) = (warning for warning in diagnose(spec, env) if warning.id == "node-process")
    assert node.message == (
        "this is a PyTorchJob pod, before its torchrun: one process for this node's 2 ranks"
    )
    assert "`torchrun --nnodes=4 --nproc-per-node=2 --node-rank=1 " in node.fix
    assert detect(kubeflow_env(4, 1, nproc_per_node=1)).role.value == "rank"


def test_a_world_size_that_is_not_pods_times_processes_is_an_error() -> None:
    with pytest.raises(InconsistentEnvironmentError, match="PET_NNODES x PET_NPROC_PER_NODE"):
        detect(kubeflow_env(4, 1, nproc_per_node=2) | {"WORLD_SIZE": "4"})
