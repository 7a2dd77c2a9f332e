"""A warning about a launch: a stable id (for scripts and issue templates), what is wrong
and how to fix it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["ENGINE_IDS", "Finding", "Level"]

#: ``info``: what the process is, or a fact worth knowing, on a correct launch too;
#: ``warning``: what will break or slow the job; ``error``: a hang or failure is certain
#: (the pre-flight check stops there).
Level = Literal["info", "warning", "error"]


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
    level: Level = "warning"

    def __str__(self) -> str:
        return f"{self.message}. Fix: {self.fix}"


#: The ids of the findings that are true of every source (the engine's, the node's, the
#: adapters'); each source lists its own as ``Detector.finding_ids``. `CLUSTERENV_IGNORE`
#: accepts these, and a test checks the package writes no other.
ENGINE_IDS = (
    "batch-step",
    "check.argument-contradicts",
    "check.not-exported",
    "check.refused",
    "check.unset-variable",
    "container-without-job",
    "gpus-double-mask",
    "gpus-hidden",
    "gpus-not-from-zero",
    "gpus-per-task",
    "gpus-several-mig",
    "interface-missing",
    "lightning",
    "loopback-main-address",
    "main-address-empty",
    "main-address-lookup-slow",
    "main-address-unresolved",
    "nccl-ofi-missing",
    "node-process",
    "omp-oversubscribed",
    "spawned-child",
    "submit-shell",
    "uneven-slots",
)
