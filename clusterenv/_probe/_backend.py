"""``clusterenv probe --backend gloo``: torch.distributed's own rendezvous and an
``all_reduce``, in a child process that the probe stops at its deadline.

Once the TCP probe passed, a backend that still fails is most often a firewall: gloo and
NCCL also connect every pair of ranks, on ports the system picks, which a firewall that
opens only ``MASTER_PORT`` between the nodes stops. gloo's own connect waits for TCP's
retries (40 s and more, whatever the process group's timeout); a hung native call cannot be
interrupted from Python. So the check runs as ``python -m clusterenv._probe._backend`` and
is killed when its time is up: the probe stays bounded, and the probe process never
imports torch.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from datetime import timedelta

from clusterenv._adapters.frameworks import endpoint
from clusterenv._core.spec import ResourceSpec
from clusterenv._probe._report import ProbeError

__all__ = ["GRACE", "check_backend"]

#: What the child may take beyond the timeout: starting Python and importing torch.
GRACE = 15.0
_HINT = (
    "the TCP probe passed, so look at what the backend adds: gloo and NCCL connect every pair "
    "of ranks on ports the system picks, not MASTER_PORT, so open the ports above 1024 between "
    "the nodes (a firewall that lets MASTER_PORT alone through stops them: a connect timeout); "
    "then the interfaces (GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME) and the torch build"
)


def check_backend(spec: ResourceSpec, backend: str, timeout: float) -> None:
    """``init_process_group`` and an ``all_reduce`` over the launch's ranks with
    ``backend``, within ``timeout`` plus :data:`GRACE` seconds; ``ProbeError`` otherwise."""
    if importlib.util.find_spec("torch") is None:
        raise ProbeError(
            f"--backend {backend} needs torch", hint="pip install torch, or drop --backend"
        )
    where = endpoint(spec.master_addr, spec.master_port)
    argv = [backend, str(spec.global_rank), str(spec.world_size), where, str(timeout)]
    command = [sys.executable, "-m", "clusterenv._probe._backend", *argv]
    limit = timeout + GRACE
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=limit, check=False)
    except subprocess.TimeoutExpired:
        raise ProbeError(
            f"torch.distributed ({backend}) did not connect rank {spec.global_rank} with the "
            f"other {spec.world_size - 1} within {limit:g} s",
            hint=_HINT,
        ) from None
    if done.returncode:
        # Its own message on stdout; else the last line of a crash (a broken torch install).
        said = (
            done.stdout.strip().splitlines()
            or done.stderr.strip().splitlines()[-1:]
            or [f"exit status {done.returncode}"]
        )
        raise ProbeError(
            f"torch.distributed ({backend}) failed on rank {spec.global_rank}: {said[-1]}",
            hint=_HINT,
        )


def _main(backend: str, rank: int, world_size: int, where: str, timeout: float) -> int:
    import torch  # noqa: PLC0415 - the child alone imports torch
    import torch.distributed as dist  # noqa: PLC0415

    try:
        dist.init_process_group(
            backend,
            init_method=f"tcp://{where}",
            rank=rank,
            world_size=world_size,
            timeout=timedelta(seconds=timeout),
        )
        total = torch.ones(1)
        dist.all_reduce(total)
        dist.barrier()
    except (RuntimeError, ValueError) as error:  # torch's DistBackendError is a RuntimeError
        print(str(error).splitlines()[0] if str(error) else type(error).__name__, flush=True)
        return 1
    if total.item() != world_size:
        print(
            f"all_reduce over {world_size} ranks gave {total.item():g}: the ranks do not form "
            "one process group; check they come from one launch",
            flush=True,
        )
        return 1
    return 0


if __name__ == "__main__":
    backend, rank, world_size, where, timeout = sys.argv[1:6]
    status = _main(backend, int(rank), int(world_size), where, float(timeout))
    # Without torch's C++ teardown, whose gloo threads may abort the exit (torch 2.13).
    sys.stdout.flush()
    os._exit(status)
