"""Geometry that several sources share: host files, ranks without nodes, one process per node."""

from __future__ import annotations

from collections.abc import Sequence

from clusterenv._core.reader import EnvReader
from clusterenv._core.spec import Role
from clusterenv.exceptions import InconsistentEnvironmentError
from clusterenv.sources._detector import Fields, Gpus

__all__ = ["job_script_fields", "node_fields", "rank_fields", "read_ranks", "standalone_fields"]


def job_script_fields(reader: EnvReader, slots: Sequence[str]) -> Fields:
    """The geometry a job script describes from its host file, one line per slot: what
    the launcher (mpirun, jsrun) should start, whose rank 0 runs on the first host.
    ``slots`` must not be empty."""
    hosts = tuple(dict.fromkeys(slots))
    for field in ("num_nodes", "devices_per_node", "world_size", "master_addr"):
        reader.derive(field, "hostnames")
    return {
        "role": Role.BATCH,
        "num_nodes": len(hosts),
        "devices_per_node": slots.count(hosts[0]),
        "world_size": len(slots),
        "global_rank": 0,
        "local_rank": 0,
        "node_rank": 0,
        "hostnames": hosts,
        "master_addr": hosts[0],
    }


def rank_fields(
    reader: EnvReader, world_size: int, rank: int, local_rank: int, local_size: int
) -> Fields:
    """The geometry of a rank whose launcher names no node, from the ranks per node.

    All ranks on one node where the world is the local size (Open MPI 5 numbers local ranks
    in binding order: ranks 0-3 get 0, 2, 1, 3). Otherwise assumes every node runs
    ``local_size`` ranks, placed by slot (node = rank // local size, the usual default) or
    round robin (node = rank % nodes); the local rank tells which.
    """
    for field in ("num_nodes", "node_rank"):
        reader.derive(field, "world_size", "devices_per_node", "global_rank", "local_rank")
    num_nodes, uneven = divmod(world_size, local_size)
    node_rank = None
    if world_size == local_size:  # one node, whatever order the local ranks are in
        node_rank = 0
    elif not uneven and rank % local_size == local_rank:
        node_rank = rank // local_size
    elif not uneven and rank // num_nodes == local_rank:
        node_rank = rank % num_nodes
    if node_rank is not None:
        return {
            "role": Role.RANK,
            "num_nodes": num_nodes,
            "devices_per_node": local_size,
            "world_size": world_size,
            "global_rank": rank,
            "local_rank": local_rank,
            "node_rank": node_rank,
        }
    names = reader.origins["num_nodes"]
    raise InconsistentEnvironmentError(
        f"cannot tell the node of rank {rank} ({reader.describe('num_nodes')}): the nodes do "
        "not run the same number of ranks, or the ranks are placed neither by slot nor round "
        "robin",
        variables=names,
        hint="start the same number of ranks on every node (e.g. mpirun --map-by "
        "ppr:N:node), or use a launcher that names the nodes (srun)",
    )


def read_ranks(
    reader: EnvReader,
    *,
    world: tuple[str, ...],
    rank: tuple[str, ...],
    local_rank: tuple[str, ...],
    local_size: tuple[str, ...],
    hint: str,
    world_hint: str | None = None,
    nodes: int = 0,
) -> Fields:
    """:func:`rank_fields` of a launcher that names ranks but no node, from the first set
    variable of each group (world size, rank, local rank, local size). With ``nodes`` (the
    hosts of a job's host file), a launch that sets no ``world`` variable is the local size
    on each of them (the world is derived from ``hostnames``)."""
    named = not nodes or reader.lookup(*world) is not None
    world_size = (
        reader.integer("world_size", *world, hint=world_hint or hint, minimum=1) if named else 0
    )
    global_rank = reader.integer("global_rank", *rank, hint=hint)
    local = reader.integer("local_rank", *local_rank, hint=hint)
    size = reader.integer("devices_per_node", *local_size, hint=hint, minimum=1)
    if not named:
        reader.derive("world_size", "devices_per_node", "hostnames")
        world_size = size * nodes
    return rank_fields(reader, world_size, global_rank, local, size)


def node_fields(reader: EnvReader, gpus: Gpus, nodes: int, node: int) -> Fields:
    """The geometry of the one process a platform starts on each node, of ``nodes`` (this
    one ``node``, read by the caller into ``num_nodes``/``node_rank``): one rank per GPU it
    sees, one without GPUs. With one, the process is that rank; with more, it is the
    ``node`` role, whose ranks torchrun or the framework starts, and a rank that the
    framework started from it (``LOCAL_RANK`` set, as Lightning sets it) is that rank."""
    per_node = max(1, gpus.count)
    reader.derive("devices_per_node", "visible_devices")
    reader.derive("world_size", "num_nodes", "devices_per_node")
    role, local = (Role.RANK, 0) if per_node == 1 else (Role.NODE, 0)
    if per_node > 1 and "LOCAL_RANK" in reader.env:
        hint = "the framework sets LOCAL_RANK in the ranks it starts on this node; unset it"
        local = reader.integer("local_rank", "LOCAL_RANK", hint=hint, maximum=per_node - 1)
        role = Role.RANK
    reader.derive("global_rank", "node_rank", "devices_per_node", "local_rank")
    return {
        "role": role,
        "num_nodes": nodes,
        "devices_per_node": per_node,
        "world_size": nodes * per_node,
        "global_rank": node * per_node + local,
        "local_rank": local,
        "node_rank": node,
    }


def standalone_fields(reader: EnvReader, gpus: Gpus) -> Fields:
    """The geometry of one process that owns its node alone, like a local run: one rank per
    GPU it sees (``gpus``), spawned by the framework; one without GPUs."""
    per_node = max(1, gpus.count)
    reader.derive("devices_per_node", "visible_devices")
    reader.derive("world_size", "visible_devices")
    return {
        "role": Role.STANDALONE,
        "num_nodes": 1,
        "devices_per_node": per_node,
        "world_size": per_node,
        "global_rank": 0,
        "local_rank": 0,
        "node_rank": 0,
    }
