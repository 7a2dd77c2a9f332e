"""SkyPilot tasks: the run commands on each node."""

from __future__ import annotations

from clusterenv._models.launch import Launch, check, positive, rank_of

__all__ = ["examples", "skypilot_env"]


def skypilot_env(
    nodes: int = 1, node: int = 0, *, gpus_per_node: int = 0, task_id: str | None = None
) -> Launch:
    """The run commands of a task with ``num_nodes: NODES`` on node ``node``: SkyPilot's
    variables, the nodes' IPs one per line with the head node's first."""
    positive("skypilot_env", nodes=nodes)
    rank_of("skypilot_env", node, nodes)
    check("skypilot_env", gpus_per_node >= 0, "gpus_per_node is negative", "pass it >= 0")
    return Launch(
        {
            "SKYPILOT_NODE_RANK": str(node),
            "SKYPILOT_NODE_IPS": "".join(f"10.0.0.{i + 10}\n" for i in range(nodes)),
            "SKYPILOT_NUM_NODES": str(nodes),
            "SKYPILOT_NUM_GPUS_PER_NODE": str(gpus_per_node),
            "SKYPILOT_TASK_ID": task_id or "sky-2026-12-03-21-00-00-000001_mycluster_1",
        }
    )


def examples() -> list[Launch]:
    """One launch per role this source produces: the contract tests run every source's."""
    return [skypilot_env(2, 1, gpus_per_node=2), skypilot_env(1)]
