"""AWS Batch multi-node parallel jobs: each node's container."""

from __future__ import annotations

from clusterenv._models.launch import Launch, positive, rank_of

__all__ = ["awsbatch_env", "examples"]


def awsbatch_env(
    nodes: int = 2, node: int = 0, *, main: int = 0, job_id: str = "4c1b2a3e-job"
) -> Launch:
    """Node ``node`` of a multi-node parallel job of ``nodes`` nodes whose main node is
    ``main``: AWS Batch's variables, the main node's address on the other nodes only."""
    positive("awsbatch_env", nodes=nodes)
    rank_of("awsbatch_env", node, nodes)
    rank_of("awsbatch_env", main, nodes)
    env = {
        "AWS_BATCH_JOB_ID": f"{job_id}#{node}",
        "AWS_BATCH_JOB_ATTEMPT": "1",
        "AWS_BATCH_JOB_NUM_NODES": str(nodes),
        "AWS_BATCH_JOB_NODE_INDEX": str(node),
        "AWS_BATCH_JOB_MAIN_NODE_INDEX": str(main),
        "AWS_BATCH_JQ_NAME": "gpu-queue",
        "AWS_BATCH_CE_NAME": "gpu-compute",
    }
    if node != main:
        env["AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS"] = "10.0.1.17"
    return Launch(env)


def examples() -> list[Launch]:
    """One launch per role this source produces: the contract tests run every source's."""
    return [awsbatch_env(3, 0, main=1), awsbatch_env(2, 0)]
