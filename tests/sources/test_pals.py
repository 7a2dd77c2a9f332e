"""HPE PALS / Cray PMI ranks, shaped as ALCF documents them for Aurora and Polaris
(PALS_RANKID, PALS_LOCAL_RANKID, PALS_LOCAL_SIZE, PALS_NODEID; Cray PMI's PMI_RANK,
PMI_SIZE, PMI_LOCAL_RANK, PMI_LOCAL_SIZE) under PBS."""

from __future__ import annotations

import pytest

from clusterenv import InconsistentEnvironmentError, MissingVariableError
from clusterenv.sources._geometry import job_port
from clusterenv.testing import pals_env
from tests.envs import detect, fields


def test_a_polaris_rank_with_cray_pmi() -> None:
    expected = {
        "source": "pals",
        "role": "rank",
        "num_nodes": 2,
        "devices_per_node": 4,
        "world_size": 8,
        "global_rank": 6,
        "local_rank": 2,
        "node_rank": 1,
        "master_addr": "x3001c0s13b0n0",
        "job_id": "4242.aurora-pbs-0001",
        "master_port": job_port("4242.aurora-pbs-0001"),
    }
    spec = detect(pals_env(2, 4, 6, master_addr="x3001c0s13b0n0"))
    assert fields(spec, expected) == expected


def test_an_aurora_rank_without_a_world_size_says_how_to_get_one() -> None:
    """Was: a standalone process (PALS alone) or 'start the ranks with mpirun' (Cray PMI)."""
    with pytest.raises(MissingVariableError, match="PALS gives no world size"):
        detect(pals_env(2, 12, 13, cray_pmi=False, master_addr="x1"))
    env = pals_env(2, 12, 13, cray_pmi=False, master_addr="x1") | {"WORLD_SIZE": "24"}
    assert detect(env).world_size == 24


def test_multi_node_needs_a_main_address_and_a_consistent_node_id() -> None:
    with pytest.raises(MissingVariableError, match="mpiexec --env MASTER_ADDR"):
        detect(pals_env(2, 4, 6))
    with pytest.raises(InconsistentEnvironmentError, match="PALS_NODEID='0'"):
        detect(pals_env(2, 4, 6, master_addr="x1") | {"PALS_NODEID": "0"})
    assert detect(pals_env(1, 4, 3)).master_addr == "127.0.0.1"
