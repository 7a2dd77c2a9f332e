"""No scheduler and no launcher: one process that owns this machine's GPUs (or its CPU)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from clusterenv._core.finding import Finding
from clusterenv._core.reader import EnvReader
from clusterenv._core.spec import ResourceSpec, Source
from clusterenv.sources._detector import Detector, Fields, Gpus, Kind, Roles
from clusterenv.sources._geometry import standalone_fields
from clusterenv.sources.env import CONTRACT

__all__ = ["DETECTOR", "LocalDetector"]


class LocalDetector(Detector):
    """Always present: the fallback when nothing else is detected.

    World size is the number of visible GPUs (one rank each, spawned by the framework)
    or 1 on CPU; the main address is ``MASTER_ADDR`` or the loopback address.
    """

    source = Source.LOCAL
    kind = Kind.MACHINE
    name = "local"
    reason = "no scheduler or launcher variables are set"
    proof = "live: a plain process, and `accelerate launch --cpu` (one process)"
    finding_ids = ("local.incomplete-env-contract",)
    variables = ("MASTER_ADDR", "MASTER_PORT", "OMP_NUM_THREADS")
    roles = Roles(standalone="a local run without a launcher")

    def present(self, env: Mapping[str, str]) -> bool:
        return True

    def read(self, reader: EnvReader, gpus: Gpus) -> Fields:
        return standalone_fields(reader, gpus)  # one rank per GPU

    def diagnose(
        self, spec: ResourceSpec, env: Mapping[str, str], present: Sequence[Detector]
    ) -> list[Finding]:
        given = [name for name in CONTRACT if name in env]
        if spec.source is not self.source or not given or len(given) == len(CONTRACT):
            return []
        missing = [name for name in CONTRACT if name not in env]
        return [
            Finding(
                id="local.incomplete-env-contract",
                message=f"{', '.join(given)} set but not {', '.join(missing)}: not an env:// "
                "launch, so this is read as a local run",
                fix=f"set {', '.join(CONTRACT)} in every process, or unset them",
            )
        ]


DETECTOR = LocalDetector()
