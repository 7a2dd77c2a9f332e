"""What every framework adapter needs from a spec, torch-free: the ``env://`` variables of
this rank, the torchrun arguments of this node, the GPUs this process drives, and where a
rendezvous of its own may listen. Used by ``clusterenv env``, :mod:`clusterenv.torch` and
:mod:`clusterenv.jax`."""

from __future__ import annotations

import math
from collections.abc import Mapping

from clusterenv._core.safe import shorten
from clusterenv._core.spec import Accelerator, ResourceSpec, Role
from clusterenv._engine.detect import launch_facts
from clusterenv._node.gpu import VENDOR_VARIABLES
from clusterenv.exceptions import ClusterEnvError, InconsistentEnvironmentError

__all__ = [
    "DEFAULT_TIMEOUT",
    "MAX_TIMEOUT",
    "device_indices",
    "endpoint",
    "env_variables",
    "launcher_for",
    "listen_port",
    "processes",
    "torchrun_arguments",
    "valid_timeout",
]


def endpoint(host: str, port: int) -> str:
    """``host:port``, an IPv6 address in brackets (``[::1]:29500``)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def launcher_for(spec: ResourceSpec) -> str:
    """The command that starts the ranks, for a process that is not one: the scheduler's
    own (``srun``), else torchrun (a workstation has no scheduler to name)."""
    return launch_facts(spec).launcher or "torchrun --nproc_per_node=N"


def listen_port(spec: ResourceSpec) -> int:
    """Where a rendezvous of clusterenv's own (the probe, JAX's coordinator) listens: the
    main port, or the next one where the launcher holds it (torchrun's agent store)."""
    if not launch_facts(spec).holds_main_port:
        return spec.master_port
    return spec.master_port + 1 if spec.master_port < 65535 else spec.master_port - 1


#: How long a rendezvous of clusterenv's own (the probe) waits by default, and at most: a
#: day (beyond it no launch waits, and socket timeouts overflow).
DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 86400.0


def valid_timeout(timeout: object) -> bool:
    """A finite number of seconds above 0 and at most ``MAX_TIMEOUT`` (``nan`` would never
    end; ``1e300`` overflows the sockets' timeouts)."""
    return (
        isinstance(timeout, int | float) and math.isfinite(timeout) and 0 < timeout <= MAX_TIMEOUT
    )


def _one_process(spec: ResourceSpec) -> bool:
    """A process that is the whole launch: a plain run of one device."""
    return spec.role is Role.STANDALONE and spec.world_size == 1


def _not_a_rank(spec: ResourceSpec, what: str) -> ClusterEnvError:
    launcher = launcher_for(spec)
    if spec.role is Role.SHELL:
        fix = f"run it in the ranks: `{launcher} ...`"
    elif spec.role is Role.STANDALONE:
        fix = f"start the ranks with `torchrun --nproc-per-node={spec.devices_per_node}`"
    elif spec.num_nodes > 1 and what.startswith("torchrun"):
        fix = (
            f"start one task per node with {launcher} and ask there: "
            f"{launcher} ... sh -c 'torchrun $(clusterenv env --format torchrun) train.py'"
        )
    else:
        fix = f"start the ranks first (`{launcher} ...`), or use `clusterenv env --format torchrun`"
    return ClusterEnvError(
        f"this process is not one rank of a launch (role {spec.role.value}, "
        f"{spec.world_size} rank(s) to start), so it has no {what}",
        hint=fix,
    )


def env_variables(spec: ResourceSpec, env: Mapping[str, str]) -> dict[str, str]:
    """torch.distributed's ``env://`` set for this rank, with the vendor's visible-devices
    variable where ``env`` sets it. Refuses a process that is not a rank, and any value that
    contradicts what ``env`` already holds (a launcher's own variables are never
    overwritten): both values are named."""
    if spec.role is not Role.RANK and not _one_process(spec):
        raise _not_a_rank(spec, "env:// variables")
    values = {
        "RANK": spec.global_rank,
        "WORLD_SIZE": spec.world_size,
        "LOCAL_RANK": spec.local_rank,
        "LOCAL_WORLD_SIZE": spec.devices_per_node,
        "NODE_RANK": spec.node_rank,
        "GROUP_RANK": spec.node_rank,
        # torchrun's node count: with it the set describes an uneven launch (3 + 1) too.
        "GROUP_WORLD_SIZE": spec.num_nodes,
        "MASTER_ADDR": spec.master_addr,
        "MASTER_PORT": spec.master_port,
    }
    exported = {name: str(value) for name, value in values.items()}
    if spec.gpu_vendor is not None:
        visible = VENDOR_VARIABLES[spec.gpu_vendor][0]
        if visible in env:
            exported[visible] = ",".join(spec.visible_devices)
    clashes = [name for name, value in exported.items() if env.get(name, value) != value]
    if clashes:
        said = ", ".join(
            f"{name}={shorten(env[name])!r} (the spec says {exported[name]!r})" for name in clashes
        )
        raise InconsistentEnvironmentError(
            f"this process already has {said}",
            variables=tuple(clashes),
            hint="unset the stale variables (a parent launcher's, or Lightning's NODE_RANK), or "
            "run `clusterenv inspect` to see which source decided",
        )
    return exported


def torchrun_arguments(spec: ResourceSpec) -> list[str]:
    """torchrun's options that start this node's ranks: a ``node`` process, a one-node batch
    step, a plain machine, or one task per node of a launch (whose GPUs the ranks share)."""
    if spec.role is Role.STANDALONE:
        return ["--standalone", f"--nproc-per-node={spec.devices_per_node}"]
    if spec.role is Role.SHELL or (spec.role is Role.BATCH and spec.num_nodes > 1):
        raise _not_a_rank(spec, "torchrun's arguments for this node")
    per_node = spec.devices_per_node
    if spec.role in (Role.RANK, Role.BATCH) and spec.devices_per_node == 1:
        # One task per node (or a job script of one task): torchrun fans out over its GPUs.
        per_node = max(1, len(spec.visible_devices))
    elif spec.role is Role.RANK:
        launch = launch_facts(spec)
        fix = (
            "torchrun started this rank already: run the training script itself here"
            if launch.holds_main_port
            else f"start one task per node ({launch.hints.devices}, with one), then torchrun "
            "in each"
        )
        raise ClusterEnvError(
            f"this process is already one of {spec.devices_per_node} ranks on its node: a "
            "torchrun here would start ranks of ranks",
            hint=fix,
        )
    return [
        f"--nnodes={spec.num_nodes}",
        f"--nproc-per-node={per_node}",
        f"--node-rank={spec.node_rank}",
        f"--master-addr={spec.master_addr}",
        f"--master-port={spec.master_port}",
    ]


def processes(spec: ResourceSpec) -> tuple[int, int]:
    """(number of processes, this one's index) of a framework that runs one process per rank,
    or per node on a ``node`` process (JAX's usual layout)."""
    if spec.role is Role.NODE:
        return spec.num_nodes, spec.node_rank
    if spec.role is Role.RANK or _one_process(spec):
        return spec.world_size, spec.global_rank
    raise _not_a_rank(spec, "place in a process group")


def device_indices(spec: ResourceSpec) -> tuple[int, ...]:
    """The GPUs this process drives, numbered as the runtime numbers the visible ones (0..n-1
    after ``CUDA_VISIBLE_DEVICES`` and its kin renumbered them): all of them for the one
    process of a node, else this rank's share; empty on CPUs."""
    visible = len(spec.visible_devices)
    if spec.accelerator is not Accelerator.GPU or not visible:
        return ()
    sharing = 1 if spec.role in (Role.NODE, Role.STANDALONE) else spec.devices_per_node
    if sharing == 1:
        return tuple(range(visible))
    if visible == 1:  # the launcher bound one GPU to this rank (--gpus-per-task=1)
        return (0,)
    if visible % sharing:
        raise ClusterEnvError(
            f"{sharing} ranks on this node see {visible} GPUs ({','.join(spec.visible_devices)}): "
            "they cannot be shared out evenly",
            hint="give every rank one GPU (srun --gpus-per-task=1) or as many ranks per node as "
            "GPUs",
        )
    each = visible // sharing
    return tuple(range(spec.local_rank * each, (spec.local_rank + 1) * each))
