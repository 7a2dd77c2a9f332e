"""Kubeflow PyTorchJob: one training process per pod.

The training operator sets ``MASTER_ADDR``, ``MASTER_PORT``, ``WORLD_SIZE`` and ``RANK``
in every pod (``KUBERNETES_SERVICE_HOST`` says it is a pod). Each pod is a node of one
rank. With torchrun inside the pods, torchrun's variables win (torchelastic source).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clusterenv._gpu import gpu_fields
from clusterenv._spec import Role, Source
from clusterenv.sources.base import Detector, EnvReader, GpuProbe

__all__ = ["KubeflowDetector"]

_HINT = "the Kubeflow training operator sets this in every PyTorchJob pod"


class KubeflowDetector(Detector):
    source = Source.KUBEFLOW
    reason = "KUBERNETES_SERVICE_HOST, RANK and WORLD_SIZE are set: a PyTorchJob pod"

    def present(self, env: Mapping[str, str]) -> bool:
        return all(name in env for name in ("KUBERNETES_SERVICE_HOST", "RANK", "WORLD_SIZE"))

    def read(self, reader: EnvReader, gpu_probe: GpuProbe) -> dict[str, Any]:
        world_size = reader.integer("world_size", "WORLD_SIZE", hint=_HINT, minimum=1)
        rank = reader.integer("global_rank", "RANK", hint=_HINT)
        reader.origins["num_nodes"] = reader.origins["world_size"]
        reader.origins["node_rank"] = reader.origins["global_rank"]
        gpus = gpu_fields(reader, gpu_probe)
        return {
            "source": self.source,
            "role": Role.RANK,
            "num_nodes": world_size,
            "devices_per_node": 1,
            "world_size": world_size,
            "global_rank": rank,
            "local_rank": 0,
            "node_rank": rank,
            "master_addr": reader.text("master_addr", "MASTER_ADDR", hint=_HINT),
            "master_port": reader.port(None, hint=_HINT),
            **gpus,
        }
