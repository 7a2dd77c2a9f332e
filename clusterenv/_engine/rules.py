"""The rules every source shares, applied once after a source has read its scheduler's facts.

A source says what only its scheduler knows (:meth:`~clusterenv.sources.Detector.read`):
the geometry, the job id, its own candidate for the main address and port, its GPU and CPU
grant. Here, the same for every source: ``MASTER_ADDR``/``MASTER_PORT`` override what the
source says, a launch without a main address is the loopback address on one node and an
error on several, the port is derived from the job id, the GPU fields are the visible GPUs
where the source grants none, the CPUs are capped by the affinity mask, and the site's
main-address template applies.
"""

from __future__ import annotations

import re
import zlib

from clusterenv._core.reader import EnvReader
from clusterenv._core.safe import shorten
from clusterenv._core.spec import Fields
from clusterenv._node.cpu import CpuProbe, cpus_per_rank
from clusterenv._node.gpu import Gpus
from clusterenv.exceptions import InvalidVariableError, MissingVariableError
from clusterenv.sources import Detector

__all__ = ["DEFAULT_PORT", "MAIN_ADDR_TEMPLATE", "PORT_BASE", "PORT_SPAN", "complete", "job_port"]

#: A site's rule for the main address, e.g. ``{host}-ib``: schedulers name nodes by their
#: management network, where the ranks must meet on another one.
MAIN_ADDR_TEMPLATE = "CLUSTERENV_MAIN_ADDR_TEMPLATE"
#: The port of a launch that names neither ``MASTER_PORT`` nor a job (torchrun's default).
DEFAULT_PORT = 29500
PORT_BASE = 20000
PORT_SPAN = 12000

_LEADING_NUMBER = re.compile(r"\s*([0-9]{1,18})")


def complete(
    reader: EnvReader, detector: Detector, fields: Fields, gpus: Gpus, cpu_probe: CpuProbe
) -> Fields:
    """``fields`` as ``detector`` read them, with the shared rules applied."""
    if "gpus_per_node" not in fields:
        fields.update(gpus())
    fields["source"] = detector.source
    fields["master_addr"] = _main_address(reader, detector, fields)
    fields["master_port"] = _main_port(reader, detector, fields)
    fields["cpus_per_rank"] = cpus_per_rank(reader, fields, cpu_probe)
    return fields


def job_port(job_id: str, *, whole: bool = False) -> int:
    """The main port of a job that sets no ``MASTER_PORT``, the same in all its ranks.

    ``PORT_BASE`` + the id's leading number (``4242``, ``4242.pbs01``) % ``PORT_SPAN``: any
    ``PORT_SPAN`` consecutive jobs, i.e. those that can share a node at one time, get
    distinct ports, all below Linux's ephemeral range (32768-60999) that outgoing
    connections draw from. Ids without a number (Flux's ``ƒ2Xb8GNp3``, PMIx namespaces)
    are spread by their CRC-32 instead, as are ``whole`` ids: the tasks of an array job,
    which share the number and run at once (Grid Engine's ``4242.3``).
    """
    match = None if whole else _LEADING_NUMBER.match(job_id)
    number = int(match.group(1)) if match else zlib.crc32(job_id.encode())
    return PORT_BASE + number % PORT_SPAN


def _main_address(reader: EnvReader, detector: Detector, fields: Fields) -> str:
    """``MASTER_ADDR``, else the source's own; else the loopback address on one node."""
    address = reader.optional("master_addr", "MASTER_ADDR") or detector.main_address(reader, fields)
    if address is None and detector.exports_main:  # its launcher always sets it
        address = reader.text("master_addr", "MASTER_ADDR", hint=detector.hints.main)
    if address is None and fields["num_nodes"] > 1:
        raise MissingVariableError(
            f"a launch over {fields['num_nodes']} nodes that names no main address: "
            "MASTER_ADDR is not set",
            variables=("MASTER_ADDR",),
            hint=detector.hints.main,
        )
    address = _site_main_address(reader, address or "127.0.0.1")
    _check_main_address(reader, address)
    return address


def _main_port(reader: EnvReader, detector: Detector, fields: Fields) -> int:
    """``MASTER_PORT``, else the source's own, else derived from the job id, else the
    default; a launcher that always exports it (:attr:`Detector.exports_main`) must have."""
    hint = detector.hints.main if detector.exports_main else "export MASTER_PORT as a free TCP port"
    own = fields.get("master_port")
    if "MASTER_PORT" in reader.env or (detector.exports_main and own is None):
        return reader.integer("master_port", "MASTER_PORT", hint=hint, minimum=1, maximum=65535)
    if own is not None:  # its origin is the source's
        return own
    reader.derive("master_port", "job_id")
    seed, job = fields.pop("port_seed", None), fields.get("job_id")
    if seed is not None:
        return job_port(seed, whole=True)
    return DEFAULT_PORT if job is None else job_port(job)


_NAME = "[A-Za-z0-9_.-]"  # a character of a host name
_ADDRESS = re.compile(rf"{_NAME}+|\[?[0-9A-Fa-f:.]+\]?")


def _check_main_address(reader: EnvReader, address: str) -> None:
    """A host name or an IP address: ``cn001:29500`` (a port) or a space is a mistake."""
    if _ADDRESS.fullmatch(address) and not re.fullmatch(r"[^:]+:[0-9]+", address):
        return
    names = reader.origins.get("master_addr", ("MASTER_ADDR",))
    port = address.rpartition(":")[2]
    hint = (
        f"set {names[0]} to the host alone and MASTER_PORT={port}"
        if ":" in address and port.isdigit()
        else f"set {names[0]} to a host name or IP address of rank 0's node"
    )
    raise InvalidVariableError(
        f"{names[0]}={shorten(address)!r} is not a host name or IP address",
        variables=names,
        hint=hint,
    )


_HOST_NAME = re.compile(f"{_NAME}*")
#: An IPv4 or IPv6 literal, told from a name without the ipaddress module's import cost.
_LITERAL = re.compile(r"[0-9.]+|.*:.*")


def _site_main_address(reader: EnvReader, address: str) -> str:
    """The main address by the site's :data:`MAIN_ADDR_TEMPLATE`, where it is a node name a
    scheduler gave: never an address, nor a ``MASTER_ADDR`` someone chose."""
    template = reader.env.get(MAIN_ADDR_TEMPLATE, "").strip()
    origin = reader.origins.get("master_addr", ("MASTER_ADDR",))
    if not template or origin[:1] == ("MASTER_ADDR",) or _LITERAL.fullmatch(address):
        return address
    before, host, after = template.partition("{host}")
    if not host or not _HOST_NAME.fullmatch(before + after):
        raise InvalidVariableError(
            f"{MAIN_ADDR_TEMPLATE}={shorten(template)!r} is not a host name around {{host}}",
            variables=(MAIN_ADDR_TEMPLATE,),
            hint="write the name of rank 0's node on the ranks' network with {host} for the "
            "scheduler's node name, e.g. {host}-ib or {host}.hsn.example.org",
        )
    reader.origins["master_addr"] = (*origin, MAIN_ADDR_TEMPLATE)
    return before + address + after
