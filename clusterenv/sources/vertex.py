"""Google Vertex AI custom training: the replicas of a custom job's worker pools, one
process (the container's command) on each.

Read from ``CLUSTER_SPEC`` as Vertex AI documents it ("Distributed training"): JSON with
``cluster`` (``workerpool0`` ... ``workerpool3``, each a list of ``host:port``) and ``task``
(``type``: this replica's pool, ``index``: its place in it). The primary replica is
``workerpool0`` (one replica), the workers ``workerpool1``: together, in that order, the
training nodes. ``workerpool2`` (parameter or reduction servers) and ``workerpool3``
(evaluators) run no training ranks: a replica there is a standalone process. ``TF_CONFIG``
says the same for TensorFlow (and TFJob sets it too), so it is not read; nor are the
per-replica ``RANK``/``WORLD_SIZE`` of Vertex's PyTorch containers: a replica, not a rank
(the framework's ranks overwrite them).

Each replica runs one process per GPU it sees: the command is the ``node`` process,
whose ranks torchrun or Lightning start. The main address is the primary replica's host
(``MASTER_ADDR``, which the PyTorch containers set, overrides), the port ``MASTER_PORT``,
else the primary's port in ``CLUSTER_SPEC``. Proof: the Vertex AI documentation; not run
here.
"""

from __future__ import annotations

from collections.abc import Mapping

from clusterenv._core.reader import EnvReader, host_names, parse_integer, parse_json
from clusterenv._core.safe import shorten
from clusterenv._core.spec import Source
from clusterenv.exceptions import InconsistentEnvironmentError, InvalidVariableError
from clusterenv.sources._detector import Detector, Fields, Gpus, Hints, Kind, Roles
from clusterenv.sources._geometry import node_fields, standalone_fields

__all__ = ["DETECTOR", "VertexDetector"]

_HINT = "Vertex AI sets CLUSTER_SPEC in every replica of a custom job"
_TRAINING = ("workerpool0", "workerpool1")


class VertexDetector(Detector):
    source = Source.VERTEX
    kind = Kind.PLATFORM
    name = "Vertex AI"
    reason = "CLUSTER_SPEC is set: a replica of a Vertex AI custom job"
    proof = (
        "documented: [Vertex AI, distributed "
        "training](https://cloud.google.com/vertex-ai/docs/training/distributed-training) "
        "(`CLUSTER_SPEC`)"
    )
    variables = ("CLUSTER_SPEC", "CLOUD_ML_JOB_ID")
    launcher = "torchrun"
    per_node = True
    roles = Roles(
        rank="a Vertex AI replica",
        node="a Vertex AI replica, before its ranks",
        standalone="a Vertex AI replica outside the training pools (workerpool2, workerpool3)",
    )
    hints = Hints(
        num_nodes="change the replicaCount of workerpool1 (the workers; workerpool0 has one)",
        devices="change the pools' acceleratorCount, or torchrun --nproc_per_node",
        uneven="give workerpool0 and workerpool1 the same machine and acceleratorCount",
    )

    def present(self, env: Mapping[str, str]) -> bool:
        return "CLUSTER_SPEC" in env

    def read(self, reader: EnvReader, gpus: Gpus) -> Fields:
        spec = parse_json("CLUSTER_SPEC", reader.env["CLUSTER_SPEC"], hint=_HINT)
        cluster = spec.get("cluster") if isinstance(spec, dict) else None
        task = spec.get("task") if isinstance(spec, dict) else None
        if not isinstance(cluster, dict) or not isinstance(task, dict):
            raise InvalidVariableError(
                f"CLUSTER_SPEC={shorten(reader.env['CLUSTER_SPEC'])!r} has no cluster and task",
                variables=("CLUSTER_SPEC",),
                hint=_HINT,
            )
        pools = {pool: self._pool(cluster.get(pool, [])) for pool in _TRAINING}
        primary = pools["workerpool0"]
        if len(primary) != 1:
            raise InconsistentEnvironmentError(
                f"CLUSTER_SPEC's workerpool0 lists {len(primary)} replicas, not the one primary",
                variables=("CLUSTER_SPEC",),
                hint="give workerpool0 a replicaCount of 1 (the primary replica)",
            )
        kind = task.get("type")
        index = parse_integer("CLUSTER_SPEC", str(task.get("index")), hint=_HINT)
        for field in ("num_nodes", "node_rank", "hostnames", "master_addr", "master_port"):
            reader.note(field, "CLUSTER_SPEC")
        nodes = [host for pool in _TRAINING for host, _ in pools[pool]]
        if kind not in _TRAINING:  # a server or an evaluator: trains alone, if at all
            return {**standalone_fields(reader, gpus), "master_port": primary[0][1]}
        common: Fields = {"master_addr": primary[0][0], "master_port": primary[0][1]}
        node = index if kind == "workerpool0" else len(primary) + index
        if index >= len(pools[kind]):
            raise InconsistentEnvironmentError(
                f"CLUSTER_SPEC's task is {kind} index {index}, but {kind} lists "
                f"{len(pools[kind])} replicas",
                variables=("CLUSTER_SPEC",),
                hint=_HINT,
            )
        return {
            **common,
            **node_fields(reader, gpus, len(nodes), node),
            "hostnames": tuple(nodes),
        }

    @staticmethod
    def _pool(entries: object) -> list[tuple[str, int]]:
        """A pool's ``host:port`` entries as (host, port)."""
        hosts = host_names("CLUSTER_SPEC", entries, hint=_HINT)
        pairs = []
        for entry in hosts:
            host, _, port = entry.rpartition(":")
            number = parse_integer("CLUSTER_SPEC", port, hint=_HINT, minimum=1, maximum=65535)
            pairs.append((host or entry, number))
        return pairs


DETECTOR = VertexDetector()
