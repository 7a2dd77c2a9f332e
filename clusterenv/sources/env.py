"""The ``env://`` contract: ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``,
``MASTER_ADDR`` and ``MASTER_PORT``, as torch.distributed's ``init_method="env://"`` reads
them, set by the DeepSpeed launcher, ``torch.distributed.launch``, Lightning's own child
processes and hand-written launch scripts.

The lowest-priority launcher: only a complete and consistent set counts (otherwise the
process stays a local run, and `inspect` says which variables are missing). Nodes follow
from the ranks per node as for MPI; ``GROUP_RANK`` or ``NODE_RANK``, where set, name the
node and must agree.
"""

from __future__ import annotations

from collections.abc import Mapping

from clusterenv._gpu import gpu_fields
from clusterenv._reader import EnvReader, GpuProbe
from clusterenv._safe import shorten
from clusterenv._spec import Source
from clusterenv.exceptions import InconsistentEnvironmentError
from clusterenv.sources._detector import Detector, Fields, Hints
from clusterenv.sources._geometry import read_ranks

__all__ = ["CONTRACT", "DETECTOR", "EnvDetector"]

#: What ``init_method="env://"`` needs, all of it.
CONTRACT = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
_HINT = (
    "the launcher sets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and "
    "MASTER_PORT together in every process; check the launch script"
)


class EnvDetector(Detector):
    source = Source.ENV
    name = "env://"
    reason = "RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE and MASTER_ADDR/PORT are set"
    variables = (*CONTRACT, "GROUP_RANK", "NODE_RANK")
    hints = Hints(
        num_nodes="change the number of nodes the launch script starts",
        devices="change the processes per node it starts (LOCAL_WORLD_SIZE)",
    )

    def present(self, env: Mapping[str, str]) -> bool:
        return all(name in env for name in CONTRACT)

    def read(self, reader: EnvReader, gpu_probe: GpuProbe) -> Fields:
        fields = read_ranks(
            reader,
            world=("WORLD_SIZE",),
            rank=("RANK",),
            local_rank=("LOCAL_RANK",),
            local_size=("LOCAL_WORLD_SIZE",),
            hint=_HINT,
        )
        rank, local_size = fields.get("global_rank", 0), fields.get("devices_per_node", 1)
        named = reader.lookup("GROUP_RANK", "NODE_RANK")
        if named is not None and named[1].strip() != str(fields.get("node_rank")):
            raise InconsistentEnvironmentError(
                f"{named[0]}={shorten(named[1])!r} but rank {rank} with LOCAL_WORLD_SIZE="
                f"{local_size} runs on node {fields.get('node_rank')}",
                variables=(named[0], "RANK", "LOCAL_WORLD_SIZE"),
                hint=_HINT,
            )
        return {
            **fields,
            "source": self.source,
            "master_addr": reader.text("master_addr", "MASTER_ADDR", hint=_HINT),
            "master_port": reader.port(None, hint=_HINT),
            **gpu_fields(reader, gpu_probe),
        }


DETECTOR = EnvDetector()
