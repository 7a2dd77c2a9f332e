"""HPE PALS / Cray PMI: a rank of ``mpiexec`` on HPE Cray EX systems under PBS (ALCF's
Aurora and Polaris, and the like).

PALS names each rank and its node (``PALS_RANKID``, ``PALS_LOCAL_RANKID``,
``PALS_LOCAL_SIZE``, ``PALS_NODEID``) but may not give the world size; Cray PMI gives it
(``PMI_SIZE``, beside ``PMI_RANK``, ``PMI_LOCAL_RANK``, ``PMI_LOCAL_SIZE``). Such a rank must
be read here, before the MPI source, whose MPICH variables it lacks. The nodes follow from
the ranks per node, and ``PALS_NODEID`` must agree. The main address is ``MASTER_ADDR``
(one node: the loopback address); the port ``MASTER_PORT``, else derived from the PBS job.
"""

from __future__ import annotations

from collections.abc import Mapping

from clusterenv._gpu import gpu_fields
from clusterenv._reader import EnvReader, GpuProbe
from clusterenv._safe import shorten
from clusterenv._spec import Source
from clusterenv.exceptions import InconsistentEnvironmentError
from clusterenv.sources._detector import Detector, Fields, Hints
from clusterenv.sources._geometry import job_port, main_address, read_ranks
from clusterenv.sources.local import DEFAULT_PORT

__all__ = ["DETECTOR", "PalsDetector"]

_HINT = "mpiexec (HPE PALS / Cray PMI) sets this in every rank; start the ranks with mpiexec"
_SIZE_HINT = (
    "PALS gives no world size without Cray PMI: launch with mpiexec's Cray PMI (PMI_SIZE), "
    "or export WORLD_SIZE to every rank"
)


class PalsDetector(Detector):
    source = Source.PALS
    name = "HPE PALS"
    reason = "PALS_RANKID (or Cray PMI_LOCAL_RANK) is set: an mpiexec rank on HPE PALS"
    variables = ("PALS_", "PMI_RANK", "PMI_SIZE", "PMI_LOCAL_RANK", "PMI_LOCAL_SIZE", "PBS_JOBID")
    launch_keys = ("PALS_APID", "PBS_JOBID")
    launcher = "mpiexec"
    version_command = ("mpiexec", "--version")
    hints = Hints(
        num_nodes="change mpiexec's hosts (-n / --ppn with the nodes of the PBS job)",
        devices="change mpiexec --ppn",
        uneven="start the same number of ranks on every node (mpiexec --ppn)",
    )

    def present(self, env: Mapping[str, str]) -> bool:
        return "PALS_RANKID" in env or ("PMI_LOCAL_RANK" in env and "PMI_RANK" in env)

    def read(self, reader: EnvReader, gpu_probe: GpuProbe) -> Fields:
        fields = read_ranks(
            reader,
            world=("PMI_SIZE", "WORLD_SIZE"),
            rank=("PALS_RANKID", "PMI_RANK"),
            local_rank=("PALS_LOCAL_RANKID", "PMI_LOCAL_RANK"),
            local_size=("PALS_LOCAL_SIZE", "PMI_LOCAL_SIZE"),
            hint=_HINT,
            world_hint=_SIZE_HINT,
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
        job = reader.optional("job_id", "PBS_JOBID")
        return {
            **fields,
            "source": self.source,
            "master_addr": main_address(
                reader, fields.get("num_nodes", 1), "mpiexec --env MASTER_ADDR=$(hostname) ..."
            ),
            "master_port": reader.port(
                DEFAULT_PORT if job is None else job_port(job),
                hint="export MASTER_PORT as a free TCP port to every rank",
            ),
            "job_id": job,
            **gpu_fields(reader, gpu_probe),
        }


DETECTOR = PalsDetector()
