"""The MPI source: Open MPI, MPICH/Intel MPI (hydra), MVAPICH, from documented variables."""

from __future__ import annotations

import json
from typing import Any

import pytest

from clusterenv import (
    InconsistentEnvironmentError,
    MissingVariableError,
    ResourceSpec,
    detect_environment,
)
from clusterenv._cli import main
from clusterenv.testing import mpich_env, openmpi_env, slurm_env


def detect(env: dict[str, str]) -> ResourceSpec:
    return detect_environment(env, gpu_probe=tuple)


def mvapich(world: int, local_size: int, rank: int, local_rank: int) -> dict[str, str]:
    return {
        "MV2_COMM_WORLD_RANK": str(rank),
        "MV2_COMM_WORLD_SIZE": str(world),
        "MV2_COMM_WORLD_LOCAL_RANK": str(local_rank),
        "MV2_COMM_WORLD_LOCAL_SIZE": str(local_size),
        "MASTER_ADDR": "node01",
    }


GEOMETRY = ("source", "num_nodes", "devices_per_node", "world_size", "global_rank")
PLACE = ("local_rank", "node_rank", "master_addr")


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (openmpi_env(3, 2), ("mpi", 1, 3, 3, 2, 2, 0, "127.0.0.1")),
        (mpich_env(3, 1), ("mpi", 1, 3, 3, 1, 1, 0, "127.0.0.1")),
        (mpich_env(4, 2, ranks_per_node=2, master_addr="n1"), ("mpi", 2, 2, 4, 2, 0, 1, "n1")),
        (mpich_env(4, 3, ranks_per_node=2, master_addr="n1"), ("mpi", 2, 2, 4, 3, 1, 1, "n1")),
        # by slot (mpirun's default): rank 5 of 4 x 2 is local 1 on node 2
        (mvapich(8, 2, 5, 1), ("mpi", 4, 2, 8, 5, 1, 2, "node01")),
        # round robin (--map-by node): rank 6 of 4 nodes x 2 is local 1 on node 2
        (mvapich(8, 2, 6, 1), ("mpi", 4, 2, 8, 6, 1, 2, "node01")),
        # mpirun inside a Slurm allocation: the MPI ranks, not the batch step
        (
            slurm_env(nodes=1, step="batch") | openmpi_env(2, 1),
            ("mpi", 1, 2, 2, 1, 1, 0, "127.0.0.1"),
        ),
    ],
    ids=[
        "openmpi",
        "mpich",
        "mpich-2-nodes",
        "mpich-2-nodes-last",
        "by-slot",
        "round-robin",
        "in-slurm",
    ],
)
def test_mpi_geometry(env: dict[str, str], expected: tuple[Any, ...]) -> None:
    spec = detect(env)
    assert (spec.source.value, *(getattr(spec, f) for f in GEOMETRY[1:] + PLACE)) == expected
    assert spec.role.value == "rank"


def test_srun_with_a_pmi_plugin_stays_slurm() -> None:
    task = slurm_env(nodes=2, tasks_per_node=2, procid=3)
    pmi2 = task | {"PMI_RANK": "3", "PMI_SIZE": "4", "PMI_FD": "7", "SLURM_MPI_TYPE": "pmi2"}
    pmix = task | {"PMIX_RANK": "3", "PMIX_NAMESPACE": "slurm.pmix.4242.0"}
    for env in (pmi2, pmix):
        spec = detect(env)
        assert (spec.source.value, spec.node_rank, spec.hostnames) == (
            "slurm",
            1,
            ("cn001", "cn002"),
        )


def test_multi_node_without_master_addr_says_what_to_export() -> None:
    with pytest.raises(MissingVariableError, match=r"2 nodes.*mpirun -x MASTER_ADDR"):
        detect(mpich_env(4, 1, ranks_per_node=2))


@pytest.mark.parametrize(
    "env",
    [
        mvapich(3, 2, 2, 0),  # 3 ranks cannot be 2 per node
        mvapich(8, 2, 5, 0),  # neither by slot (local 1) nor round robin (local 1)
    ],
    ids=["uneven", "unplaceable"],
)
def test_an_unknowable_node_is_said_clearly(env: dict[str, str]) -> None:
    with pytest.raises(InconsistentEnvironmentError, match="cannot tell the node") as error:
        detect(env)
    assert "MV2_COMM_WORLD_LOCAL_SIZE='2'" in str(error.value)
    assert "--map-by ppr:N:node" in str(error.value)


def test_pmix_without_a_size_names_what_is_missing() -> None:
    with pytest.raises(MissingVariableError, match="world_size needs OMPI_COMM_WORLD_SIZE"):
        detect({"PMIX_RANK": "0", "PMIX_NAMESPACE": "prterun-host-1@1"})


def test_forcing_mpi_and_the_inspect_warning(tmp_path: Any, capsys: Any) -> None:
    assert detect(openmpi_env(2, 0) | {"CLUSTERENV_SOURCE": "mpi"}).source.value == "mpi"
    path = tmp_path / "env.json"
    path.write_text(json.dumps(slurm_env(nodes=1, step="batch") | openmpi_env(2, 1)))
    assert main(["inspect", "--strict", "--env-file", str(path)]) == 1
    assert "mpirun inside a Slurm job" in " ".join(capsys.readouterr().out.split())
