"""The ``env://`` contract: the variables torch.distributed's ``init_method="env://"`` reads
(``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``), with the local rank and the
ranks per node that every launcher of this kind sets beside them.

Set by the DeepSpeed launcher (``deepspeed``, ``deepspeed.launcher.launch``: ``LOCAL_SIZE``
for the ranks per node, ``CROSS_RANK``/``CROSS_SIZE`` for the node and the node count,
never ``LOCAL_WORLD_SIZE``; DeepSpeed 0.19.8's ``launcher/launch.py``), Ray Train's
``TorchTrainer`` workers (``LOCAL_WORLD_SIZE``, ``NODE_RANK``), Lightning's own child
processes and hand-written launch scripts.

The lowest-priority launcher. ``RANK`` and ``WORLD_SIZE`` together make a process an
``env://`` rank (torch then initialises from them), so a set that lacks what the spec needs
is an error naming the missing variables, never a local run that contradicts torch. Nodes
follow from the ranks per node as for MPI; ``GROUP_RANK``, ``NODE_RANK`` or ``CROSS_RANK``,
and ``CROSS_SIZE``, where set, name the node and the node count and must agree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from clusterenv._core.finding import Finding
from clusterenv._core.reader import EnvReader
from clusterenv._core.safe import shorten
from clusterenv._core.spec import ResourceSpec, Role, Source
from clusterenv.exceptions import InconsistentEnvironmentError, MissingVariableError
from clusterenv.sources._detector import Detector, Fields, Gpus, Hints, Kind
from clusterenv.sources._geometry import read_ranks

__all__ = ["CONTRACT", "DETECTOR", "EnvDetector"]

#: What ``init_method="env://"`` reads: torch's own rendezvous needs these four.
CONTRACT = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
#: Where the ranks per node come from: torchrun's and Ray's name, then DeepSpeed's.
_LOCAL_SIZE = ("LOCAL_WORLD_SIZE", "LOCAL_SIZE")
_HINT = (
    "the launcher sets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE (DeepSpeed: LOCAL_SIZE), "
    "MASTER_ADDR and MASTER_PORT together in every process: a script that starts ranks "
    "itself exports all six (LOCAL_WORLD_SIZE: its ranks per node), or starts them with torchrun"
)


class EnvDetector(Detector):
    source = Source.ENV
    kind = Kind.CONTRACT
    name = "env://"
    reason = "RANK and WORLD_SIZE are set: an env:// rank (DeepSpeed, Ray Train, a script)"
    proof = (
        "live: the DeepSpeed launcher 0.19.8 (`deepspeed` on one node, also in an sbatch script"
        " on both Slurm releases, `deepspeed.launcher.launch` on two), Ray Train 2.60.0 "
        "(`TorchTrainer`, two CPU workers)"
    )
    finding_ids = ("env.inside-task",)
    variables = (
        *CONTRACT,
        "LOCAL_RANK",
        *_LOCAL_SIZE,
        "GROUP_RANK",
        "NODE_RANK",
        "CROSS_RANK",
        "CROSS_SIZE",
    )
    hints = Hints(
        num_nodes="change the number of nodes the launch script starts",
        devices="change the processes per node it starts (LOCAL_WORLD_SIZE)",
        main=_HINT,
    )
    exports_main = True

    def present(self, env: Mapping[str, str]) -> bool:
        return "RANK" in env and "WORLD_SIZE" in env

    def starts_ranks(self, env: Mapping[str, str]) -> bool:
        # The whole per-process set: a Lightning rank started from a platform's node
        # process inherits the platform's RANK but gets no ranks per node.
        return all(name in env for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK")) and any(
            name in env for name in _LOCAL_SIZE
        )

    def claims_ranks(self, env: Mapping[str, str]) -> bool:
        return self.present(env)

    def read(self, reader: EnvReader, gpus: Gpus) -> Fields:
        needed = (("LOCAL_RANK",), _LOCAL_SIZE, ("MASTER_ADDR",), ("MASTER_PORT",))
        missing = [names[0] for names in needed if not any(n in reader.env for n in names)]
        if missing:
            raise MissingVariableError(
                f"RANK and WORLD_SIZE are set (an env:// rank) but not {', '.join(missing)}",
                variables=tuple(missing),
                hint=_HINT,
            )
        if {"GROUP_RANK", "GROUP_WORLD_SIZE"} <= set(reader.env):
            return self._named_nodes(reader)
        fields = read_ranks(
            reader,
            world=("WORLD_SIZE",),
            rank=("RANK",),
            local_rank=("LOCAL_RANK",),
            local_size=_LOCAL_SIZE,
            hint=_HINT,
        )
        for name in ("GROUP_RANK", "NODE_RANK", "CROSS_RANK"):
            self._agree(reader, fields, name, "node_rank", fields["node_rank"])
        self._agree(reader, fields, "CROSS_SIZE", "num_nodes", fields["num_nodes"])
        return fields

    def diagnose(
        self, spec: ResourceSpec, env: Mapping[str, str], present: Sequence[Detector]
    ) -> list[Finding]:
        """A whole rank set inside a task a scheduler started (``deepspeed`` under srun): the
        scheduler's task numbers win there, as for a ``RANK`` exported to every task, so
        where the two differ, say which clusterenv follows."""
        scheduler = next((d for d in present if d.source is spec.source), None)
        if scheduler is None or scheduler is self or not self.starts_ranks(env):
            return []
        said = (env["RANK"].strip(), env["WORLD_SIZE"].strip())
        if not scheduler.runs_task(env) or said == (str(spec.global_rank), str(spec.world_size)):
            return []
        launcher = scheduler.launcher or scheduler.name
        return [
            Finding(
                id="env.inside-task",
                message=f"RANK={shorten(said[0])!r} WORLD_SIZE={shorten(said[1])!r} are set in "
                f"{scheduler.name}'s task {spec.global_rank} of {spec.world_size}: clusterenv "
                f"follows {scheduler.name}, not a launcher that starts several ranks inside "
                "one task",
                fix=f"start one {launcher} task per rank without the inner launcher, or start "
                "the ranks with torchrun",
            )
        ]

    @staticmethod
    def _named_nodes(reader: EnvReader) -> Fields:
        """A set that names its node and node count (``GROUP_RANK``, ``GROUP_WORLD_SIZE``, as
        torchrun and `clusterenv env` export them): those are the launcher's own, and nodes
        need not run as many ranks each (``srun -N2 -n4`` placed 3 + 1)."""
        fields: Fields = {
            "role": Role.RANK,
            "num_nodes": reader.integer("num_nodes", "GROUP_WORLD_SIZE", hint=_HINT, minimum=1),
            "devices_per_node": reader.integer(
                "devices_per_node", *_LOCAL_SIZE, hint=_HINT, minimum=1
            ),
            "world_size": reader.integer("world_size", "WORLD_SIZE", hint=_HINT, minimum=1),
            "global_rank": reader.integer("global_rank", "RANK", hint=_HINT),
            "local_rank": reader.integer("local_rank", "LOCAL_RANK", hint=_HINT),
        }
        maximum = fields["num_nodes"] - 1
        fields["node_rank"] = reader.integer("node_rank", "GROUP_RANK", hint=_HINT, maximum=maximum)
        return fields

    @staticmethod
    def _agree(reader: EnvReader, fields: Fields, name: str, field: str, derived: int) -> None:
        """The launcher's own node index or node count, where it sets one (``name``), must
        be what the ranks per node give."""
        value = reader.env.get(name)
        if value is None or value.strip() == str(derived):
            return
        raise InconsistentEnvironmentError(
            f"{name}={shorten(value)!r} but rank {fields['global_rank']} of "
            f"{fields['world_size']} with {fields['devices_per_node']} per node gives "
            f"{field} {derived}",
            variables=(name, *reader.origins[field]),
            hint=_HINT,
        )


DETECTOR = EnvDetector()
