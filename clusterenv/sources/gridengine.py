"""Grid Engine (Son of Grid Engine, Altair Grid Engine, Open Cluster Scheduler): the job
script of ``qsub`` / ``qrsh``, detected by ``JOB_ID`` with ``SGE_TASK_ID`` (set in every
job, ``undefined`` outside array jobs), never by ``SGE_ROOT``, which login shells carry.

Two roles, by the job's parallel environment (``qsub -pe NAME SLOTS``):

* **with one** (``PE_HOSTFILE`` set): the job script over the PE's hosts, like PBS's. The
  host file lists one line per host with its slot count (``node01 4 all.q@node01
  UNDEFINED``): the nodes are its hosts in order, the ranks per node the first host's
  slots, the world the slots (``NSLOTS``, ``NHOSTS`` must agree). Grid Engine starts no
  ranks itself: ``mpirun`` inside does (Open MPI reads the host file), and the MPI source
  then wins.
* **without one**: a single process that owns its slot, like a local run: one rank per
  visible GPU, spawned by the framework.

The main address is the first host (``MASTER_ADDR`` overrides); the port ``MASTER_PORT``,
else derived from the job id and, in an array job, its task (the tasks of one array run at
once and must not share a port). Measured with Son of Grid Engine 8.1.9 (Debian 12), live
in the suite.
"""

from __future__ import annotations

from collections.abc import Mapping

from clusterenv._core.hostfile import HostFile
from clusterenv._core.reader import EnvReader, parse_integer
from clusterenv._core.safe import shorten
from clusterenv._core.spec import Source
from clusterenv.exceptions import InconsistentEnvironmentError
from clusterenv.sources._detector import Fields, Gpus, Hints, Roles
from clusterenv.sources._geometry import job_script_fields, standalone_fields
from clusterenv.sources._job_script import JobScriptDetector

__all__ = ["DETECTOR", "GridEngineDetector"]

_HINT = "Grid Engine sets this in the job; run inside qsub or qrsh"
#: ``PE_HOSTFILE``: ``host slots queue processor-range`` per line.
PE_HOSTFILE = HostFile(counted=True)


class GridEngineDetector(JobScriptDetector):
    source = Source.GRIDENGINE
    name = "Grid Engine"
    reason = "JOB_ID and SGE_TASK_ID are set: inside a Grid Engine job"
    proof = (
        "live: Son of Grid Engine 8.1.9 (Debian 12, in a chroot): `qsub -pe`, an array job, a "
        "job without a parallel environment, `qrsh`, Open MPI's `mpirun` inside a job"
    )
    variables = ("SGE_", "PE_HOSTFILE", "NSLOTS", "NHOSTS", "NQUEUES")
    #: Names other programs use too (Jenkins sets JOB_NAME): read only inside a job.
    shared_variables = ("JOB_ID", "JOB_NAME", "PE", "QUEUE")
    launch_keys = ("JOB_ID", "SGE_TASK_ID")
    job_variable, node_file, node_file_layout, hint = "JOB_ID", "PE_HOSTFILE", PE_HOSTFILE, _HINT
    version_command = ("qstat", "-help")  # "SGE 8.1.9"
    roles = Roles(
        batch="the job script of a Grid Engine job with a parallel environment (job{job})",
        standalone="a Grid Engine job without a parallel environment (job{job})",
    )
    hints = Hints(
        num_nodes="change the parallel environment's allocation rule or slots (qsub -pe)",
        devices="use a parallel environment with a fixed allocation_rule (slots per host)",
        uneven="use a parallel environment whose allocation_rule is a fixed number",
    )

    def present(self, env: Mapping[str, str]) -> bool:
        return super().present(env) and "SGE_TASK_ID" in env  # JOB_ID alone: another program's

    def read(self, reader: EnvReader, gpus: Gpus) -> Fields:
        job_id = self.job_id(reader)
        parse_integer("JOB_ID", job_id, hint=_HINT)  # Grid Engine's job ids are integers
        task = reader.env["SGE_TASK_ID"].strip()  # present() requires it
        if "PE_HOSTFILE" in reader.env:
            fields = self._parallel(reader)
        else:  # one process, one rank per GPU, like a local run
            fields = standalone_fields(reader, gpus)
        if task == "undefined":
            return {**fields, "job_id": job_id}
        # An array task: a number, part of the id; the tasks share the job id and run at once.
        parse_integer("SGE_TASK_ID", task, hint=_HINT)
        reader.note("job_id", "JOB_ID", "SGE_TASK_ID")
        return {**fields, "job_id": f"{job_id}.{task}", "port_seed": f"{job_id}.{task}"}

    def _parallel(self, reader: EnvReader) -> Fields:
        """The job script of a parallel job: what mpirun should start over the PE's hosts."""
        slots = self.slots(reader)
        for name, value in (("NSLOTS", len(slots)), ("NHOSTS", len(set(slots)))):
            stated = reader.env.get(name)
            if stated is not None and stated.strip() != str(value):
                raise InconsistentEnvironmentError(
                    f"PE_HOSTFILE lists {value} {'slots' if name == 'NSLOTS' else 'hosts'} "
                    f"but {name}={shorten(stated)!r}",
                    variables=("PE_HOSTFILE", name),
                    hint="Grid Engine writes both for one job; look for one exported by hand",
                )
        return job_script_fields(reader, slots)


DETECTOR = GridEngineDetector()
