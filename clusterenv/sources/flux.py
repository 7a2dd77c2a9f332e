"""Flux: a task of ``flux run`` / ``flux submit`` (``FLUX_TASK_RANK`` set), or the body of
``flux batch`` / ``flux alloc`` (``FLUX_ENCLOSING_ID``: one process on the job's first node,
in the job's own Flux instance).

Flux names the task counts (``FLUX_JOB_SIZE``, ``FLUX_JOB_NNODES``) but neither the node of
a task nor any host name. Flux itself knows, and answers in every task (measured,
../shared/notes/flux.md): ``flux job taskmap JOBID`` (RFC 34: blocks ``[first node, nodes,
tasks per node, repeat]``) gives each rank's node, ``flux job taskmap --hostname=0 JOBID``
rank 0's host; in a body, ``flux resource list`` what the instance holds. Those commands are
asked through the injectable, bounded asker (:mod:`clusterenv._core.ask`); where none answers, a
task's node is derived from its local id (by slot or round robin) or refused.
"""

from __future__ import annotations

from collections.abc import Mapping

from clusterenv._core.reader import EnvReader, parse_json
from clusterenv._core.safe import shorten
from clusterenv._core.spec import Role, Source
from clusterenv.exceptions import InconsistentEnvironmentError, InvalidVariableError
from clusterenv.hostlist import expand_hostlist
from clusterenv.sources._detector import Detector, Fields, Gpus, Hints, Kind, Roles
from clusterenv.sources._geometry import rank_fields

__all__ = ["DETECTOR", "FluxDetector"]

_HINT = "Flux sets this in every task; start the ranks with flux run"
_RESOURCES = ("flux", "resource", "list", "-s", "all", "-no", "{nnodes} {ngpus} {nodelist}")


class FluxDetector(Detector):
    source = Source.FLUX
    kind = Kind.SCHEDULER
    name = "Flux"
    reason = (
        "FLUX_JOB_ID and FLUX_TASK_RANK are set: a Flux task (FLUX_ENCLOSING_ID alone: the "
        "body of flux batch / flux alloc)"
    )
    proof = (
        "live: flux-core 0.88.0 (built from source, in a chroot; a test instance of 4 brokers "
        "on one machine): `flux run` over 1, 2 and 4 nodes (with and without `MASTER_ADDR`), "
        "`--tasks-per-node`, `--taskmap=cyclic` over 2 and 3 nodes, a manual taskmap, "
        "`flux submit`, `-o pmi=pmi2`, the bodies of `flux batch` and `flux alloc`; and an "
        "instance bootstrapped by Slurm (`srun -N3 --mpi=pmi2 flux start`) across three "
        "emulated hosts, `flux run -N3 -n6` without `MASTER_ADDR`; each task against `flux job "
        "taskmap`. `cray-pals`: flux-coral2's plugin, documented"
    )
    roles = Roles(
        rank="a task of Flux job{job}",
        batch="the body of Flux job{job} (flux batch / flux alloc), on its first node",
    )
    variables = ("FLUX_",)
    launch_keys = ("FLUX_JOB_ID",)
    launcher = "flux run"
    version_command = ("flux", "version")  # "commands:    0.62.0"
    hints = Hints(
        num_nodes="change flux run -N",
        devices="change flux run --tasks-per-node",
        uneven="flux run -N NODES --tasks-per-node N",
        main="export MASTER_ADDR as rank 0's host, which Flux tells every task: flux run ... "
        "sh -c 'MASTER_ADDR=$(flux job taskmap --hostname=0 $FLUX_JOB_ID) exec python train.py'",
    )

    def present(self, env: Mapping[str, str]) -> bool:
        return self.runs_task(env) or "FLUX_ENCLOSING_ID" in env

    def runs_task(self, env: Mapping[str, str]) -> bool:
        # Its cray-pals and PMI plugins set PALS_*, PMI_RANK in a task: those are Flux's.
        return "FLUX_JOB_ID" in env and "FLUX_TASK_RANK" in env

    def main_address(self, reader: EnvReader, fields: Fields) -> str | None:
        """Rank 0's host, as Flux answers it (only where MASTER_ADDR is not set)."""
        if fields["role"] is not Role.RANK or fields["num_nodes"] < 2:
            return fields.get("master_addr")
        command = ("flux", "job", "taskmap", "--hostname=0", str(fields["job_id"]))
        host = reader.answer("master_addr", command)
        return host.split()[0] if host and host.split() else None

    def read(self, reader: EnvReader, gpus: Gpus) -> Fields:
        if not self.runs_task(reader.env):
            return _body(reader)

        def integer(field: str, name: str, minimum: int = 0) -> int:
            return reader.integer(field, name, hint=_HINT, minimum=minimum)

        job_id = reader.text("job_id", "FLUX_JOB_ID", hint=_HINT)
        world_size = integer("world_size", "FLUX_JOB_SIZE", minimum=1)
        nodes = integer("num_nodes", "FLUX_JOB_NNODES", minimum=1)
        rank = integer("global_rank", "FLUX_TASK_RANK")
        local_rank = integer("local_rank", "FLUX_TASK_LOCAL_ID")
        taskmap = None
        if nodes > 1:
            taskmap = reader.answer("node_rank", ("flux", "job", "taskmap", job_id))
        if taskmap is not None:
            node, here = _place(taskmap, rank, world_size, nodes)
            reader.derive("devices_per_node", "node_rank")
            return {
                "role": Role.RANK,
                "num_nodes": nodes,
                "devices_per_node": here,
                "world_size": world_size,
                "global_rank": rank,
                "local_rank": local_rank,
                "node_rank": node,
                "job_id": job_id,
            }
        per_node, uneven = divmod(world_size, nodes)
        if uneven or not per_node:
            raise InconsistentEnvironmentError(
                f"FLUX_JOB_SIZE={world_size} tasks do not divide evenly over "
                f"FLUX_JOB_NNODES={nodes} nodes, and Flux did not answer `flux job taskmap`",
                variables=("FLUX_JOB_SIZE", "FLUX_JOB_NNODES"),
                hint="run where the flux command works, or start the same number of tasks on "
                "every node: flux run -N NODES --tasks-per-node N",
            )
        reader.note("devices_per_node", "FLUX_JOB_SIZE", "FLUX_JOB_NNODES")
        return {**rank_fields(reader, world_size, rank, local_rank, per_node), "job_id": job_id}


def _place(taskmap: str, rank: int, world_size: int, nodes: int) -> tuple[int, int]:
    """The node of ``rank`` and the tasks on it, from an RFC 34 taskmap: blocks ``[first
    node, nodes, tasks per node, repeat]`` in rank order. Linear in the blocks, whatever
    counts they claim."""
    hint = "this is what `flux job taskmap JOBID` prints; run it in the task to compare"
    blocks = parse_json("flux job taskmap", taskmap, hint=hint)
    if not isinstance(blocks, list) or not all(_block(block) for block in blocks):
        raise InvalidVariableError(
            f"`flux job taskmap` answered {taskmap[:80]!r}, not a list of [node, nodes, "
            "tasks per node, repeat] blocks",
            hint=hint,
        )
    total = sum(count * per * repeat for _, count, per, repeat in blocks)
    highest = max((first + count for first, count, _, _ in blocks), default=0)
    if total != world_size or highest > nodes:
        raise InconsistentEnvironmentError(
            f"`flux job taskmap` places {total} tasks on {highest} nodes, the task's variables "
            f"say FLUX_JOB_SIZE={world_size} on FLUX_JOB_NNODES={nodes}",
            variables=("FLUX_JOB_SIZE", "FLUX_JOB_NNODES"),
            hint=hint,
        )
    offset, node = 0, -1
    for first, count, per, repeat in blocks:
        size = count * per * repeat
        if node < 0 and rank < offset + size:
            node = first + (rank - offset) // per % count
        offset += size
    here = sum(
        per * repeat for first, count, per, repeat in blocks if first <= node < first + count
    )
    return node, here


def _block(block: object) -> bool:
    return (
        isinstance(block, list)
        and len(block) == 4
        and all(type(item) is int for item in block)
        and block[0] >= 0
        and min(block[1:]) >= 1
    )


def _body(reader: EnvReader) -> Fields:
    """The body of flux batch / flux alloc: the job's instance, as Flux lists it."""
    job_id = reader.text("job_id", "FLUX_ENCLOSING_ID", hint="Flux sets it in a job's body")
    listed = reader.answer("num_nodes", _RESOURCES)
    words = (listed or "").split()
    if len(words) != 3 or not words[0].isdigit() or not words[1].isdigit():
        raise InconsistentEnvironmentError(
            f"FLUX_ENCLOSING_ID={shorten(job_id)!r}: the body of a Flux job, but its instance "
            f"did not say what it holds (`{' '.join(_RESOURCES)}` answered "
            f"{shorten(listed or '')!r})",
            variables=("FLUX_ENCLOSING_ID",),
            hint="run where the flux command works (FLUX_URI set), or start the ranks with "
            "flux run and ask there",
        )
    nodes, gpus, hosts = max(1, int(words[0])), int(words[1]), expand_hostlist(words[2])
    for field in ("devices_per_node", "world_size", "master_addr", "hostnames"):
        reader.derive(field, "num_nodes")
    per_node = max(1, gpus // nodes)  # one rank per GPU, else one per node
    fields: Fields = {
        "role": Role.BATCH,
        "num_nodes": nodes,
        "devices_per_node": per_node,
        "world_size": nodes * per_node,
        "global_rank": 0,
        "local_rank": 0,
        "node_rank": 0,
        "job_id": job_id,
        "master_addr": hosts[0],  # the body runs on the job's first node
    }
    if len(set(hosts)) == nodes == len(hosts):  # a test instance names one host N times
        fields["hostnames"] = tuple(hosts)
    return fields


DETECTOR = FluxDetector()
