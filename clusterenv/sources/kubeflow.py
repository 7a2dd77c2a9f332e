"""Kubeflow PyTorchJob: one training process per pod.

The training operator sets ``MASTER_ADDR``, ``MASTER_PORT``, ``WORLD_SIZE`` and ``RANK``
in every pod (``KUBERNETES_SERVICE_HOST`` says it is a pod). Each pod is a node of one
rank. With torchrun inside the pods, torchrun's variables win (torchelastic source).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from clusterenv._gpu import gpu_fields
from clusterenv._reader import EnvReader, GpuProbe
from clusterenv._spec import ResourceSpec, Role, Source
from clusterenv.sources._detector import Detector, Fields, Hints, Roles

__all__ = ["DETECTOR", "KubeflowDetector"]

_HINT = "the Kubeflow training operator sets this in every PyTorchJob pod"


class KubeflowDetector(Detector):
    source = Source.KUBEFLOW
    name = "Kubeflow"
    reason = "KUBERNETES_SERVICE_HOST, RANK and WORLD_SIZE are set: a PyTorchJob pod"
    variables = ("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "RANK", "WORLD_SIZE")
    roles = Roles(rank="the PyTorchJob")
    hints = Hints(
        num_nodes="change the PyTorchJob's replicas",
        devices="run torchrun --nproc_per_node=N in each pod (nprocPerNode)",
        uneven="give every pod the same nprocPerNode",
    )

    def present(self, env: Mapping[str, str]) -> bool:
        return all(name in env for name in ("KUBERNETES_SERVICE_HOST", "RANK", "WORLD_SIZE"))

    def read(self, reader: EnvReader, gpu_probe: GpuProbe) -> Fields:
        world_size = reader.integer("world_size", "WORLD_SIZE", hint=_HINT, minimum=1)
        rank = reader.integer("global_rank", "RANK", hint=_HINT)
        reader.derive("num_nodes", "world_size")
        reader.derive("node_rank", "global_rank")
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

    def diagnose(
        self, spec: ResourceSpec, env: Mapping[str, str], present: Sequence[Detector]
    ) -> list[str]:
        if spec.source is not self.source or len(spec.visible_devices) < 2:
            return []
        return [
            f"this pod sees {len(spec.visible_devices)} GPUs but the PyTorchJob starts one "
            "process per pod, so all but one GPU stay idle. Fix: run torchrun "
            f"--nproc_per_node={len(spec.visible_devices)} in the pod (nprocPerNode)"
        ]


DETECTOR = KubeflowDetector()
