"""Slurm's value formats: GPU counts, task layouts, TRES lists, het-job names."""

from __future__ import annotations

import re

from clusterenv._core.reader import parse_integer
from clusterenv._core.safe import shorten
from clusterenv.exceptions import InvalidVariableError
from clusterenv.hostlist import MAX_HOSTS

__all__ = ["TaskLayout", "at_most", "het", "parse_gpu_count", "tres_count"]

# Counts have at most 9 digits: int() stays cheap on hostile input.
_GPU_ITEM = re.compile(r"(?:[A-Za-z0-9_.-]+:){0,2}([0-9]{1,9})")
_TASKS_ITEM = re.compile(r"([0-9]{1,9})(?:\(x([0-9]{1,9})\))?")


def parse_gpu_count(name: str, value: str) -> int:
    """GPUs in a Slurm GPU count: ``4``, ``a100:4``, ``gpu:a100:4``, ``a100:2,v100:2`` -> sum."""
    items = re.sub(r"\([^)]*\)", "", value).split(",")  # drop "(S:0-1)"-style socket bindings
    total = 0
    for item in items:
        match = _GPU_ITEM.fullmatch(item.strip())
        if match is None:
            raise InvalidVariableError(
                f"{name}={shorten(value)!r} is not a GPU count such as '4', 'a100:4' or "
                "'gpu:a100:4'",
                variables=(name,),
                hint="check the --gpus*/--gres options of the job",
            )
        total += int(match.group(1))
    return total


def het(*names: str) -> tuple[str, ...]:
    """``names``, then their component-0 forms, which a heterogeneous salloc shell has alone."""
    return (*names, *(f"{name}_HET_GROUP_0" for name in names))


def tres_count(name: str, value: str, kind: str) -> int | None:
    """The count of ``kind`` (``gres/gpu`` or ``cpu``) per task in a TRES list such as
    ``cpu=2,gres/gpu=1``, ``gres/gpu:a100=2`` or (``srun``'s messages) ``cpu:2``."""
    for item in value.split(","):
        key, _, count = item.strip().partition("=")
        if kind == "cpu" and key.startswith("cpu:"):
            key, count = key.partition(":")[::2]
        if key == kind or key.startswith(f"{kind}:"):
            return parse_integer(name, count, hint=f"Slurm writes {kind}=N")
    return None


def at_most(count: int) -> str:
    return f"more than {MAX_HOSTS}" if count > MAX_HOSTS else str(count)


class TaskLayout:
    """A Slurm task list such as ``2(x3),1``, read without expanding the repeats."""

    def __init__(self, name: str, value: str) -> None:
        self.name, self.value = name, value
        self.items: list[tuple[int, int]] = []  # (tasks, number of nodes)
        for item in value.split(","):
            match = _TASKS_ITEM.fullmatch(item.strip())
            if match is None or int(match.group(1)) == 0 or int(match.group(2) or 1) == 0:
                raise InvalidVariableError(
                    f"{name}={shorten(value)!r} is not a task list such as '4', '2(x3)' or '3,1'",
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
