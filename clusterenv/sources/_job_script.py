"""The shape PBS, LSF, Grid Engine (and any scheduler like them) share: a job script that
the scheduler describes by a node file, one line per slot, and in which a launcher
(``mpirun``) starts the ranks. A subclass declares its job-id variable, its node-file
variable and layout, its hint, proof and roles; it inherits ``present``, the reading of the
job id and of the node file (refused where it lists no host), the geometry the job script
describes, ``mpirun`` as its launcher and its place among the schedulers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from clusterenv._core.hostfile import SLOT_LINES, HostFile
from clusterenv._core.reader import EnvReader
from clusterenv._core.safe import shorten
from clusterenv.exceptions import InconsistentEnvironmentError
from clusterenv.sources._detector import Detector, Fields, Gpus, Kind
from clusterenv.sources._geometry import job_script_fields

__all__ = ["JobScriptDetector"]


class JobScriptDetector(Detector):
    """A scheduler whose job script reads its job from a node file: what the launcher it
    names should start, rank 0 on the file's first host."""

    kind = Kind.SCHEDULER
    launcher = "mpirun"
    #: Set in every job (its value is the job id): inside a job of this scheduler.
    job_variable: ClassVar[str]
    #: The variable naming the node file, and the file's layout (by default one host per
    #: slot line, as PBS's ``PBS_NODEFILE``).
    node_file: ClassVar[str]
    node_file_layout: ClassVar[HostFile] = SLOT_LINES
    #: How to get inside a job: every error's hint.
    hint: ClassVar[str]

    def present(self, env: Mapping[str, str]) -> bool:
        return self.job_variable in env

    def read(self, reader: EnvReader, gpus: Gpus) -> Fields:
        return {**job_script_fields(reader, self.slots(reader)), "job_id": self.job_id(reader)}

    def job_id(self, reader: EnvReader) -> str:
        return reader.text("job_id", self.job_variable, hint=self.hint)

    def slots(self, reader: EnvReader) -> list[str]:
        """The node file's hosts, one per slot; refused where it lists none."""
        slots = reader.hosts(
            "hostnames", self.node_file, hint=self.hint, layout=self.node_file_layout
        )
        if not slots:
            raise InconsistentEnvironmentError(
                f"{self.node_file}={shorten(reader.env[self.node_file])!r} lists no host",
                variables=(self.node_file,),
                hint=f"the file {self.name} wrote is empty; {self.hints.num_nodes}",
            )
        return slots
