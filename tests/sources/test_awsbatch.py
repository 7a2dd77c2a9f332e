"""AWS Batch multi-node parallel jobs, shaped as AWS Batch documents their variables
("Multi-node parallel jobs: environment variables")."""

from __future__ import annotations

import pytest

from clusterenv import MissingVariableError
from clusterenv._engine.rules import job_port
from clusterenv.testing import awsbatch_env
from tests.envs import detect, fields


def test_a_child_node_reaches_the_main_node_by_its_address() -> None:
    expected = {
        "source": "awsbatch",
        "role": "node",
        "num_nodes": 2,
        "devices_per_node": 2,
        "world_size": 4,
        "node_rank": 1,
        "global_rank": 2,
        "master_addr": "10.0.1.17",
        "master_port": job_port("4c1b2a3e-job"),
        "job_id": "4c1b2a3e-job",
    }
    assert fields(detect(awsbatch_env(2, 1), gpus=("0", "1")), expected) == expected


def test_the_main_node_is_node_rank_0_whatever_its_index() -> None:
    main = detect(awsbatch_env(3, 2, main=2))
    assert (main.node_rank, main.global_rank, main.master_addr) == (0, 0, "127.0.0.1")
    ranks = [detect(awsbatch_env(3, index, main=2)).node_rank for index in range(3)]
    assert ranks == [1, 2, 0]


def test_every_node_derives_the_same_port() -> None:
    ports = {detect(awsbatch_env(3, index)).master_port for index in range(3)}
    assert len(ports) == 1


def test_a_child_without_the_main_address_says_what_to_export() -> None:
    env = awsbatch_env(2, 1)
    del env["AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS"]
    with pytest.raises(MissingVariableError, match="AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4"):
        detect(env)
    assert detect(env | {"MASTER_ADDR": "10.0.1.5"}).master_addr == "10.0.1.5"
