"""What the probe's ranks say to each other: small versioned JSON lines, validated on both
ends, and a per-launch key that strangers on the network do not have.

Every message is one line of at most ``MAX_MESSAGE`` bytes: a ``Hello`` from each rank, and
from rank 0 a ``Verdict`` or a ``Retry`` (come back later: rank 0 holds fewer connections
than there are ranks). The key is a SHA-256 over what every rank of one launch shares: the
source, the probe's port, and launcher values that are the same in every rank but not shown
to other users (the srun step's own port, torchrun's run id, Open
MPI's per-job transport key; ``CLUSTERENV_PROBE_KEY`` adds a secret of your own). It never
travels: a hello carries an HMAC of the rank's nonce under it, a verdict an HMAC of that
nonce and its content, so a stranger can neither pass for a rank nor forge a verdict.

It keeps out port scanners, strays and other jobs' probes. It is not authentication
against someone who can read the job's environment (the job's own user, root), and nothing
is encrypted.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import sys
from collections.abc import Mapping
from typing import Annotated, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from clusterenv._core.spec import ResourceSpec
from clusterenv._engine.detect import launch_facts

__all__ = [
    "MAX_MESSAGE",
    "MAX_PROBLEM",
    "MAX_PROBLEMS",
    "VERSION",
    "Hello",
    "Retry",
    "Said",
    "Verdict",
    "decode",
    "encode",
    "equal",
    "hello_proof",
    "launch_key",
    "new_nonce",
    "said",
    "verdict_proof",
]

VERSION: Literal[1] = 1
MAX_MESSAGE = 8192
#: A verdict lists at most this many problems, each cut to MAX_PROBLEM characters, as
#: many as fit in one message.
MAX_PROBLEMS = 20
MAX_PROBLEM = 600

_Index = Annotated[int, Field(ge=0, le=10**9)]
_Count = Annotated[int, Field(ge=1, le=10**9)]
_Short = Annotated[str, Field(max_length=256)]


class _Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    v: Literal[1] = VERSION


class Hello(_Message):
    """A rank introduces itself: what it believes about the launch, and its proof."""

    kind: Literal["hello"] = "hello"
    nonce: Annotated[str, Field(min_length=16, max_length=64)]
    proof: Annotated[str, Field(min_length=64, max_length=64)]
    rank: _Index
    world_size: _Count
    num_nodes: _Count
    node_rank: _Index
    local_rank: _Index
    devices_per_node: _Count
    master_addr: _Short
    master_port: Annotated[int, Field(ge=1, le=65535)]
    job_id: _Short | None
    host: _Short
    gpus: Annotated[list[_Short], Field(max_length=64)]
    #: Rank 0's address as this rank resolved the main address, and the local address and
    #: interface it reaches it from.
    reached: _Short | None = None
    via: _Short | None = None
    interface: _Short | None = None
    #: Its host name resolves only to loopback (what gloo and NCCL bind to by default).
    name_is_loopback: bool = False
    #: GLOO_SOCKET_IFNAME or NCCL_SOCKET_IFNAME is set: the backends' interface is chosen.
    interface_chosen: bool = False


class Said(NamedTuple):
    """What rank 0 keeps of a hello once its proof is checked: its claims, with the strings
    every rank repeats shared (interned). A fifth of the model's memory, so that rank 0
    keeps 100 000 ranks in well under 256 MiB."""

    rank: int
    world_size: int
    num_nodes: int
    node_rank: int
    local_rank: int
    devices_per_node: int
    master_addr: str
    master_port: int
    job_id: str | None
    host: str
    gpus: tuple[str, ...]
    reached: str | None = None
    via: str | None = None
    interface: str | None = None
    name_is_loopback: bool = False
    interface_chosen: bool = False


def said(hello: Hello) -> Said:
    intern = sys.intern
    return Said(
        hello.rank,
        hello.world_size,
        hello.num_nodes,
        hello.node_rank,
        hello.local_rank,
        hello.devices_per_node,
        intern(hello.master_addr),
        hello.master_port,
        None if hello.job_id is None else intern(hello.job_id),
        intern(hello.host),
        tuple(map(intern, hello.gpus)),
        None if hello.reached is None else intern(hello.reached),
        hello.via,
        None if hello.interface is None else intern(hello.interface),
        hello.name_is_loopback,
        hello.interface_chosen,
    )


class Verdict(_Message):
    kind: Literal["verdict"] = "verdict"
    ok: bool
    problems: Annotated[
        list[Annotated[str, Field(max_length=MAX_PROBLEM)]], Field(max_length=MAX_PROBLEMS)
    ]
    proof: Annotated[str, Field(min_length=64, max_length=64)]


class Retry(_Message):
    """Rank 0 recorded the hello but holds too many connections: ask again after ``after`` s."""

    kind: Literal["retry"] = "retry"
    after: Annotated[float, Field(gt=0, le=60)]


def launch_key(spec: ResourceSpec, env: Mapping[str, str], port: int) -> bytes:
    """The key every rank of this launch computes alike (see the module docstring)."""
    shared = [
        str(VERSION),
        spec.source.value,
        # Not the world size, job id or main address: ranks that disagree on them are
        # still ranks of this launch, and the verdict must say so (checks.disagreements).
        str(port),
        *(f"{name}={env.get(name, '')}" for name in launch_facts(spec).launch_keys),
        env.get("CLUSTERENV_PROBE_KEY", ""),
    ]
    return hashlib.sha256("\0".join(shared).encode()).digest()


def new_nonce() -> str:
    return secrets.token_hex(16)


def _mac(key: bytes, *parts: str) -> str:
    return hmac.new(key, "\0".join(parts).encode(), hashlib.sha256).hexdigest()


def hello_proof(key: bytes, nonce: str, rank: int) -> str:
    return _mac(key, "hello", nonce, str(rank))


def verdict_proof(key: bytes, nonce: str, ok: bool, problems: list[str]) -> str:
    return _mac(key, "verdict", nonce, json.dumps([ok, problems]))


def encode(message: _Message) -> bytes:
    return message.model_dump_json().encode() + b"\n"


def decode(line: bytes, kinds: tuple[type[_Message], ...]) -> _Message | None:
    """The message in ``line`` if it is one of ``kinds``, valid and within bounds; else None.
    pydantic parses and validates in one pass (its parser bounds nesting and refuses
    invalid UTF-8); each kind's ``kind`` literal tells them apart."""
    if len(line) > MAX_MESSAGE:
        return None
    for kind in kinds:
        try:
            return kind.model_validate_json(line)
        except ValidationError:
            continue
    return None


def equal(proof: str, expected: str) -> bool:
    return hmac.compare_digest(proof.encode(), expected.encode())
