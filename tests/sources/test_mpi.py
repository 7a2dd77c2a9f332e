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
from clusterenv.testing import flux_env, mpich_env, openmpi_env, slurm_env


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
    """Hydra (MPICH, Intel MPI) rejects Open MPI's -x: its option is -genv NAME VALUE."""
    with pytest.raises(MissingVariableError, match=r"2 nodes.*mpirun -genv MASTER_ADDR \$"):
        detect(mpich_env(4, 1, ranks_per_node=2))
    two_nodes = {
        "OMPI_COMM_WORLD_RANK": "3",
        "OMPI_COMM_WORLD_SIZE": "4",
        "OMPI_COMM_WORLD_LOCAL_RANK": "1",
        "OMPI_COMM_WORLD_LOCAL_SIZE": "2",
    }
    with pytest.raises(MissingVariableError, match=r"mpirun -x MASTER_ADDR="):
        detect(two_nodes)


def _open_mpi_5(rank: int, local_rank: int, size: int = 4, local_size: int = 4) -> dict[str, str]:
    """A rank of Open MPI 5.0.11's mpirun (tests/data/captures/openmpi-5-np4.json)."""
    return {
        "OMPI_COMM_WORLD_RANK": str(rank),
        "OMPI_COMM_WORLD_SIZE": str(size),
        "OMPI_COMM_WORLD_LOCAL_RANK": str(local_rank),
        "OMPI_COMM_WORLD_LOCAL_SIZE": str(local_size),
        "OMPI_VERSION": "5.0.11",
        "PMIX_RANK": str(rank),
        "PMIX_NAMESPACE": "prterun-host-9770@1",
        "PRTE_LAUNCHED": "1",
    }


def test_open_mpi_5_local_ranks_in_binding_order_are_one_node() -> None:
    """mpirun -n 4 on one host: world ranks 0-3 get local ranks 0, 2, 1, 3 (was: an error
    on ranks 1 and 2)."""
    for rank, local_rank in enumerate((0, 2, 1, 3)):
        spec = detect(_open_mpi_5(rank, local_rank))
        assert (spec.num_nodes, spec.node_rank, spec.local_rank) == (1, 0, local_rank)


def test_open_mpi_5_over_several_nodes_says_it_cannot_tell_the_node() -> None:
    """Even where the local rank fits a placement (rank 2, local 1 of 2 per node looks
    round robin), it is binding order, not evidence: never guess the node."""
    with pytest.raises(InconsistentEnvironmentError, match="Open MPI 5 numbers local ranks"):
        detect(_open_mpi_5(2, 1, size=4, local_size=2) | {"MASTER_ADDR": "n1"})


def test_a_bare_pmi_rank_inside_a_flux_task_is_flux() -> None:
    """Flux's PMI server sets PMI_RANK/PMI_SIZE in its tasks: they are Flux's ranks."""
    env = flux_env(2, 2, 3, master_addr="n1") | {"PMI_RANK": "3", "PMI_SIZE": "4"}
    assert detect(env).source.value == "flux"


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
    assert main(["inspect", "--strict", "--env-file", str(path)]) == 0  # a note: not a failure
    assert "note [mpi.nodes-derived]: mpirun inside a Slurm job" in " ".join(
        capsys.readouterr().out.split()
    )
