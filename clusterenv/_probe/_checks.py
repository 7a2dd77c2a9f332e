"""What rank 0 concludes from the hellos: pure functions over typed messages, one per
failure, each problem ending in its fix."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

from clusterenv._node.names import is_loopback
from clusterenv._probe._protocol import Said

__all__ = [
    "AGREED",
    "check",
    "disagreements",
    "duplicates",
    "main_address",
    "missing",
    "network",
    "per_node",
]

#: What every rank of one launch must believe alike.
AGREED = ("world_size", "num_nodes", "master_addr", "master_port", "job_id")


def ranges(numbers: Sequence[int]) -> str:
    """``0, 1, 5`` or, for long lists, ``0..9999 (10000)``."""
    if len(numbers) < 8:
        return ", ".join(map(str, numbers))
    return f"{numbers[0]}..{numbers[-1]} ({len(numbers)})"


def duplicates(hellos: Sequence[Said]) -> list[str]:
    counts = Counter(hello.rank for hello in hellos)
    problems = []
    for rank, count in sorted(counts.items()):
        if count > 1:
            where = ", ".join(sorted({h.host for h in hellos if h.rank == rank}))
            problems.append(
                f"rank {rank} is claimed by {count} processes (on {where}): the job was launched "
                "twice (e.g. torchrun inside an srun step with several tasks per node, or "
                "python started without srun). Fix: start each rank exactly once"
            )
    return problems


def missing(world_size: int, hellos: Sequence[Said], address: str, timeout: float) -> list[str]:
    """Without a set of ``world_size`` numbers: a huge world must not cost memory. Says
    where the fault is when rank 0 can tell: rank 0 is not on the main address, or ranks of
    other nodes did arrive (then it is the missing ranks' nodes' own)."""
    seen = sorted({hello.rank for hello in hellos if hello.rank < world_size})
    absent: list[int] = []
    expected = 0
    for rank in [*seen, world_size]:
        absent.extend(range(expected, min(rank, expected + 8)))  # the first few of each gap
        expected = rank + 1
    count = world_size - len(seen)
    if not count:
        return []
    shown = ", ".join(map(str, absent[:8])) + (f" and {count - 8} more" if count > 8 else "")
    gone = f"{count} rank(s) ({shown}) never reached {address} within {timeout:g} s"
    own = hellos[0]
    if own.reached and own.via and not is_loopback(own.reached) and own.via != own.reached:
        return [
            f"{gone}: rank 0 runs on {own.host}, but the main address is {own.reached}, another "
            f"host's, where the ranks look for rank 0. Fix: MASTER_ADDR must name rank 0's node "
            f"({own.host}): check the node order the launcher was given (a host file) or a "
            "MASTER_ADDR exported by hand"
        ]
    others = sorted({hello.host for hello in hellos[1:] if hello.host != own.host})
    where = (
        f"; other nodes reached it ({', '.join(others[:3])}{', ...' if len(others) > 3 else ''}), "
        "so look at the missing ranks' nodes: their own output names the fault"
        if others
        else ""
    )
    return [
        f"{gone}{where}. Fix: run the probe in every task of the same step; check that their "
        "nodes resolve the main address and that no firewall blocks the port"
    ]


def disagreements(hellos: Sequence[Said]) -> list[str]:
    problems = []
    for name in AGREED:
        values: dict[object, list[int]] = defaultdict(list)
        for hello in hellos:
            values[getattr(hello, name)].append(hello.rank)
        if len(values) > 1:
            said = "; ".join(
                f"{value!r} on rank(s) {ranges(sorted(r))}" for value, r in values.items()
            )
            problems.append(
                f"the ranks disagree on {name}: {said}. Fix: start all ranks from one srun "
                "step or torchrun launch, and do not export it differently per node"
            )
    return problems


def per_node(hellos: Sequence[Said]) -> list[str]:
    problems = []
    nodes: dict[int, list[Said]] = defaultdict(list)
    for hello in hellos:
        nodes[hello.node_rank].append(hello)
    for node, members in sorted(nodes.items()):
        expected = {hello.devices_per_node for hello in members}
        if expected != {len(members)}:
            problems.append(
                f"node {node} runs {len(members)} rank(s) but they expect "
                f"{'/'.join(map(str, sorted(expected)))} per node (devices_per_node). Fix: "
                "start one task per device on every node (--ntasks-per-node)"
            )
        hosts = sorted({hello.host for hello in members})
        if len(hosts) > 1:
            problems.append(
                f"node rank {node} is reported from several hosts ({', '.join(hosts[:8])}). Fix: "
                "start the ranks with a launcher that numbers the nodes (srun, torchrun "
                "--node_rank)"
            )
    return problems


def network(hellos: Sequence[Said]) -> list[str]:
    """Ranks that reach rank 0 over a real network but whose host names resolve only to
    loopback: gloo and NCCL bind to the host name's address unless told an interface, and
    then never connect (Debian's 127.0.1.1, a container's or namespace's own name)."""
    stuck = [
        hello
        for hello in hellos
        if hello.via
        and not is_loopback(hello.via)
        and hello.name_is_loopback
        and not hello.interface_chosen
    ]
    if not stuck:
        return []
    names = sorted({hello.interface for hello in stuck if hello.interface})
    through = " or ".join(names) if names else "their network"
    exports = _interface_variables(stuck)
    fix = (
        f"export {exports} in every rank"
        if exports
        else "export GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME as the interface each node "
        "reaches rank 0 through"
    )
    return [
        f"rank(s) {ranges(sorted(h.rank for h in stuck))} reach rank 0 through {through}, but "
        "their host names resolve only to a loopback address: torch.distributed's gloo and "
        f"NCCL would bind there and never connect. Fix: {fix} (or map each host name to its "
        "address on that network)"
    ]


def _interface_variables(hellos: Sequence[Said]) -> str:
    """``GLOO_SOCKET_IFNAME=eth0 NCCL_SOCKET_IFNAME=eth0`` where ``hellos`` all came from
    one interface; ``""`` where they name none or several."""
    names = {hello.interface for hello in hellos if hello.interface}
    if len(names) != 1:
        return ""
    (name,) = names
    return f"GLOO_SOCKET_IFNAME={name} NCCL_SOCKET_IFNAME={name}"


def main_address(hellos: Sequence[Said]) -> list[str]:
    """The main address is loopback on rank 0's node but a real address on others: the
    node's own name on Debian's ``127.0.1.1`` line. Rank 0's gloo and NCCL then bind to
    loopback, and so does anything listening on the main address: the others hang."""
    own = hellos[0]
    if own.rank != 0 or not own.reached or not is_loopback(own.reached):
        return []
    elsewhere = [h for h in hellos[1:] if h.reached and not is_loopback(h.reached)]
    if not elsewhere:
        return []
    real = elsewhere[0].reached
    exports = " ".join(filter(None, (f"MASTER_ADDR={real}", _interface_variables(elsewhere))))
    return [
        f"the main address {own.master_addr!r} is {own.reached} (loopback) on rank 0's node "
        f"{own.host}, but rank(s) {ranges(sorted(h.rank for h in elsewhere))} reached it at "
        f"{real}: rank 0's gloo and NCCL would bind to loopback and the others never connect. "
        f"Fix: in {own.host}'s /etc/hosts map {own.master_addr} to {real}, not "
        f"{own.reached} (Debian's installer writes that line), or export {exports} in every "
        "rank"
    ]


def foreign(count: int, examples: Sequence[str]) -> list[str]:
    if not count:
        return []
    return [
        f"{count} foreign connection(s) reached the probe's port and were ignored "
        f"({'; '.join(examples[:3])}): another program or user, not a rank of this launch. "
        "Fix: nothing, if the ranks are all there; else find what connects to the port"
    ]


def check(
    world_size: int,
    hellos: Sequence[Said],
    address: str,
    timeout: float,
    strangers: tuple[int, Sequence[str]] = (0, ()),
) -> list[str]:
    """Every problem with the launch that ``hellos`` (rank 0's own first) show."""
    return [
        *duplicates(hellos),
        *missing(world_size, hellos, address, timeout),
        *disagreements(hellos),
        *per_node(hellos),
        *network(hellos),
        *main_address(hellos),
        *foreign(*strangers),
    ]
