"""What an adapter needs to know of a launch beyond the spec: a small value that travels
with each detection (:attr:`~clusterenv.Detection.launch`), so that no adapter asks the
sources."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Hints", "LaunchFacts"]


@dataclass(frozen=True)
class Hints:
    """What to change when a framework's settings contradict a launch of this source.

    Each completes "drop the setting to use the launch's, or ...".
    """

    num_nodes: str = "start the ranks on as many nodes as you ask for"
    devices: str = "start as many ranks on each node as you ask devices for"
    uneven: str = "start the same number of ranks on every node"
    gpus: str = "let every rank see all GPUs of its node"
    #: How to start MPI ranks so that this scheduler names their nodes ("" where mpirun is
    #: the scheduler's own way).
    mpi: str = ""
    #: How to give the ranks a main address where the launch names none (several nodes).
    main: str = "export MASTER_ADDR as the host of rank 0 to every rank"


@dataclass(frozen=True)
class LaunchFacts:
    """The launch of one process, as its source knows it."""

    #: The command that starts the ranks (``srun``); ``""`` where the source has none.
    launcher: str
    #: Whether the launcher itself listens on ``MASTER_PORT`` (torchrun's agent store).
    holds_main_port: bool
    #: Variables whose values every rank of one launch shares and other users do not see.
    launch_keys: tuple[str, ...]
    #: What to change when a framework's settings contradict the launch.
    hints: Hints
    #: What the process is, in words: ``the srun step of job 42``.
    description: str
