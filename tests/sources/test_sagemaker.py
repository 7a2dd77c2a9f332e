"""SageMaker training hosts, shaped as the SageMaker training toolkit 5.1.4 exports them
(``src/sagemaker_training/environment.py``, ``Environment.to_env_vars``)."""

from __future__ import annotations

import json

import pytest

from clusterenv import InconsistentEnvironmentError, InvalidVariableError
from clusterenv._diagnosis.diagnose import diagnose
from clusterenv.testing import sagemaker_env, torchrun_env
from tests.envs import detect, fields

GPUS = ("0", "1", "2", "3")


def test_a_two_host_job_with_four_gpus_each_is_two_nodes_of_four() -> None:
    expected = {
        "source": "sagemaker",
        "role": "node",
        "num_nodes": 2,
        "devices_per_node": 4,
        "world_size": 8,
        "global_rank": 4,
        "node_rank": 1,
        "hostnames": ("algo-1", "algo-2"),
        "master_addr": "algo-1",
        "master_port": 7777,
        "job_id": "train-2026-12-03-21-00-00-000",
    }
    spec = detect(sagemaker_env(2, 1, gpus=4), gpus=GPUS)
    assert fields(spec, expected) == expected
    (finding,) = [f for f in diagnose(spec, sagemaker_env(2, 1)) if f.id == "node-process"]
    assert "torchrun --nnodes=2 --nproc-per-node=4 --node-rank=1 --master-addr=algo-1" in (
        finding.fix
    )


def test_one_gpu_per_host_is_that_rank_and_a_lightning_child_is_its_rank() -> None:
    assert fields(detect(sagemaker_env(3, 2)), {"role": "rank", "global_rank": 2}) == {
        "role": "rank",
        "global_rank": 2,
    }
    child = sagemaker_env(2, 1) | {"LOCAL_RANK": "3"}
    spec = detect(child, gpus=GPUS)
    assert (spec.role.value, spec.global_rank, spec.local_rank) == ("rank", 7, 3)


def test_the_leader_is_the_first_host_in_the_toolkits_order_not_algo_1() -> None:
    env = sagemaker_env(2, 0) | {"SM_HOSTS": '["algo-2", "algo-1"]', "SM_CURRENT_HOST": "algo-1"}
    env.pop("SM_RESOURCE_CONFIG")
    spec = detect(env)
    assert (spec.master_addr, spec.node_rank, spec.hostnames) == ("algo-2", 1, ("algo-2", "algo-1"))


def test_a_current_host_copied_from_the_leader_is_refused() -> None:
    env = sagemaker_env(2, 1) | {"SM_CURRENT_HOST": "algo-1"}
    with pytest.raises(InconsistentEnvironmentError, match="SM_RESOURCE_CONFIG's current_host"):
        detect(env)


def test_a_heterogeneous_cluster_trains_on_its_distribution_groups_only() -> None:
    groups = [
        {"instance_group_name": "data", "instance_type": "ml.c5.18xlarge", "hosts": ["algo-1"]},
        {"instance_group_name": "gpu", "instance_type": "ml.p4d.24xlarge", "hosts": ["algo-2"]},
    ]
    config = {"current_host": "algo-2", "hosts": ["algo-1", "algo-2"], "instance_groups": groups}
    env = sagemaker_env(2, 1) | {
        "SM_RESOURCE_CONFIG": json.dumps(config),
        "SM_DISTRIBUTION_INSTANCE_GROUPS": '["gpu"]',
    }
    spec = detect(env)
    assert (spec.num_nodes, spec.node_rank, spec.master_addr) == (1, 0, "algo-2")
    outside = env | {
        "SM_CURRENT_HOST": "algo-1",
        "SM_RESOURCE_CONFIG": json.dumps(config | {"current_host": "algo-1"}),
    }
    assert detect(outside).role.value == "standalone"


def test_torchrun_inside_a_host_wins() -> None:
    env = sagemaker_env(2, 1) | torchrun_env(2, 4, 5)
    assert detect(env).source.value == "torchelastic"


@pytest.mark.parametrize(
    ("name", "value"),
    [("SM_HOSTS", "algo-1"), ("SM_HOSTS", '["algo 1"]'), ("SM_HOSTS", "[" * 10000)],
)
def test_hosts_that_are_not_a_json_list_of_names_are_refused(name: str, value: str) -> None:
    with pytest.raises(InvalidVariableError, match=name):
        detect(sagemaker_env(1) | {name: value})
