"""SkyPilot: the ``run`` commands of a task, which SkyPilot starts once on each node of
its cluster (``num_nodes: N``).

Read as SkyPilot documents them ("Environment variables and secrets", SkyPilot-native
variables; "Distributed multi-node jobs"): ``SKYPILOT_NODE_RANK`` (0 on the head node),
``SKYPILOT_NODE_IPS`` (one IP address per line, the head node's first, in node-rank
order), ``SKYPILOT_NUM_NODES`` and ``SKYPILOT_TASK_ID``. ``SKYPILOT_NUM_GPUS_PER_NODE`` is
the GPUs requested per node; the ranks per node are the GPUs this process sees. The
``setup`` commands get ``SKYPILOT_SETUP_NODE_RANK`` instead and are not a training node.

The run commands are the ``node`` process, whose ranks torchrun (SkyPilot's own examples)
or Lightning start; torchrun's workers are read by the torchelastic source, which wins. The
main address is the head node's IP, the port ``MASTER_PORT``, else derived from the task id.
Proof: SkyPilot's documentation; not run here.
"""

from __future__ import annotations

from collections.abc import Mapping

from clusterenv._core.reader import EnvReader, host_names
from clusterenv._core.safe import shorten
from clusterenv._core.spec import Source
from clusterenv.exceptions import InconsistentEnvironmentError
from clusterenv.sources._detector import Detector, Fields, Gpus, Hints, Kind, Roles
from clusterenv.sources._geometry import node_fields

__all__ = ["DETECTOR", "SkyPilotDetector"]

_HINT = "SkyPilot sets this in the run commands of every node of a task"


class SkyPilotDetector(Detector):
    source = Source.SKYPILOT
    kind = Kind.PLATFORM
    name = "SkyPilot"
    reason = "SKYPILOT_NODE_RANK and SKYPILOT_NODE_IPS are set: the run commands of a SkyPilot task"
    proof = (
        "documented: [SkyPilot, environment "
        "variables](https://docs.skypilot.co/en/stable/running-jobs/environment-variables.html)"
        " (`SKYPILOT_NODE_RANK`, `SKYPILOT_NODE_IPS`)"
    )
    variables = (
        "SKYPILOT_NODE_RANK",
        "SKYPILOT_NODE_IPS",
        "SKYPILOT_NUM_NODES",
        "SKYPILOT_NUM_GPUS_PER_NODE",
        "SKYPILOT_TASK_ID",
    )
    launch_keys = ("SKYPILOT_TASK_ID",)
    launcher = "torchrun"
    per_node = True
    roles = Roles(rank="a SkyPilot node", node="a SkyPilot node, before its ranks")
    hints = Hints(
        num_nodes="change the task's num_nodes",
        devices="change the task's accelerators (GPUs per node), or torchrun --nproc_per_node",
    )

    def present(self, env: Mapping[str, str]) -> bool:
        return "SKYPILOT_NODE_RANK" in env and "SKYPILOT_NODE_IPS" in env

    def read(self, reader: EnvReader, gpus: Gpus) -> Fields:
        lines = reader.env["SKYPILOT_NODE_IPS"].split()
        ips = host_names("SKYPILOT_NODE_IPS", lines, hint=_HINT)
        reader.note("hostnames", "SKYPILOT_NODE_IPS")
        nodes = reader.integer(
            "num_nodes", "SKYPILOT_NUM_NODES", hint=_HINT, default=len(ips), minimum=1
        )
        if nodes != len(ips):
            raise InconsistentEnvironmentError(
                f"SKYPILOT_NUM_NODES={nodes} but SKYPILOT_NODE_IPS lists {len(ips)} "
                f"address(es) ({shorten(', '.join(ips))})",
                variables=("SKYPILOT_NUM_NODES", "SKYPILOT_NODE_IPS"),
                hint="SkyPilot sets both for the task; look for one set by hand",
            )
        reader.note("num_nodes", "SKYPILOT_NUM_NODES", "SKYPILOT_NODE_IPS")
        node = reader.integer(
            "node_rank", "SKYPILOT_NODE_RANK", hint=_HINT, maximum=max(0, nodes - 1)
        )
        task = reader.optional("job_id", "SKYPILOT_TASK_ID")
        reader.derive("master_addr", "hostnames")
        return {
            **node_fields(reader, gpus, nodes, node),
            "hostnames": ips,
            "master_addr": ips[0],
            "job_id": task,
        }


DETECTOR = SkyPilotDetector()
