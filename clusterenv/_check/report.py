"""What `clusterenv check` says of a job script, as data (``--json``, schema
docs/schema/check-v1.json) and as text: the allocation it asks for, what each launch line
starts, the findings at their lines and what it could not model."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from clusterenv._core.finding import Level
from clusterenv._core.safe import escape, redact_text

__all__ = ["Allocation", "CheckReport", "Finding", "NodeMap", "NotModelled", "Predicted", "Rank"]

SCHEMA_VERSION: Literal[1] = 1


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Allocation(_Model):
    """What the script asks of the scheduler; ``lines``: field -> the line it came from
    (0: the command line or an input variable)."""

    nodes: int | None = None
    tasks_per_node: int | None = None
    ntasks: int | None = None
    gpus_per_node: int | None = None
    gpus_per_task: int | None = None
    cpus_per_task: int | None = None
    job_name: str | None = None
    array: str | None = None
    lines: dict[str, int] = Field(default_factory=dict)


class Rank(_Model):
    rank: int
    local_rank: int
    gpus: list[str]


class NodeMap(_Model):
    """One node of a launch: its GPUs and the ranks on it, with the GPUs each sees."""

    node: int
    gpus: int | None
    ranks: list[Rank]


class Predicted(_Model):
    """What one launch line starts."""

    line: int
    command: str
    launcher: str
    nodes: int
    ranks_per_node: int
    world_size: int
    gpus_per_rank: int | None
    main_address: str | None
    main_port: int | None
    map: list[NodeMap]


class Finding(_Model):
    id: str
    level: Level
    line: int
    message: str
    fix: str


class NotModelled(_Model):
    line: int
    text: str
    why: str


class CheckReport(_Model):
    schema_version: Literal[1] = SCHEMA_VERSION
    script: str
    scheduler: Literal["slurm"] = "slurm"
    #: The scheduler's own verdict, where one answered here (``sbatch --test-only``).
    scheduler_says: str | None = None
    allocation: Allocation
    launches: list[Predicted]
    findings: list[Finding]
    not_modelled: list[NotModelled]


#: The first nodes a launch's map shows.
MAP_NODES = 2


#: The ranks of one node the text shows (the JSON has them all).
MAP_RANKS = 8


def text(report: CheckReport) -> str:
    """``report`` for a terminal: every value escaped, secrets redacted."""
    out = [f"{report.script}: a {report.scheduler} job script"]
    a = report.allocation
    asked = [
        f"{name.replace('_', ' ')} {value}"
        + (f" (line {a.lines[name]})" if a.lines.get(name) else "")
        for name, value in a.model_dump(exclude={"lines"}).items()
        if value is not None
    ]
    out.append("allocation: " + (", ".join(asked) or "the scheduler's defaults (1 node, 1 task)"))
    if report.scheduler_says is not None:
        out.append(f"sbatch --test-only: {report.scheduler_says}")
    for launch in report.launches:
        address = f", main address {launch.main_address}:{launch.main_port}"
        out.append(
            f"line {launch.line}: {launch.command}\n  {launch.launcher}: {launch.nodes} node(s) x "
            f"{launch.ranks_per_node} rank(s) = world size {launch.world_size}"
            + (address if launch.main_address else "")
        )
        out += [
            f"  node {node.node} ({node.gpus or 0} GPUs): {_ranks(node)}" for node in launch.map
        ]
    if report.launches:
        out.append("  (cn001, cn002, ... stand for the job's nodes in order)")
    for finding in report.findings:
        where = f"line {finding.line}" if finding.line else "the submission"
        out.append(
            f"{where}: {finding.level} [{finding.id}]: {finding.message}. Fix: {finding.fix}"
        )
    for skipped in report.not_modelled:
        out.append(f"line {skipped.line}: not modelled: {skipped.text} ({skipped.why})")
    if not report.findings:
        out.append("no finding")
    return escape(redact_text("\n".join(out)))


def _ranks(node: NodeMap) -> str:
    shown = [
        f"rank {r.rank} (local {r.local_rank}) sees GPU {','.join(r.gpus) or 'none'}"
        for r in node.ranks[:MAP_RANKS]
    ]
    more = len(node.ranks) - MAP_RANKS
    return ", ".join(shown) + (f", and {more} more" if more > 0 else "") or "no rank"
