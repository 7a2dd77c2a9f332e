"""PBS Pro / Torque: the job script (``PBS_JOBID`` set), described from ``PBS_NODEFILE``.

The node file lists one line per slot (``mpiprocs`` in PBS Pro, ``ppn`` in Torque), so a
host repeats: the nodes are its distinct names in order, the ranks per node the lines of
the first one. PBS starts no ranks itself — ``mpirun`` inside the job does, and the MPI
source then wins — so the spec describes what the launcher should start, like Slurm's
batch step. The main address is the first node; the port ``MASTER_PORT`` or derived from
the job id (``job_port``).
"""

from __future__ import annotations

from clusterenv._core.reader import EnvReader, parse_integer
from clusterenv._core.safe import shorten
from clusterenv._core.spec import Source
from clusterenv.exceptions import InconsistentEnvironmentError, MissingVariableError
from clusterenv.sources._detector import Fields, Gpus, Hints, Roles
from clusterenv.sources._geometry import job_script_fields
from clusterenv.sources._job_script import JobScriptDetector

__all__ = ["DETECTOR", "PbsDetector"]

_HINT = "PBS sets this in the job; run inside qsub (or qsub -I)"


class PbsDetector(JobScriptDetector):
    source = Source.PBS
    name = "PBS"
    reason = "PBS_JOBID is set: inside a PBS / Torque job"
    proof = (
        "live: OpenPBS 23.06.06 (built from source, in a chroot; a server and two MoMs with "
        "their own host names in a namespace): job scripts over one and two nodes "
        "(`place=scatter|pack`), array subjobs (`qsub -J`), an interactive `qsub -I` shell, "
        "`pbsdsh` tasks (refused, naming their node), torchrun once per node, MPICH and Open "
        "MPI 5 inside a job (their source's); Torque's `PBS_NUM_NODES`: documented (its "
        "reference guide)"
    )
    variables = ("PBS_", "NCPUS")
    job_variable, node_file, hint = "PBS_JOBID", "PBS_NODEFILE", _HINT
    version_command = ("qstat", "--version")  # "pbs_version = 2022.1.1"
    roles = Roles(batch="the job script of a PBS job (job{job})")
    hints = Hints(
        num_nodes="change the job's select=N (Torque: nodes=N)",
        devices="change mpiprocs=P in the select statement (Torque: ppn=P)",
        uneven="request the same slots per node (PBS select=N:mpiprocs=P)",
    )

    def read(self, reader: EnvReader, gpus: Gpus) -> Fields:
        job_id = self.job_id(reader)
        task = reader.env.get("PBS_TASKNUM", "1").strip()
        if task != "1":  # the job script is task 1; pbsdsh's tasks have TM task ids
            node = shorten(reader.env.get("PBS_NODENUM", "?"))
            raise MissingVariableError(
                f"PBS_TASKNUM={shorten(task)!r}: a task that pbsdsh started on node {node} "
                f"(PBS_NODENUM) of job {shorten(job_id)}; PBS gives such a task no rank and no "
                "world size, so it is not one of the job's ranks",
                variables=("PBS_TASKNUM", "PBS_NODENUM"),
                hint="start the ranks with mpiexec/mpirun in the job script (PBS places them), "
                "or one torchrun per node: select=N:mpiprocs=1 and pbsdsh -- sh -c 'torchrun "
                "--nnodes=N --node_rank=$PBS_NODENUM ...'",
            )
        slots = self.slots(reader)
        hosts = list(dict.fromkeys(slots))
        stated = reader.lookup("PBS_NUM_NODES")  # Torque only
        if stated and stated[1].strip() != str(len(hosts)):
            raise InconsistentEnvironmentError(
                f"PBS_NODEFILE names {len(hosts)} hosts but PBS_NUM_NODES={shorten(stated[1])!r}",
                variables=("PBS_NODEFILE", "PBS_NUM_NODES"),
                hint="the node file and the job's node count come from one job; look for "
                "a PBS_NODEFILE exported by hand",
            )
        fields = job_script_fields(reader, slots)
        fields |= {
            "cpus_per_rank": self._cpus(reader, fields["devices_per_node"]),
            "job_id": job_id,
        }
        if "[" in job_id:  # an array subjob (5[2].server): its siblings run at the same time
            fields["port_seed"] = job_id
        return fields

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
