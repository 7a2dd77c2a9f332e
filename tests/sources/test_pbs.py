"""PBS Pro / Torque job scripts, from the variables and node file the PBS documentation lists
(PBS Professional User's Guide, "Environment variables": PBS_JOBID, PBS_NODEFILE, NCPUS;
Torque adds PBS_NUM_NODES, PBS_NUM_PPN, PBS_NP)."""

from __future__ import annotations

from typing import Any

import pytest

from clusterenv import (
    InconsistentEnvironmentError,
    InvalidVariableError,
    MissingVariableError,
    detect_environment,
)
from clusterenv._engine.rules import job_port
from clusterenv.testing import Launch, mpich_env, openmpi_env, pbs_env
from tests.envs import detect, fields

SCRIPT = {"source": "pbs", "role": "batch", "global_rank": 0, "local_rank": 0, "node_rank": 0}


@pytest.mark.parametrize("torque", [False, True], ids=["pbs-pro", "torque"])
def test_a_job_script_describes_what_mpirun_should_start(torque: bool) -> None:
    expected = SCRIPT | {
        "num_nodes": 2,
        "devices_per_node": 4,
        "world_size": 8,
        "master_addr": "node01",
        "hostnames": ("node01", "node02"),
    }
    assert fields(detect(pbs_env(2, 4, torque=torque)), expected) == expected


def test_the_mpi_launcher_inside_a_pbs_job_gives_the_ranks() -> None:
    job = pbs_env(1, 2)
    assert detect(Launch(job | openmpi_env(2, 1), job.files)).source.value == "mpi"
    ranks = Launch(job | mpich_env(4, 3, ranks_per_node=2, master_addr="node01"), job.files)
    expected = {"source": "mpi", "node_rank": 1, "local_rank": 1}
    assert fields(detect(ranks), expected) == expected


@pytest.mark.parametrize(
    ("launch", "error", "words"),
    [
        (Launch({"PBS_JOBID": "4242.pbs01"}), MissingVariableError, "PBS_NODEFILE (not set)"),
        (Launch(pbs_env(2, 4)), InvalidVariableError, "cannot be read (No such file"),
        (
            Launch(pbs_env(2, 4), {"/var/spool/pbs/aux/4242.pbs01": "\n"}),
            InconsistentEnvironmentError,
            "lists no host",
        ),
        (
            Launch(pbs_env(2, 4, torque=True) | {"PBS_NUM_NODES": "3"}, pbs_env(2, 4).files),
            InconsistentEnvironmentError,
            "PBS_NUM_NODES='3'",
        ),
    ],
    ids=["no-nodefile", "nodefile-missing", "nodefile-empty", "torque-node-count"],
)
def test_wrong_but_common_environments(launch: Launch, error: type[Any], words: str) -> None:
    with pytest.raises(error, match="HINT") as raised:
        detect(launch)
    assert words in str(raised.value)


def test_a_job_id_without_a_number_spreads_its_port() -> None:
    assert detect(pbs_env(1, 1, job_id="x.pbs01")).master_port == job_port("x.pbs01")


def test_ncpus_is_shared_by_the_ranks_of_a_node() -> None:
    """PBS Pro sets NCPUS to the CPUs requested for the node (the chunk's ncpus; User's
    Guide, "Environment variables"); its mpiprocs ranks share them."""
    launch = pbs_env(2, 4, ncpus=64)
    spec = detect_environment(
        launch, gpu_probe=tuple, cpu_probe=lambda: None, read_file=launch.read_file
    )
    assert spec.cpus_per_rank == 16
    capped = detect_environment(
        launch, gpu_probe=tuple, cpu_probe=lambda: 8, read_file=launch.read_file
    )
    assert capped.cpus_per_rank == 8  # the job's cpuset on this node allows fewer


@pytest.mark.parametrize("node", [0, 1])
def test_a_pbsdsh_task_is_refused_alike_on_every_node(node: int) -> None:
    """PBS gives a pbsdsh task its node and a TM task id, no rank (on the first node not
    even the node file): never the job script's answer, and the same refusal everywhere."""
    task = pbs_env(2, 2, job_id="25.pbs-n1", pbsdsh=(node, f"{node << 29 | 2:08x}"))
    with pytest.raises(MissingVariableError, match=f"pbsdsh started on node {node}") as raised:
        detect(task)
    assert "torchrun" in str(raised.value)


def test_concurrent_array_subjobs_get_distinct_ports() -> None:
    ports = {
        detect(pbs_env(1, 1, job_id=f"21[{index}].pbs-n1", array_index=index)).master_port
        for index in (1, 2, 3)
    }
    assert len(ports) == 3
