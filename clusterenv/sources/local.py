"""No scheduler and no launcher: one process that owns this machine's GPUs (or its CPU)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from clusterenv._finding import Finding
from clusterenv._gpu import gpu_fields
from clusterenv._reader import EnvReader, GpuProbe
from clusterenv._spec import ResourceSpec, Role, Source
from clusterenv.sources._detector import Detector, Fields, Roles
from clusterenv.sources.env import CONTRACT

__all__ = ["DEFAULT_PORT", "DETECTOR", "LocalDetector"]

#: torch.distributed's customary default, used when ``MASTER_PORT`` is not set.
DEFAULT_PORT = 29500


class LocalDetector(Detector):
    """Always present: the fallback when nothing else is detected.

    World size is the number of visible GPUs (one rank each, spawned by the framework)
    or 1 on CPU; the main address is ``MASTER_ADDR`` or the loopback address.
    """

    source = Source.LOCAL
    name = "local"
    reason = "no scheduler or launcher variables are set"
    variables = ("MASTER_ADDR", "MASTER_PORT", "OMP_NUM_THREADS")
    roles = Roles(standalone="a local run without a launcher")

    def present(self, env: Mapping[str, str]) -> bool:
        return True

    def read(self, reader: EnvReader, gpu_probe: GpuProbe) -> Fields:
        gpus = gpu_fields(reader, gpu_probe)
        reader.derive("devices_per_node", "visible_devices")  # one rank per GPU
        reader.derive("world_size", "visible_devices")
        return {
            "source": self.source,
            "role": Role.STANDALONE,
            "num_nodes": 1,
            "devices_per_node": max(1, gpus["gpus_per_node"]),
            "world_size": max(1, gpus["gpus_per_node"]),
            "global_rank": 0,
            "local_rank": 0,
            "node_rank": 0,
            "master_addr": reader.optional("master_addr", "MASTER_ADDR") or "127.0.0.1",
            "master_port": reader.port(
                DEFAULT_PORT, hint="export MASTER_PORT as a free TCP port, or unset it"
            ),
            **gpus,
        }

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
