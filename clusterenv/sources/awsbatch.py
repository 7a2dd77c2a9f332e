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

from clusterenv._gpu import gpu_fields
from clusterenv._reader import EnvReader, GpuProbe
from clusterenv._spec import Source
from clusterenv.exceptions import MissingVariableError
from clusterenv.sources._detector import Detector, Fields, Hints, Roles
from clusterenv.sources._geometry import job_port, node_fields
from clusterenv.sources.local import DEFAULT_PORT

__all__ = ["DETECTOR", "AwsBatchDetector"]

_HINT = "AWS Batch sets this in every node's container of a multi-node parallel job"
_MAIN_ADDRESS = "AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS"


class AwsBatchDetector(Detector):
    source = Source.AWSBATCH
    name = "AWS Batch"
    reason = (
        "AWS_BATCH_JOB_NODE_INDEX and AWS_BATCH_JOB_NUM_NODES are set: a node of an AWS "
        "Batch multi-node parallel job"
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
    )

    def present(self, env: Mapping[str, str]) -> bool:
        return "AWS_BATCH_JOB_NODE_INDEX" in env and "AWS_BATCH_JOB_NUM_NODES" in env

    def read(self, reader: EnvReader, gpu_probe: GpuProbe) -> Fields:
        nodes = reader.integer("num_nodes", "AWS_BATCH_JOB_NUM_NODES", hint=_HINT, minimum=1)
        last = nodes - 1
        index = reader.integer("node_rank", "AWS_BATCH_JOB_NODE_INDEX", hint=_HINT, maximum=last)
        main = reader.integer(
            "node_rank", "AWS_BATCH_JOB_MAIN_NODE_INDEX", hint=_HINT, default=0, maximum=last
        )
        reader.note("node_rank", "AWS_BATCH_JOB_NODE_INDEX", "AWS_BATCH_JOB_MAIN_NODE_INDEX")
        master = reader.optional("master_addr", "MASTER_ADDR", _MAIN_ADDRESS)
        if master is None and index == main:  # this is the main node
            reader.note("master_addr", "AWS_BATCH_JOB_NODE_INDEX", "AWS_BATCH_JOB_MAIN_NODE_INDEX")
        elif master is None:
            raise MissingVariableError(
                f"node {index} of an AWS Batch job whose main node is {main}, but "
                f"{_MAIN_ADDRESS} is not set",
                variables=(_MAIN_ADDRESS, "AWS_BATCH_JOB_NODE_INDEX"),
                hint="AWS Batch sets it on every child node; export MASTER_ADDR as the main "
                "node's address otherwise",
            )
        job = reader.optional("job_id", "AWS_BATCH_JOB_ID")
        job = None if job is None else job.partition("#")[0]  # one id for every node
        gpus = gpu_fields(reader, gpu_probe)
        return {
            **node_fields(reader, gpus, nodes, (index - main) % nodes),
            "source": self.source,
            "master_addr": master or "127.0.0.1",
            "master_port": reader.port(
                DEFAULT_PORT if job is None else job_port(job),
                hint="export MASTER_PORT as a free TCP port, or unset it",
            ),
            "job_id": job,
            **gpus,
        }


DETECTOR = AwsBatchDetector()
