"""Volcano jobs, shaped as Volcano's svc, env and pytorch job plugins write their variables
(Volcano's "Job plugins" and the pytorch plugin's user guide)."""

from __future__ import annotations

import pytest

from clusterenv import InconsistentEnvironmentError, MissingVariableError
from clusterenv.testing import volcano_env
from tests.envs import detect, fields

TASKS = {"master": 1, "worker": 2}


def test_the_pytorch_plugin_counts_pods_not_processes() -> None:
    expected = {
        "source": "volcano",
        "role": "node",
        "num_nodes": 3,
        "devices_per_node": 4,
        "world_size": 12,
        "node_rank": 2,
        "global_rank": 8,
        "hostnames": ("train-master-0.train", "train-worker-0.train", "train-worker-1.train"),
        "master_addr": "train-master-0.train",
        "master_port": 23456,
    }
    spec = detect(volcano_env(TASKS, "worker", 1, pytorch=True), gpus=("0", "1", "2", "3"))
    assert fields(spec, expected) == expected


def test_one_task_without_the_pytorch_plugin_is_read_from_its_hosts() -> None:
    spec = detect(volcano_env(task="worker", index=1))
    assert (spec.role.value, spec.num_nodes, spec.node_rank) == ("rank", 2, 1)
    assert (spec.master_addr, spec.master_port) == ("train-worker-0.train", 29500)


def test_several_tasks_without_the_pytorch_plugin_are_ambiguous() -> None:
    with pytest.raises(MissingVariableError, match="pytorch plugin"):
        detect(volcano_env(TASKS, "worker", 0))


def test_counts_that_disagree_are_refused() -> None:
    env = volcano_env(TASKS, "worker", 1, pytorch=True)
    with pytest.raises(InconsistentEnvironmentError, match="VC_WORKER_NUM"):
        detect(env | {"VC_WORKER_NUM": "3"})
    with pytest.raises(InconsistentEnvironmentError, match="WORLD_SIZE='4'"):
        detect(env | {"WORLD_SIZE": "4"})
    # A rank Lightning started on this node replaced WORLD_SIZE: not a contradiction.
    assert (
        detect(env | {"WORLD_SIZE": "12", "LOCAL_RANK": "1"}, gpus=("0", "1", "2", "3")).global_rank
        == 9
    )


def test_volcano_wins_over_kubeflow_whose_generic_names_its_plugin_sets() -> None:
    env = volcano_env(TASKS, "master", 0, pytorch=True)
    assert "KUBERNETES_SERVICE_HOST" in env
    assert detect(env).source.value == "volcano"
