"""HPE PALS / Cray PMI ranks, shaped as ALCF documents them for Aurora and Polaris
(PALS_RANKID, PALS_LOCAL_RANKID, PALS_LOCAL_SIZE, PALS_NODEID; Cray PMI's PMI_RANK,
PMI_SIZE, PMI_LOCAL_RANK, PMI_LOCAL_SIZE) under PBS."""

from __future__ import annotations

import pytest

from clusterenv import InconsistentEnvironmentError, MissingVariableError
from clusterenv._diagnosis.diagnose import diagnose
from clusterenv._engine.rules import job_port
from clusterenv.testing import flux_env, pals_env, slurm_env
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


def test_srun_mpi_cray_shasta_tasks_are_slurm() -> None:
    """The default MPI plugin of HPE Cray EX machines puts PALS_* into every srun task
    (recorded: tests/data/captures/cray-shasta-2x2.json); was 'world_size needs PMI_SIZE'."""
    for procid in range(4):
        env = slurm_env(2, 2, procid, mpi="cray_shasta")
        assert env["PALS_RANKID"] == str(procid)
        spec = detect(env)
        assert (spec.source.value, spec.global_rank, spec.world_size) == ("slurm", procid, 4)


def test_flux_cray_pals_tasks_are_flux() -> None:
    spec = detect(flux_env(2, 2, 3, master_addr="n1", pals=True))
    assert (spec.source.value, spec.global_rank, spec.node_rank) == ("flux", 3, 1)


def test_pbs_nodefile_gives_the_main_address_and_the_world() -> None:
    """mpiexec places node 0 on PBS_NODEFILE's first host: no MASTER_ADDR by hand; without
    Cray PMI the world is this node's ranks on every node of the job, said in a finding."""
    launch = pals_env(3, 4, 5, nodefile=True)
    spec = detect(launch)
    assert (spec.master_addr, spec.world_size, spec.node_rank) == ("x1000c0s0b0n0", 12, 1)
    assert spec.hostnames == ("x1000c0s0b0n0", "x1000c0s1b0n0", "x1000c0s2b0n0")
    launch = pals_env(3, 4, 5, nodefile=True, cray_pmi=False)
    spec = detect(launch)
    assert (spec.world_size, spec.num_nodes, spec.devices_per_node) == (12, 3, 4)
    (finding,) = diagnose(spec, launch)
    assert finding.id == "pals.world-from-nodes"
