"""Slurm: tasks of an srun step, the batch step of an sbatch script, and salloc shells.

Which of the three this process is follows from the variables Slurm sets, never from
the job name (salloc names its jobs ``interactive`` and their srun steps inherit it):

* **srun step** (``SLURM_STEP_ID`` set): one task of ``world_size``. The geometry is the
  step's (``SLURM_STEP_NUM_NODES``, ``SLURM_STEP_NUM_TASKS``, ``SLURM_STEP_TASKS_PER_NODE``,
  ``SLURM_STEP_NODELIST``) because in a step smaller than its job some plain ``SLURM_*``
  variables still describe the job; ranks come from ``SLURM_PROCID``/``LOCALID``/``NODEID``.
* **batch step** (``SLURM_PROCID`` set but no ``SLURM_STEP_ID``) and **salloc shell** (neither
  set): one process that describes the allocation. Its ranks are 0 and the world size is
  what an ``srun`` over the allocation should start: ``--ntasks-per-node`` if given, else one
  rank per GPU, else the job's task layout.

The main address is the first host of the node list (``MASTER_ADDR`` overrides); the main
port is ``MASTER_PORT`` or derived from the job id (:func:`~clusterenv.sources.base.job_port`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from clusterenv._gpu import visible_gpus
from clusterenv._spec import Accelerator, Role, Source
from clusterenv.exceptions import InconsistentEnvironmentError, InvalidVariableError
from clusterenv.hostlist import count_hosts, expand_hostlist
from clusterenv.sources.base import Detector, EnvReader, GpuProbe, job_port, parse_integer

__all__ = ["SlurmDetector", "TaskLayout", "parse_gpu_count"]

_HINT = "Slurm sets this inside a job; run the script under sbatch, salloc or srun"
_STEP_HINT = "Slurm sets this in every srun task; launch the ranks with srun"
_GPU_ITEM = re.compile(r"(?:[A-Za-z0-9_.-]+:){0,2}([0-9]+)")
_TASKS_ITEM = re.compile(r"([0-9]+)(?:\(x([0-9]+)\))?")


def parse_gpu_count(name: str, value: str) -> int:
    """GPUs in a Slurm GPU count: ``4``, ``a100:4``, ``gpu:a100:4``, ``a100:2,v100:2`` -> sum."""
    items = re.sub(r"\([^)]*\)", "", value).split(",")  # drop "(S:0-1)"-style socket bindings
    total = 0
    for item in items:
        match = _GPU_ITEM.fullmatch(item.strip())
        if match is None:
            raise InvalidVariableError(
                f"{name}={value!r} is not a GPU count such as '4', 'a100:4' or 'gpu:a100:4'",
                variables=(name,),
                hint="check the --gpus*/--gres options of the job",
            )
        total += int(match.group(1))
    return total


class TaskLayout:
    """A Slurm task list such as ``2(x3),1``, read without expanding the repeats."""

    def __init__(self, name: str, value: str) -> None:
        self.name, self.value = name, value
        self.items: list[tuple[int, int]] = []  # (tasks, number of nodes)
        for item in value.split(","):
            match = _TASKS_ITEM.fullmatch(item.strip())
            if match is None or int(match.group(1)) == 0 or int(match.group(2) or 1) == 0:
                raise InvalidVariableError(
                    f"{name}={value!r} is not a task list such as '4', '2(x3)' or '3,1'",
                    variables=(name,),
                    hint="Slurm writes one count per node, repeats as N(xM)",
                )
            self.items.append((int(match.group(1)), int(match.group(2) or 1)))
        self.num_nodes = sum(nodes for _, nodes in self.items)
        self.num_tasks = sum(tasks * nodes for tasks, nodes in self.items)

    def on_node(self, node: int) -> int:
        """Tasks on node ``node`` (0-based, in node list order); requires ``node < num_nodes``."""
        for tasks, nodes in self.items:
            if node < nodes:
                return tasks
            node -= nodes
        raise AssertionError("node index checked by the caller")


class SlurmDetector(Detector):
    source = Source.SLURM
    reason = "SLURM_JOB_ID is set: inside a Slurm job"

    def present(self, env: Mapping[str, str]) -> bool:
        return "SLURM_JOB_ID" in env or "SLURM_JOBID" in env

    def read(self, reader: EnvReader, gpu_probe: GpuProbe) -> dict[str, Any]:
        job_id = reader.text("job_id", "SLURM_JOB_ID", "SLURM_JOBID", hint=_HINT)
        # Slurm's job ids are integers: anything else was set by hand.
        parse_integer(reader.origins["job_id"][0], job_id, hint=_HINT)
        fields = self._step(reader) if "SLURM_STEP_ID" in reader.env else self._allocation(reader)
        if fields["role"] is Role.SHELL:
            devices: tuple[str, ...] = ()  # the shell runs on the submit host, not on a node
            gpus = fields.pop("gpus_per_node") or 0
        else:
            devices = visible_gpus(reader, gpu_probe)
            gpus = fields.pop("gpus_per_node")
            if gpus is None:
                reader.origins["gpus_per_node"] = reader.origins.get("visible_devices", ())
                gpus = len(devices)
        master_addr = reader.optional("master_addr", "MASTER_ADDR")
        if master_addr is None:
            reader.origins["master_addr"] = reader.origins["hostnames"]
            master_addr = fields["hostnames"][0]
        return {
            **fields,
            "source": self.source,
            "job_id": job_id,
            "master_addr": master_addr,
            "master_port": reader.port(
                job_port(job_id),
                hint="export MASTER_PORT as a free TCP port, or unset it to derive one from "
                "the job id",
            ),
            "accelerator": Accelerator.GPU if gpus else Accelerator.CPU,
            "gpus_per_node": gpus,
            "visible_devices": devices,
        }

    def _step(self, reader: EnvReader) -> dict[str, Any]:
        """One task of an srun step: the step's geometry, this task's ranks."""
        num_nodes = reader.integer(
            "num_nodes", "SLURM_STEP_NUM_NODES", "SLURM_NNODES", hint=_STEP_HINT, minimum=1
        )
        world_size = reader.integer(
            "world_size", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", hint=_STEP_HINT, minimum=1
        )
        node_rank = reader.integer("node_rank", "SLURM_NODEID", hint=_STEP_HINT)
        layout = self._layout(reader, "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE")
        self._check_layout(reader, layout, num_nodes, reader.origins["world_size"][0])
        tasks_here = layout.on_node(node_rank) if node_rank < num_nodes else 1
        reader.note("devices_per_node", layout.name, "SLURM_NODEID")
        return {
            "role": Role.RANK,
            "num_nodes": num_nodes,
            "world_size": world_size,
            "devices_per_node": tasks_here,
            "global_rank": reader.integer("global_rank", "SLURM_PROCID", hint=_STEP_HINT),
            "local_rank": reader.integer("local_rank", "SLURM_LOCALID", hint=_STEP_HINT),
            "node_rank": node_rank,
            "hostnames": self._hostnames(
                reader, num_nodes, "SLURM_STEP_NODELIST", "SLURM_NODELIST", "SLURM_JOB_NODELIST"
            ),
            "gpus_per_node": self._gpus(reader, tasks_here),
        }

    def _allocation(self, reader: EnvReader) -> dict[str, Any]:
        """The batch step or the salloc shell: describe what srun should start."""
        num_nodes = reader.integer(
            "num_nodes", "SLURM_JOB_NUM_NODES", "SLURM_NNODES", hint=_HINT, minimum=1
        )
        layout = None
        if reader.lookup("SLURM_TASKS_PER_NODE"):
            layout = self._layout(reader, "SLURM_TASKS_PER_NODE")
            ntasks = "SLURM_NTASKS" if "SLURM_NTASKS" in reader.env else None
            self._check_layout(reader, layout, num_nodes, ntasks)
        tasks_here = layout.on_node(0) if layout else 1
        gpus = self._gpus(reader, tasks_here)
        if reader.lookup("SLURM_NTASKS_PER_NODE"):
            per_node = reader.integer(
                "devices_per_node", "SLURM_NTASKS_PER_NODE", hint=_HINT, minimum=1
            )
            world_size = per_node * num_nodes
        elif gpus:
            per_node, world_size = gpus, gpus * num_nodes
            reader.origins["devices_per_node"] = reader.origins["gpus_per_node"]
        elif layout:
            per_node, world_size = tasks_here, layout.num_tasks
            reader.note("devices_per_node", layout.name)
        else:
            per_node, world_size = 1, num_nodes
        reader.origins["world_size"] = (
            reader.origins.get("devices_per_node", ()) + reader.origins["num_nodes"]
        )
        return {
            "role": Role.BATCH if "SLURM_PROCID" in reader.env else Role.SHELL,
            "num_nodes": num_nodes,
            "world_size": world_size,
            "devices_per_node": per_node,
            "global_rank": 0,
            "local_rank": 0,
            "node_rank": 0,
            "hostnames": self._hostnames(reader, num_nodes, "SLURM_JOB_NODELIST", "SLURM_NODELIST"),
            "gpus_per_node": gpus,
        }

    @staticmethod
    def _layout(reader: EnvReader, *names: str) -> TaskLayout:
        value = reader.text("devices_per_node", *names, hint=_HINT)
        return TaskLayout(reader.origins["devices_per_node"][0], value)

    @staticmethod
    def _check_layout(
        reader: EnvReader, layout: TaskLayout, num_nodes: int, tasks_name: str | None
    ) -> None:
        """The task list must cover ``num_nodes`` nodes and sum to the task count."""
        nodes_name = reader.origins["num_nodes"][0]
        problem = None
        if layout.num_nodes != num_nodes:
            problem = f"lists {layout.num_nodes} nodes but {nodes_name}={reader.env[nodes_name]!r}"
        elif tasks_name and layout.num_tasks != parse_integer(
            tasks_name, reader.env[tasks_name], hint=_HINT, minimum=1
        ):
            problem = (
                f"sums to {layout.num_tasks} tasks but {tasks_name}={reader.env[tasks_name]!r}"
            )
        if problem:
            raise InconsistentEnvironmentError(
                f"{layout.name}={layout.value!r} {problem}",
                variables=(layout.name, nodes_name, *((tasks_name,) if tasks_name else ())),
                hint="Slurm sets these together for one step; do not set them by hand",
            )

    @staticmethod
    def _hostnames(reader: EnvReader, num_nodes: int, *names: str) -> tuple[str, ...]:
        nodelist = reader.text("hostnames", *names, hint=_HINT)
        name, nodes_name = reader.origins["hostnames"][0], reader.origins["num_nodes"][0]
        count = count_hosts(nodelist)  # before expanding: a hostile count must not allocate
        if count != num_nodes:
            raise InconsistentEnvironmentError(
                f"{name}={nodelist!r} names {count} hosts but "
                f"{nodes_name}={reader.env[nodes_name]!r}",
                variables=(name, nodes_name),
                hint="Slurm sets these together for one step; do not set them by hand",
            )
        return tuple(expand_hostlist(nodelist))

    @staticmethod
    def _gpus(reader: EnvReader, tasks_here: int) -> int | None:
        """GPUs per node from Slurm's own variables; ``None`` when Slurm says nothing."""
        found = reader.lookup("SLURM_GPUS_ON_NODE")
        if found:
            reader.note("gpus_per_node", found[0])
            return parse_integer(*found, hint="Slurm sets this to the GPUs of this node")
        found = reader.lookup("SLURM_STEP_GPUS", "SLURM_JOB_GPUS")
        if found:
            reader.note("gpus_per_node", found[0])
            ids = [item for item in found[1].split(",") if item.strip()]
            for item in ids:
                parse_integer(found[0], item, hint="Slurm lists GPU indices such as '0,1'")
            return len(ids)
        found = reader.lookup("SLURM_GPUS_PER_NODE")
        if found:
            reader.note("gpus_per_node", found[0])
            return parse_gpu_count(*found)
        found = reader.lookup("SLURM_GPUS_PER_TASK")
        if found:
            reader.note("gpus_per_node", found[0])
            return parse_gpu_count(*found) * tasks_here
        return None
