"""detect_environment() in real Grid Engine jobs (Son of Grid Engine 8.1.9 in a chroot,
tests/launchers/gridengine-up.sh), against the job's own truth: NSLOTS, NHOSTS, the queue's
host, the array task, the MPI rank."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.launchers.harness import Cluster, launch, record_capture
from tests.truth import check_gridengine, check_mpi

QSUB = "qsub -sync y -b y -cwd -o /dev/null -j y"
LAUNCHES = {
    "gridengine-pe": f"{QSUB} -pe mpi 4 {{task}}",
    "gridengine-array": f"{QSUB} -t 1-3 {{task}}",
    "gridengine-no-pe": f"{QSUB} {{task}}",
    "gridengine-qrsh": "qrsh -cwd -pe mpi 2 {task}",
    # Open MPI 4.1.4 (Debian 12, in the chroot) reads PE_HOSTFILE: its ranks are MPI's.
    "gridengine-mpirun": f"{QSUB} -pe mpi 4 mpirun --allow-run-as-root -np 4 {{task}}",
}


@pytest.mark.gridengine
@pytest.mark.parametrize("name", sorted(LAUNCHES))
def test_gridengine_job(name: str, tmp_path: Path, gridengine: Cluster) -> None:
    records = launch(LAUNCHES[name], tmp_path, timeout=120, slurm=gridengine)
    assert len(records) == {"gridengine-array": 3, "gridengine-mpirun": 4}.get(name, 1)
    check_gridengine(records)
    if name == "gridengine-mpirun":
        check_mpi(records, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")
        assert all(record["env"]["PE_HOSTFILE"] for record in records)
    record_capture(
        name, LAUNCHES[name], records, {"launcher": "gridengine", "version": "SGE 8.1.9"}
    )
