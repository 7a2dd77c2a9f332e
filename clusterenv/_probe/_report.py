"""What rank 0 reports: one row per rank, the problems, and how to show them."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from clusterenv._adapters.frameworks import endpoint, listen_port
from clusterenv._core.spec import ResourceSpec
from clusterenv.exceptions import ClusterEnvError

__all__ = ["SHOWN_ROWS", "ProbeError", "ProbeReport", "probe_address"]

#: Rows of the rank-0 table before it summarises by node (``--all`` shows every row).
SHOWN_ROWS = 16


@dataclass
class ProbeReport:
    """What rank 0 saw: one row per rank that said hello (other ranks get none)."""

    spec: ResourceSpec
    rows: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    note: str = ""
    #: The interfaces (or addresses) the ranks reached rank 0 through: the training's network.
    through: tuple[str, ...] = ()
    #: Rank 0's own addresses, ``eth0 198.18.0.1``: where else the ranks might reach it.
    addresses: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems

    def table(self, *, every_row: bool = False) -> str:
        """One row per rank (the first ``SHOWN_ROWS``, then a count per status and node
        unless ``every_row``), host names in full; then the verdict."""
        rows = sorted(self.rows, key=lambda row: (row["rank"], row["status"]))
        width = max([4, *(len(row["host"]) for row in rows[:SHOWN_ROWS])])
        lines = [f"{'rank':>5}  {'host':<{width}}  {'node':>5} {'local':>5}  status     GPUs  from"]
        shown = rows if every_row else rows[:SHOWN_ROWS]
        for row in shown:
            gpus = ",".join(row["gpus"]) or "-"
            lines.append(
                f"{row['rank']:>5}  {row['host']:<{width}}  {row['node']:>5} {row['local']:>5}"
                f"  {row['status']:<9}  {gpus:<4}  {row.get('from') or '-'}"
            )
        if len(rows) > len(shown):
            nodes: dict[str, set[int]] = defaultdict(set)
            counts: Counter[str] = Counter()
            for row in rows[len(shown) :]:
                nodes[row["status"]].add(row["node"])
                counts[row["status"]] += 1
            said = "; ".join(
                f"{counts[status]} {status} on {len(on)} node(s)" for status, on in nodes.items()
            )
            lines.append(f"   ... {len(rows) - len(shown)} more ranks: {said} (--all lists them)")
        if self.addresses and self.spec.num_nodes > 1:
            lines.append(f"rank 0's addresses: {', '.join(self.addresses)}")
        if self.note:
            lines.append(self.note)
        elif self.ok:  # a failure's problems follow in the ProbeError's message
            spec = self.spec
            lines.append(
                f"OK: {spec.world_size} ranks on {spec.num_nodes} node(s) reached "
                f"{probe_address(spec)}"
                + (f" through {', '.join(self.through)}" if self.through else "")
            )
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "world_size": self.spec.world_size,
            "address": probe_address(self.spec),
            "problems": self.problems,
            "note": self.note,
            "through": list(self.through),
            "addresses": list(self.addresses),
            "ranks": sorted(self.rows, key=lambda row: row["rank"]),
        }


def probe_address(spec: ResourceSpec) -> str:
    """Where the probe's rank 0 listens, as ``host:port``."""
    return endpoint(spec.master_addr, listen_port(spec))


class ProbeError(ClusterEnvError):
    """The ranks of the launch cannot all reach rank 0, or they disagree about the job.

    ``report`` is rank 0's table of what it saw (``None`` on the other ranks).
    """

    def __init__(self, message: str, *, hint: str, report: ProbeReport | None = None) -> None:
        super().__init__(message, hint=hint)
        self.report = report
