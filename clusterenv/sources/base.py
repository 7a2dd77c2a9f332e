"""The interface every source implements, and the reader they all parse variables with."""

from __future__ import annotations

import re
import zlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from clusterenv._spec import Role, Source
from clusterenv.exceptions import (
    InconsistentEnvironmentError,
    InvalidVariableError,
    MissingVariableError,
)

__all__ = [
    "PORT_BASE",
    "PORT_SPAN",
    "Detector",
    "EnvReader",
    "FileReader",
    "GpuProbe",
    "job_port",
    "job_script_fields",
    "main_address",
    "parse_integer",
    "rank_fields",
    "read_text_file",
    "slot_hosts",
]

#: Returns the CUDA device ids this machine shows when ``CUDA_VISIBLE_DEVICES`` is unset.
GpuProbe = Callable[[], Sequence[str]]
#: Returns the text of a file named by a variable (a hostfile); raises ``OSError``.
FileReader = Callable[[str], str]


def read_text_file(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as file:
        return file.read()


_UNSIGNED = re.compile(r"[0-9]+")
_LEADING_NUMBER = re.compile(r"\s*([0-9]+)")

PORT_BASE = 20000
PORT_SPAN = 12000


def job_port(job_id: str) -> int:
    """The main port of a job that sets no ``MASTER_PORT``, the same in all its ranks.

    ``PORT_BASE`` + the id's leading number (``4242``, ``4242.pbs01``) % ``PORT_SPAN``: any
    ``PORT_SPAN`` consecutive jobs, i.e. those that can share a node at one time, get
    distinct ports, all below Linux's ephemeral range (32768-60999) that outgoing
    connections draw from. Ids without a number (Flux's ``ƒ2Xb8GNp3``, PMIx namespaces)
    are spread by their CRC-32 instead.
    """
    match = _LEADING_NUMBER.match(job_id)
    number = int(match.group(1)) if match else zlib.crc32(job_id.encode())
    return PORT_BASE + number % PORT_SPAN


class EnvReader:
    """Reads one environment mapping and records which variables each field came from.

    The record (``origins``: field -> variable names) goes into validation errors and
    tells a user *why* clusterenv believes what it reports.
    """

    def __init__(self, env: Mapping[str, str], read_file: FileReader = read_text_file) -> None:
        self.env = env
        self.origins: dict[str, tuple[str, ...]] = {}
        self._read_file = read_file

    def file(self, field: str, name: str, *, hint: str) -> str:
        """The text of the file that variable ``name`` names (e.g. a hostfile)."""
        path = self.text(field, name, hint=hint)
        try:
            return self._read_file(path)
        except OSError as error:
            raise InvalidVariableError(
                f"{name}={path!r} cannot be read ({error.strerror or error})",
                variables=(name,),
                hint=f"{hint}; the file must be readable on this node",
            ) from None

    def lookup(self, *names: str) -> tuple[str, str] | None:
        """``(name, value)`` of the first of ``names`` that is set, else ``None``."""
        for name in names:
            value = self.env.get(name)
            if value is not None:
                return name, value
        return None

    def note(self, field: str, *names: str) -> None:
        """Record that ``field`` was derived from the variables ``names`` (those set)."""
        used = tuple(name for name in names if name in self.env)
        if used:
            self.origins[field] = used

    def describe(self, field: str) -> str:
        """``"VAR='value', ..."`` for the variables ``field`` came from ('' if none)."""
        return ", ".join(f"{name}={self.env[name]!r}" for name in self.origins.get(field, ()))

    def optional(self, field: str, *names: str) -> str | None:
        """The first of ``names`` that is set, stripped, if it is non-empty; else ``None``."""
        found = self.lookup(*names)
        if found is None or not found[1].strip():
            return None
        self.note(field, found[0])
        return found[1].strip()

    def text(self, field: str, *names: str, hint: str) -> str:
        """The first of ``names`` that is set and non-empty; ``MissingVariableError`` if none."""
        value = self.optional(field, *names)
        if value is None:
            found = self.lookup(*names)
            shown = found[0] + "=''" if found else " or ".join(names) + " (not set)"
            raise MissingVariableError(f"{field} needs {shown}", variables=names, hint=hint)
        return value

    def integer(
        self,
        field: str,
        *names: str,
        hint: str,
        default: int | None = None,
        minimum: int = 0,
        maximum: int | None = None,
    ) -> int:
        """A decimal integer in ``[minimum, maximum]`` from the first of ``names`` that is set."""
        found = self.lookup(*names)
        if found is None:
            if default is not None:
                return default
            raise MissingVariableError(
                f"{field} needs {' or '.join(names)}, which is not set", variables=names, hint=hint
            )
        name, value = found
        self.note(field, name)
        return parse_integer(name, value, hint=hint, minimum=minimum, maximum=maximum)

    def port(self, default: int | None, hint: str) -> int:
        """``MASTER_PORT`` as a TCP port; ``default`` when unset (``None``: required)."""
        return self.integer(
            "master_port", "MASTER_PORT", hint=hint, default=default, minimum=1, maximum=65535
        )


def parse_integer(
    name: str, value: str, *, hint: str, minimum: int = 0, maximum: int | None = None
) -> int:
    """Parse ``value`` of variable ``name`` as an ASCII decimal in ``[minimum, maximum]``."""
    text = value.strip()
    if _UNSIGNED.fullmatch(text):
        number = int(text)
        if number >= minimum and (maximum is None or number <= maximum):
            return number
    bounds = f">= {minimum}" if maximum is None else f"between {minimum} and {maximum}"
    raise InvalidVariableError(
        f"{name}={value!r} is not an integer {bounds}", variables=(name,), hint=hint
    )


def slot_hosts(text: str) -> list[str]:
    """The host of each line of a hostfile: one line per slot, so hosts repeat."""
    return [line.split()[0] for line in text.splitlines() if line.strip()]


def main_address(reader: EnvReader, num_nodes: int, example: str) -> str:
    """``MASTER_ADDR``; without it the loopback address on one node, else an error."""
    master_addr = reader.optional("master_addr", "MASTER_ADDR")
    if master_addr is not None:
        return master_addr
    if num_nodes > 1:
        raise MissingVariableError(
            f"a launch over {num_nodes} nodes that names no main address: MASTER_ADDR is not set",
            variables=("MASTER_ADDR",),
            hint=f"export MASTER_ADDR as the host of rank 0 to every rank, e.g. {example}",
        )
    return "127.0.0.1"


def job_script_fields(reader: EnvReader, slots: Sequence[str]) -> dict[str, Any]:
    """The geometry a job script describes from its host file, one line per slot: what
    the launcher (mpirun, jsrun) should start. ``slots`` must not be empty."""
    hosts = tuple(dict.fromkeys(slots))
    for field in ("num_nodes", "devices_per_node", "world_size"):
        reader.origins[field] = reader.origins["hostnames"]
    return {
        "role": Role.BATCH,
        "num_nodes": len(hosts),
        "devices_per_node": slots.count(hosts[0]),
        "world_size": len(slots),
        "global_rank": 0,
        "local_rank": 0,
        "node_rank": 0,
        "hostnames": hosts,
    }


def rank_fields(
    reader: EnvReader, world_size: int, rank: int, local_rank: int, local_size: int
) -> dict[str, Any]:
    """The geometry of a rank whose launcher names no node, from the ranks per node.

    Assumes every node runs ``local_size`` ranks, placed by slot (node = rank // local size,
    the usual default) or round robin (node = rank % nodes); the local rank tells which.
    """
    names = (*reader.origins["world_size"], *reader.origins["devices_per_node"])
    names += reader.origins["global_rank"] + reader.origins["local_rank"]
    reader.origins["num_nodes"] = reader.origins["node_rank"] = names
    num_nodes, uneven = divmod(world_size, local_size)
    node_rank = None
    if not uneven and rank % local_size == local_rank:
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
    shown = ", ".join(f"{name}={reader.env[name]!r}" for name in names)
    raise InconsistentEnvironmentError(
        f"cannot tell the node of rank {rank} ({shown}): the nodes do not run the same "
        "number of ranks, or the ranks are placed neither by slot nor round robin",
        variables=names,
        hint="start the same number of ranks on every node (e.g. mpirun --map-by "
        "ppr:N:node), or use a launcher that names the nodes (srun)",
    )


class Detector(ABC):
    """One scheduler or launcher. Subclasses are listed, in priority order, in ``_detect``."""

    source: ClassVar[Source]
    reason: ClassVar[str]  # why this source was chosen, in words, for `clusterenv inspect`

    @abstractmethod
    def present(self, env: Mapping[str, str]) -> bool:
        """Whether ``env`` comes from this source (cheap; no parsing, no errors)."""

    @abstractmethod
    def read(self, reader: EnvReader, gpu_probe: GpuProbe) -> dict[str, Any]:
        """The ``ResourceSpec`` fields; raises ``ClusterEnvError`` for bad or missing values."""
