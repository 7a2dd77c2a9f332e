"""PBS Pro / Torque: the job script (``PBS_JOBID`` set), described from ``PBS_NODEFILE``.

The node file lists one line per slot (``mpiprocs`` in PBS Pro, ``ppn`` in Torque), so a
host repeats: the nodes are its distinct names in order, the ranks per node the lines of
the first one. PBS starts no ranks itself — ``mpirun`` inside the job does, and the MPI
source then wins — so the spec describes what the launcher should start, like Slurm's
batch step. The main address is the first node; the port ``MASTER_PORT`` or derived from
the job id (``job_port``).
"""

from __future__ import annotations

from collections.abc import Mapping

from clusterenv._reader import EnvReader, parse_integer
from clusterenv._safe import shorten
from clusterenv._spec import Source
from clusterenv.exceptions import InconsistentEnvironmentError
from clusterenv.sources._detector import Detector, Fields, Gpus, Hints, Roles
from clusterenv.sources._geometry import job_script_fields

__all__ = ["DETECTOR", "PbsDetector"]

_HINT = "PBS sets this in the job; run inside qsub (or qsub -I)"


class PbsDetector(Detector):
    source = Source.PBS
    name = "PBS"
    reason = "PBS_JOBID is set: inside a PBS / Torque job"
    proof = (
        "documented: PBS Professional's reference guide and Torque's (`PBS_NODEFILE`, "
        "`PBS_NUM_NODES`, `NCPUS`)"
    )
    variables = ("PBS_", "NCPUS")
    launcher = "mpirun"
    version_command = ("qstat", "--version")  # "pbs_version = 2022.1.1"
    roles = Roles(batch="the job script of a PBS job (job{job})")
    hints = Hints(
        num_nodes="change the job's select=N (Torque: nodes=N)",
        devices="change mpiprocs=P in the select statement (Torque: ppn=P)",
        uneven="request the same slots per node (PBS select=N:mpiprocs=P)",
    )

    def present(self, env: Mapping[str, str]) -> bool:
        return "PBS_JOBID" in env

    def read(self, reader: EnvReader, gpus: Gpus) -> Fields:
        job_id = reader.text("job_id", "PBS_JOBID", hint=_HINT)
        slots = reader.hosts("hostnames", "PBS_NODEFILE", hint=_HINT)
        hosts = list(dict.fromkeys(slots))
        if not hosts:
            raise InconsistentEnvironmentError(
                f"PBS_NODEFILE={shorten(reader.env['PBS_NODEFILE'])!r} lists no host",
                variables=("PBS_NODEFILE",),
                hint="the file PBS wrote is empty; check the job's select/nodes request",
            )
        stated = reader.lookup("PBS_NUM_NODES")  # Torque only
        if stated and stated[1].strip() != str(len(hosts)):
            raise InconsistentEnvironmentError(
                f"PBS_NODEFILE names {len(hosts)} hosts but PBS_NUM_NODES={shorten(stated[1])!r}",
                variables=("PBS_NODEFILE", "PBS_NUM_NODES"),
                hint="the node file and the job's node count come from one job; look for "
                "a PBS_NODEFILE exported by hand",
            )
        fields = job_script_fields(reader, slots)
        return {
            **fields,
            "cpus_per_rank": self._cpus(reader, fields["devices_per_node"]),
            "job_id": job_id,
        }

    @staticmethod
    def _cpus(reader: EnvReader, ranks_per_node: int) -> int | None:
        """PBS Pro's ``NCPUS``: the CPUs requested for the node (its chunk's ``ncpus``),
        shared by the node's ``mpiprocs`` ranks."""
        found = reader.lookup("NCPUS")
        if found is None:
            return None
        reader.note("cpus_per_rank", "NCPUS", "PBS_NODEFILE")
        ncpus = parse_integer(*found, hint="PBS sets this to the job's ncpus per chunk")
        return max(1, ncpus // ranks_per_node)


DETECTOR = PbsDetector()
