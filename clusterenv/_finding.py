"""A warning about a launch: a stable id (for scripts and issue templates), what is wrong
and how to fix it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["Finding"]


class Finding(BaseModel):
    """One thing that will break (or slow) a multi-node job, with a one-line fix.

    ``id`` is ``<source>.<what>`` for what one scheduler or launcher knows
    (``slurm.job-name``), ``<what>`` for what is true of every source; ids never change
    meaning (`clusterenv inspect --json` publishes them).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    message: str
    fix: str

    def __str__(self) -> str:
        return f"{self.message}. Fix: {self.fix}"
