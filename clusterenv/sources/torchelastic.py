"""torchrun / torch.distributed.run (torchelastic) workers.

Detected by ``TORCHELASTIC_RUN_ID`` alone: it is set for every rendezvous, including the
static one where its value is the literal ``none``. It wins over Slurm, because inside
an allocation torchrun, not srun, is what started this process.
"""

from __future__ import annotations

from collections.abc import Mapping

from clusterenv._reader import EnvReader
from clusterenv._spec import Role, Source
from clusterenv.sources._detector import Detector, Fields, Gpus, Hints

__all__ = ["DETECTOR", "TorchElasticDetector"]

_HINT = (
    "torchrun sets this for every worker; start the script with torchrun, or set "
    "CLUSTERENV_SOURCE to the launcher you actually use"
)


class TorchElasticDetector(Detector):
    source = Source.TORCHELASTIC
    name = "torchrun"
    reason = "TORCHELASTIC_RUN_ID is set: a torchrun worker"
    proof = (
        'live: torchrun (torch 2.13.0) standalone, static and c10d over two "nodes", inside '
        "srun, and across three emulated hosts (one agent per network namespace, DDP over "
        "gloo); accelerate 1.16.0 `--multi_gpu` (its torchrun path). `torch.distributed.launch`"
        " is torchrun underneath (it sets `TORCHELASTIC_*`)"
    )
    variables = (
        "TORCHELASTIC_",
        *("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK"),
        *("GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE", "ROLE_NAME", "NODE_RANK"),
    )
    launch_keys = ("TORCHELASTIC_RUN_ID",)
    launcher = "torchrun"
    hints = Hints(
        num_nodes="change torchrun --nnodes",
        devices="change torchrun --nproc_per_node",
        uneven="start the same --nproc_per_node on every node",
        main=_HINT,
    )
    exports_main = True
    holds_main_port = True  # the agent's TCPStore

    def present(self, env: Mapping[str, str]) -> bool:
        return "TORCHELASTIC_RUN_ID" in env

    def read(self, reader: EnvReader, gpus: Gpus) -> Fields:
        def integer(field: str, name: str, minimum: int = 0) -> int:
            return reader.integer(field, name, hint=_HINT, minimum=minimum)

        local_world_size = integer("devices_per_node", "LOCAL_WORLD_SIZE", minimum=1)
        run_id = reader.env.get("TORCHELASTIC_RUN_ID", "").strip()
        if run_id not in ("", "none"):
            reader.note("job_id", "TORCHELASTIC_RUN_ID")
        return {
            "role": Role.RANK,
            "num_nodes": integer("num_nodes", "GROUP_WORLD_SIZE", minimum=1),
            "devices_per_node": local_world_size,
            "world_size": integer("world_size", "WORLD_SIZE", minimum=1),
            "global_rank": integer("global_rank", "RANK"),
            "local_rank": integer("local_rank", "LOCAL_RANK"),
            "node_rank": integer("node_rank", "GROUP_RANK"),
            "job_id": run_id if run_id not in ("", "none") else None,
        }


DETECTOR = TorchElasticDetector()
