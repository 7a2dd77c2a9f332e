"""HPE PALS / Cray PMI: a rank of ``mpiexec`` on HPE Cray EX systems under PBS (ALCF's
Aurora and Polaris, and the like).

PALS names each rank and its node (``PALS_RANKID``, ``PALS_LOCAL_RANKID``,
``PALS_LOCAL_SIZE``, ``PALS_NODEID``) but may not give the world size; Cray PMI gives it
(``PMI_SIZE``, beside ``PMI_RANK``, ``PMI_LOCAL_RANK``, ``PMI_LOCAL_SIZE``). Such a rank must
be read here, before the MPI source, whose MPICH variables it lacks. The nodes follow from
the ranks per node, and ``PALS_NODEID`` must agree. Without a world size, the ranks of this
node on every node of ``PBS_NODEFILE`` (mpiexec's default host file; a finding says so).
The main address is ``MASTER_ADDR``, else the loopback address on one node, else the first
node of ``PBS_NODEFILE``, where mpiexec places node 0; the port ``MASTER_PORT``, else
derived from the PBS job.

Slurm's ``cray_shasta`` MPI plugin (``srun --mpi=cray_shasta``, the default on HPE Cray EX)
and Flux's ``cray-pals`` plugin set ``PALS_*`` in their own tasks: there the scheduler wins
(:meth:`~clusterenv.sources.Detector.borrowable`), and PALS is PALS only under mpiexec.
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

__all__ = ["DETECTOR", "PalsDetector"]

_HINT = "mpiexec (HPE PALS / Cray PMI) sets this in every rank; start the ranks with mpiexec"
_SIZE_HINT = (
    "PALS gives no world size without Cray PMI: launch with mpiexec's Cray PMI (PMI_SIZE), "
    "or export WORLD_SIZE to every rank"
)


class PalsDetector(Detector):
    source = Source.PALS
    kind = Kind.LAUNCHER
    name = "HPE PALS"
    reason = "PALS_RANKID (or Cray PMI_LOCAL_RANK) is set: an mpiexec rank on HPE PALS"
    proof = (
        "documented: [ALCF, running jobs on "
        "Aurora](https://docs.alcf.anl.gov/aurora/running-jobs-aurora/) and Polaris (`mpiexec` "
        "with `PBS_NODEFILE`, `PALS_*`, Cray PMI's `PMI_*`). The `PALS_*` of Slurm's "
        "`cray_shasta` plugin are live, under Slurm"
    )
    finding_ids = ("pals.world-from-nodes",)
    variables = (
        "PALS_",
        "PMI_RANK",
        "PMI_SIZE",
        "PMI_LOCAL_RANK",
        "PMI_LOCAL_SIZE",
        "PBS_JOBID",
        "PBS_NODEFILE",
    )
    launch_keys = ("PALS_APID", "PBS_JOBID")
    launcher = "mpiexec"
    version_command = ("mpiexec", "--version")
    hints = Hints(
        num_nodes="change mpiexec's hosts (-n / --ppn with the nodes of the PBS job)",
        devices="change mpiexec --ppn",
        uneven="start the same number of ranks on every node (mpiexec --ppn)",
        main="export MASTER_ADDR as the host of rank 0 to every rank, e.g. mpiexec --env "
        "MASTER_ADDR=$(hostname) ...",
    )

    def present(self, env: Mapping[str, str]) -> bool:
        return "PALS_RANKID" in env or ("PMI_LOCAL_RANK" in env and "PMI_RANK" in env)

    def borrowable(self, env: Mapping[str, str]) -> bool:
        # Slurm's cray_shasta MPI plugin and Flux's cray-pals shell plugin set PALS_* in
        # their own tasks (measured: srun --mpi=cray_shasta, Slurm 22.05 and 24.11).
        return True

    def read(self, reader: EnvReader, gpus: Gpus) -> Fields:
        hosts = self._hosts(reader)
        fields = read_ranks(
            reader,
            world=("PMI_SIZE", "WORLD_SIZE"),
            rank=("PALS_RANKID", "PMI_RANK"),
            local_rank=("PALS_LOCAL_RANKID", "PMI_LOCAL_RANK"),
            local_size=("PALS_LOCAL_SIZE", "PMI_LOCAL_SIZE"),
            hint=_HINT,
            world_hint=_SIZE_HINT,
            nodes=len(hosts),  # without a world size: this node's ranks on each (a finding)
        )
        rank, local_size = fields.get("global_rank", 0), fields.get("devices_per_node", 1)
        named = reader.lookup("PALS_NODEID")
        if named is not None and named[1].strip() != str(fields.get("node_rank")):
            raise InconsistentEnvironmentError(
                f"PALS_NODEID={shorten(named[1])!r} but rank {rank} with {local_size} ranks per "
                f"node runs on node {fields.get('node_rank')}",
                variables=("PALS_NODEID", *reader.origins["node_rank"]),
                hint="start the same number of ranks on every node, placed by node "
                "(mpiexec --ppn N --depth D)",
            )
        num_nodes = fields.get("num_nodes", 1)
        if len(hosts) == num_nodes:  # mpiexec places its nodes in PBS_NODEFILE's order
            fields["hostnames"] = tuple(hosts)
        if num_nodes > 1 and len(hosts) == num_nodes:
            reader.derive("master_addr", "hostnames")
            fields["master_addr"] = hosts[0]
        return {**fields, "job_id": reader.optional("job_id", "PBS_JOBID")}

    @staticmethod
    def _hosts(reader: EnvReader) -> list[str]:
        """The nodes of the PBS job (``PBS_NODEFILE``, one line per slot), where it names
        one; mpiexec's default host file."""
        if "PBS_NODEFILE" not in reader.env:
            return []
        return list(dict.fromkeys(reader.hosts("hostnames", "PBS_NODEFILE", hint=_HINT)))

    def diagnose(
        self, spec: ResourceSpec, env: Mapping[str, str], present: Sequence[Detector]
    ) -> list[Finding]:
        if spec.source is not self.source or "PMI_SIZE" in env or "WORLD_SIZE" in env:
            return []
        return [
            Finding(
                id="pals.world-from-nodes",
                message=f"PALS names no world size: {spec.world_size} assumes mpiexec started "
                f"{spec.devices_per_node} ranks on each of the job's {spec.num_nodes} nodes "
                "(PBS_NODEFILE)",
                fix="launch with Cray PMI (PMI_SIZE), or export WORLD_SIZE to every rank, "
                "when mpiexec uses fewer nodes than the job",
            )
        ]


DETECTOR = PalsDetector()
