"""detect_environment() in real PBS jobs (OpenPBS 23.06.06 built from source: a server and
two MoMs, pbs-n1 and pbs-n2, in a namespace of their own: tests/launchers/pbs-up.sh), against
PBS's own truth in every process: its node file, ``PBS_NODENUM`` and ``PBS_TASKNUM``."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.launchers.conftest import mpi_wheel, mpi_wheel_version
from tests.launchers.harness import Cluster, launch, record_capture
from tests.truth import CHECKS, check_pbs, check_torchrun

#: Jobs run as an ordinary user (PBS runs none of root's): blocking until the job ends.
QSUB = "qsub -W block=true -o /dev/null -j oe"
#: ompthreads=1: PBS sets OMP_NUM_THREADS to the chunk's ncpus otherwise, which each of its
#: mpiprocs ranks would run (omp-oversubscribed, rightly).
TWO_NODES = "-l select=2:ncpus=2:mpiprocs=2:ompthreads=1 -l place=scatter"
#: An array job, and until every subjob has finished: qsub -W block never returns for an
#: array, and a plain qsub leaves its daemon holding the output it was given (a file here).
ARRAY = (
    "qsub -J 1-3 -o /dev/null -j oe -- {task} >job.id 2>&1 </dev/null && id=$(cat job.id) && "
    "until qstat -x -f $id | grep -q 'job_state = F'; do sleep 0.5; done"
)
LAUNCHES = {
    "pbs-job-script": f"{QSUB} {TWO_NODES} -- {{task}}",
    "pbs-one-chunk": f"{QSUB} -l select=1:ncpus=2:mpiprocs=2:ompthreads=1 -- {{task}}",
    "pbs-pack": f"{QSUB} -l select=2:ncpus=1:mpiprocs=1 -l place=pack -- {{task}}",
    "pbs-pbsdsh": f"{QSUB} {TWO_NODES} -- /opt/pbs/bin/pbsdsh -- {{task}}",
    "pbs-array": ARRAY,
    # An interactive job's shell on its first node, typed into: qsub -I wants a terminal.
    "pbs-interactive": "echo '{task}; exit' | script -qec "
    "'qsub -I -l select=2:ncpus=1:mpiprocs=1 -l place=scatter' /dev/null",
    # torchrun once per node, as the refusal of a pbsdsh task advises: each node's own rank
    "pbs-torchrun-per-node": f"{QSUB} -l select=2:ncpus=2:mpiprocs=1:ompthreads=1 "
    "-l place=scatter -- "
    "/opt/pbs/bin/pbsdsh -- /bin/bash -c '{python} -m torch.distributed.run --nnodes=2 "
    "--nproc-per-node=2 --node-rank=$PBS_NODENUM --master-addr=pbs-n1 --master-port={port} "
    "{report} {out}'",
}
TASKS = {"pbs-pbsdsh": 4, "pbs-array": 3, "pbs-torchrun-per-node": 4}
#: MPI inside a job, its ranks started through PBS's task manager (pbs_tmrsh: no ssh), the
#: main address exported as the hint of the MPI source says: the job script runs on node 0.
MPI = {
    # MPICH's hydra reads the node file; its proxies start by pbs_tmrsh.
    "mpich": "{bin}/mpiexec -launcher rsh -launcher-exec /opt/pbs/bin/pbs_tmrsh "
    "-f $PBS_NODEFILE -n 4 -genv MASTER_ADDR $(hostname)",
    # Open MPI 5 (PRRTE) reads the allocation itself; its daemons start by pbs_tmrsh too.
    "openmpi": "{bin}/mpirun --prefix {bin}/.. --prtemca plm_ssh_agent "
    f"{Path(__file__).with_name('pbs-tmrsh-sh')} -x MASTER_ADDR=$(hostname) -n 4",
}


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A folder the jobs' user can write (pytest's own are root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="clusterenv-pbs-", dir="/tmp"))
    (path / "records").mkdir()
    for folder in (path, path / "records"):
        folder.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.pbs
@pytest.mark.parametrize("name", sorted(LAUNCHES))
def test_pbs_job(name: str, workdir: Path, pbs: Cluster) -> None:
    records = launch(LAUNCHES[name], workdir, timeout=120, slurm=pbs)
    assert len(records) == TASKS.get(name, 1)
    if name == "pbs-torchrun-per-node":
        check_torchrun(records)
    else:
        check_pbs(records)
    launcher = "torchrun+pbs" if name == "pbs-torchrun-per-node" else "pbs"
    record_capture(name, LAUNCHES[name], records, {"launcher": launcher, "version": pbs.version})


@pytest.mark.pbs
@pytest.mark.parametrize("wheel", sorted(MPI))
def test_mpi_inside_a_pbs_job(wheel: str, workdir: Path, pbs: Cluster) -> None:
    """mpiexec in a two-node job script: MPICH's ranks are right on both hosts (checked
    against hydra's rank and the host it placed each on, ``PMI_HOSTNAME``: both host names
    are addresses of the PBS namespace, so hydra starts pbs-n2's proxy itself, not through
    pbs_tmrsh); Open MPI 5's ranks, started on pbs-n2 through PBS's task manager, cannot
    tell their node (local ranks in binding order) and are refused alike, never given a
    wrong node."""
    launcher = MPI[wheel].format(bin=mpi_wheel(wheel))
    command = f"{QSUB} {TWO_NODES} -- /bin/bash -c '{launcher} {{task}}'"
    records = launch(command, workdir, timeout=120, slurm=pbs)
    assert len(records) == 4
    CHECKS[f"{wheel}+pbs"](records)
    record_capture(
        f"pbs-{wheel}",
        command,
        records,
        {"launcher": f"{wheel}+pbs", "version": f"{wheel} {mpi_wheel_version(wheel)}"},
    )
