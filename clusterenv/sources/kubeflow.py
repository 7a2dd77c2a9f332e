"""Kubeflow PyTorchJob: the pods of a training job.

The training operator sets ``MASTER_ADDR``, ``MASTER_PORT``, ``WORLD_SIZE`` and ``RANK``
in every pod (``KUBERNETES_SERVICE_HOST`` says it is a pod). Without ``nprocPerNode`` each
pod is a node of one rank. Operator >= 1.7 and Trainer v2 also set ``PET_NNODES``,
``PET_NPROC_PER_NODE``, ``PET_NODE_RANK`` and ``PET_MASTER_ADDR/PORT`` for the torchrun
each pod runs, with ``WORLD_SIZE`` = pods x processes per pod: then the pod's own process
describes what torchrun should start (one process per pod: it is that rank). The
processes torchrun starts are read by the torchelastic source, which wins.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from clusterenv._core.finding import Finding
from clusterenv._core.reader import EnvReader
from clusterenv._core.safe import shorten
from clusterenv._core.spec import ResourceSpec, Role, Source
from clusterenv.exceptions import InconsistentEnvironmentError
from clusterenv.sources._detector import Detector, Fields, Gpus, Hints, Kind, Roles

__all__ = ["DETECTOR", "KubeflowDetector"]

_HINT = "the Kubeflow training operator sets this in every PyTorchJob pod"


class KubeflowDetector(Detector):
    source = Source.KUBEFLOW
    kind = Kind.CONTRACT
    name = "Kubeflow"
    reason = "KUBERNETES_SERVICE_HOST, RANK and WORLD_SIZE are set: a PyTorchJob pod"
    proof = (
        "documented: [Kubeflow training operator, "
        "PyTorchJob](https://www.kubeflow.org/docs/components/trainer/legacy-v1/user-guides/pytorch/)"
        " (`RANK` per pod, `PET_*`)"
    )
    finding_ids = ("kubeflow.idle-gpus",)
    variables = ("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "RANK", "WORLD_SIZE", "PET_")
    launcher = "torchrun"
    per_node = True
    roles = Roles(rank="the PyTorchJob", node="a PyTorchJob pod, before its torchrun")
    hints = Hints(
        num_nodes="change the PyTorchJob's replicas",
        devices="run torchrun --nproc_per_node=N in each pod (nprocPerNode)",
        uneven="give every pod the same nprocPerNode",
        main=_HINT,
    )
    exports_main = True

    def present(self, env: Mapping[str, str]) -> bool:
        pod = "KUBERNETES_SERVICE_HOST" in env
        return pod and ("PET_NNODES" in env or ("RANK" in env and "WORLD_SIZE" in env))

    def read(self, reader: EnvReader, gpus: Gpus) -> Fields:
        if "PET_NNODES" in reader.env:
            return self._pod(reader)
        world_size = reader.integer("world_size", "WORLD_SIZE", hint=_HINT, minimum=1)
        rank = reader.integer("global_rank", "RANK", hint=_HINT)
        reader.derive("num_nodes", "world_size")
        reader.derive("node_rank", "global_rank")
        return {
            "role": Role.RANK,
            "num_nodes": world_size,
            "devices_per_node": 1,
            "world_size": world_size,
            "global_rank": rank,
            "local_rank": 0,
            "node_rank": rank,
        }

    def _pod(self, reader: EnvReader) -> Fields:
        """A pod of operator >= 1.7 / Trainer v2: PET_* for the torchrun it runs."""

        def integer(field: str, name: str, minimum: int = 0) -> int:
            return reader.integer(field, name, hint=_HINT, minimum=minimum)

        nodes = integer("num_nodes", "PET_NNODES", minimum=1)
        per_pod = reader.integer(
            "devices_per_node", "PET_NPROC_PER_NODE", hint=_HINT, default=1, minimum=1
        )
        node = integer("node_rank", "PET_NODE_RANK")
        reader.derive("world_size", "num_nodes", "devices_per_node")
        reader.derive("global_rank", "node_rank", "devices_per_node")
        stated = reader.lookup("WORLD_SIZE")
        if stated and stated[1].strip() != str(nodes * per_pod):
            raise InconsistentEnvironmentError(
                f"WORLD_SIZE={shorten(stated[1])!r} is not PET_NNODES x PET_NPROC_PER_NODE "
                f"= {nodes * per_pod}",
                variables=("WORLD_SIZE", "PET_NNODES", "PET_NPROC_PER_NODE"),
                hint="the training operator sets these together; look for ones set by hand",
            )
        fields: Fields = {
            "role": Role.RANK if per_pod == 1 else Role.NODE,
            "num_nodes": nodes,
            "devices_per_node": per_pod,
            "world_size": nodes * per_pod,
            "global_rank": node * per_pod,
            "local_rank": 0,
            "node_rank": node,
        }
        # torchrun's own names for the main address, which MASTER_ADDR/MASTER_PORT override.
        if address := reader.optional("master_addr", "PET_MASTER_ADDR"):
            fields["master_addr"] = address
        if "PET_MASTER_PORT" in reader.env:
            fields["master_port"] = reader.integer(
                "master_port", "PET_MASTER_PORT", hint=_HINT, minimum=1, maximum=65535
            )
        return fields

    def diagnose(
        self, spec: ResourceSpec, env: Mapping[str, str], present: Sequence[Detector]
    ) -> list[Finding]:
        if spec.source is not self.source or spec.role is not Role.RANK:
            return []
        if spec.devices_per_node > 1 or len(spec.visible_devices) < 2:
            return []
        gpus = len(spec.visible_devices)
        return [
            Finding(
                id="kubeflow.idle-gpus",
                message=f"this pod sees {gpus} GPUs but the PyTorchJob starts one process per "
                "pod, so all but one GPU stay idle",
                fix=f"run torchrun --nproc_per_node={gpus} in the pod (nprocPerNode)",
            )
        ]


DETECTOR = KubeflowDetector()
