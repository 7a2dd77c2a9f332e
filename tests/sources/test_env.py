"""The env:// contract, from torch.distributed's documentation ("Environment variable
initialization": MASTER_PORT, MASTER_ADDR, WORLD_SIZE, RANK; LOCAL_RANK and
LOCAL_WORLD_SIZE as torch.distributed.launch and the DeepSpeed launcher export them)."""

from __future__ import annotations

import pytest

from clusterenv import InconsistentEnvironmentError
from clusterenv._diagnose import diagnose
from clusterenv.testing import env_launch, kubeflow_env, torchrun_env
from tests.envs import detect, fields


def test_a_complete_contract_is_a_rank_of_its_launch() -> None:
    expected = {
        "source": "env",
        "role": "rank",
        "num_nodes": 2,
        "devices_per_node": 4,
        "world_size": 8,
        "global_rank": 5,
        "local_rank": 1,
        "node_rank": 1,
        "master_addr": "10.0.0.1",
        "master_port": 29500,
    }
    assert fields(detect(env_launch(2, 4, 5)), expected) == expected


def test_was_a_local_rank_0_of_1_before() -> None:
    """A DeepSpeed-launched process: every launcher above it wins, local no longer."""
    assert (
        detect(
            env_launch(2, 4, 5)
            | {"TORCHELASTIC_RUN_ID": "x", "GROUP_RANK": "1", "GROUP_WORLD_SIZE": "2"}
        ).source.value
        == "torchelastic"
    )
    assert detect(kubeflow_env(2, 1)).source.value == "kubeflow"
    assert detect(torchrun_env(1, 2, 1)).source.value == "torchelastic"


def test_an_incomplete_contract_is_local_with_a_warning() -> None:
    env = {k: v for k, v in env_launch(2, 4, 5).items() if k != "LOCAL_WORLD_SIZE"}
    spec = detect(env)
    assert spec.source.value == "local"
    (warning,) = diagnose(spec, env)
    assert "not LOCAL_WORLD_SIZE: not a complete env:// launch" in str(warning)


def test_a_node_rank_that_disagrees_is_an_error() -> None:
    with pytest.raises(InconsistentEnvironmentError, match="NODE_RANK='0'"):
        detect(env_launch(2, 4, 5) | {"NODE_RANK": "0"})
    assert detect(env_launch(2, 4, 5) | {"NODE_RANK": "1"}).node_rank == 1
