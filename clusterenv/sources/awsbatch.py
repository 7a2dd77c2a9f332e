"""AWS Batch multi-node parallel jobs: the container that AWS Batch starts once on each
node of the job.

Read as AWS Batch documents them ("Multi-node parallel jobs: Environment variables"):
``AWS_BATCH_JOB_NUM_NODES``, ``AWS_BATCH_JOB_NODE_INDEX`` (0 ... N-1),
``AWS_BATCH_JOB_MAIN_NODE_INDEX`` and ``AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS``,
which is set on the child nodes only, never on the main node itself. The main node need
not be index 0: it is node rank 0 (torch's rendezvous is hosted by node 0), the others
follow in index order after it. On the main node the main address is the loopback address
(as torchx's AWS Batch scheduler does: ``${AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS:-
localhost}``); ``MASTER_ADDR`` overrides both.

Each container runs one process per GPU it sees: the container's command is the ``node``
process, whose ranks torchrun or Lightning start. The port is ``MASTER_PORT``, else derived
from the job id (``AWS_BATCH_JOB_ID``, ``<id>#<node index>`` on each node). Proof: the AWS
Batch documentation; not run here.
"""

from __future__ import annotations

from collections.abc import Mapping

from clusterenv._core.reader import EnvReader
from clusterenv._core.spec import Source
from clusterenv.sources._detector import Detector, Fields, Gpus, Hints, Kind, Roles
from clusterenv.sources._geometry import node_fields

__all__ = ["DETECTOR", "AwsBatchDetector"]

_HINT = "AWS Batch sets this in every node's container of a multi-node parallel job"
_MAIN_ADDRESS = "AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS"


class AwsBatchDetector(Detector):
    source = Source.AWSBATCH
    kind = Kind.PLATFORM
    name = "AWS Batch"
    reason = (
        "AWS_BATCH_JOB_NODE_INDEX and AWS_BATCH_JOB_NUM_NODES are set: a node of an AWS "
        "Batch multi-node parallel job"
    )
    proof = (
        "documented: [AWS Batch, multi-node parallel "
        "jobs](https://docs.aws.amazon.com/batch/latest/userguide/mnp-env-vars.html) "
        "(`AWS_BATCH_JOB_*`)"
    )
    variables = ("AWS_BATCH_JOB_", "AWS_BATCH_CE_NAME", "AWS_BATCH_JQ_NAME")
    launch_keys = ("AWS_BATCH_JOB_ID",)
    launcher = "torchrun"
    per_node = True
    roles = Roles(
        rank="a node of AWS Batch job{job}", node="a node of AWS Batch job{job}, before its ranks"
    )
    hints = Hints(
        num_nodes="change the job definition's numNodes",
        devices="change the node group's GPUs (resourceRequirements), or torchrun --nproc_per_node",
        main=f"AWS Batch sets {_MAIN_ADDRESS} on every child node of a multi-node parallel "
        "job; export MASTER_ADDR as the main node's address otherwise",
    )

    def present(self, env: Mapping[str, str]) -> bool:
        return "AWS_BATCH_JOB_NODE_INDEX" in env and "AWS_BATCH_JOB_NUM_NODES" in env

    def read(self, reader: EnvReader, gpus: Gpus) -> Fields:
        nodes = reader.integer("num_nodes", "AWS_BATCH_JOB_NUM_NODES", hint=_HINT, minimum=1)
        last = nodes - 1
        index = reader.integer("node_rank", "AWS_BATCH_JOB_NODE_INDEX", hint=_HINT, maximum=last)
        main = reader.integer(
            "node_rank", "AWS_BATCH_JOB_MAIN_NODE_INDEX", hint=_HINT, default=0, maximum=last
        )
        reader.note("node_rank", "AWS_BATCH_JOB_NODE_INDEX", "AWS_BATCH_JOB_MAIN_NODE_INDEX")
        job = reader.optional("job_id", "AWS_BATCH_JOB_ID")
        fields: Fields = {
            **node_fields(reader, gpus, nodes, (index - main) % nodes),
            "job_id": None if job is None else job.partition("#")[0],  # one id for every node
        }
        # Set on every child node; the main node is this one.
        master = reader.optional("master_addr", _MAIN_ADDRESS)
        if master is None and index == main:
            reader.note("master_addr", "AWS_BATCH_JOB_NODE_INDEX", "AWS_BATCH_JOB_MAIN_NODE_INDEX")
            master = "127.0.0.1"
        return fields if master is None else {**fields, "master_addr": master}


DETECTOR = AwsBatchDetector()
