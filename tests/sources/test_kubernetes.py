"""Kubernetes Indexed Jobs and JobSets, shaped as the Kubernetes Job documentation
("Indexed Job", "Job with Pod-to-Pod Communication") and the JobSet documentation's PyTorch
example show their pods."""

from __future__ import annotations

import pytest

from clusterenv import InvalidVariableError, MissingVariableError
from clusterenv.testing import deepspeed_env, kubeflow_env, kubernetes_env, skypilot_env
from tests.envs import detect, fields


def test_a_pod_with_four_gpus_describes_its_four_ranks() -> None:
    expected = {
        "source": "kubernetes",
        "role": "node",
        "num_nodes": 2,
        "devices_per_node": 4,
        "world_size": 8,
        "global_rank": 4,
        "node_rank": 1,
        "hostnames": ("train-0", "train-1"),
        "master_addr": "train-0.train",
        "master_port": 29500,
        "job_id": "train",
    }
    spec = detect(kubernetes_env(2, 1), gpus=["0", "1", "2", "3"])
    assert fields(spec, expected) == expected


def test_a_jobset_pod_finds_pod_zero_in_the_jobsets_service() -> None:
    spec = detect(kubernetes_env(4, 3, jobset="era5", job="workers") | {"MASTER_PORT": "3389"})
    assert (spec.role.value, spec.global_rank, spec.world_size) == ("rank", 3, 4)
    assert spec.master_addr == "era5-workers-0-0.era5"
    assert spec.hostnames[3] == "era5-workers-0-3"
    assert spec.job_id == "era5"


def test_master_addr_in_the_pod_template_wins() -> None:
    env = kubernetes_env(2, 1, jobset="era5") | {"MASTER_ADDR": "10.4.0.7"}
    assert detect(env).master_addr == "10.4.0.7"


def test_a_plain_indexed_job_without_master_addr_is_told_to_set_it() -> None:
    env = kubernetes_env(2, 1)
    del env["MASTER_ADDR"]
    with pytest.raises(MissingVariableError, match="MASTER_ADDR") as error:
        detect(env)
    assert "<job>-0.<service>" in str(error.value.hint)


def test_a_pod_count_is_never_guessed_from_world_size() -> None:
    env = kubernetes_env(2, 1)
    del env["PET_NNODES"]
    with pytest.raises(MissingVariableError, match="pods or processes"):
        detect(env | {"WORLD_SIZE": "8"})
    with pytest.raises(MissingVariableError, match="PET_NNODES"):
        detect(env)


def test_an_index_beyond_the_pods_is_refused() -> None:
    with pytest.raises(InvalidVariableError, match="JOB_COMPLETION_INDEX"):
        detect(kubernetes_env(2, 1) | {"JOB_COMPLETION_INDEX": "2"})


def test_a_hostname_set_by_the_template_gives_no_host_names() -> None:
    spec = detect(kubernetes_env(2, 1) | {"HOSTNAME": "trainer"})
    assert spec.hostnames == ()
    assert spec.job_id is None


def test_a_kubeflow_trainer_pod_stays_kubeflows() -> None:
    env = kubeflow_env(2, 1, nproc_per_node=4) | {
        "KUBERNETES_SERVICE_HOST": "10.96.0.1",
        "JOB_COMPLETION_INDEX": "1",
    }
    assert detect(env).source.value == "kubeflow"


@pytest.mark.parametrize(
    "platform",
    [kubernetes_env(2, 1), skypilot_env(2, 1), kubeflow_env(2, 1)],
    ids=["kubernetes", "skypilot", "kubeflow"],
)
def test_a_rank_the_deepspeed_launcher_started_in_a_pod_is_the_launchers(
    platform: dict[str, str],
) -> None:
    rank = deepspeed_env(2, 2, 3)
    spec = detect(platform | rank)
    assert (spec.source.value, spec.global_rank, spec.world_size) == ("env", 3, 4)


def test_a_lightning_child_of_a_pod_keeps_the_pod() -> None:
    # Lightning starts the node's other ranks with LOCAL_RANK (and NODE_RANK, WORLD_SIZE).
    spec = detect(kubernetes_env(2, 1) | {"LOCAL_RANK": "2"}, gpus=["0", "1", "2", "3"])
    assert (spec.source.value, spec.role.value, spec.global_rank) == ("kubernetes", "rank", 6)
