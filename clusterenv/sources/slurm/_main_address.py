"""What Slurm knows of the host the ranks meet at: ``MASTER_ADDR``, or the rendezvous a
launcher's command line names (``torchrun --rdzv-endpoint``), where no rank of the job
may listen (the host the job was submitted from, the host srun ran on)."""

from __future__ import annotations

from collections.abc import Mapping

from clusterenv._core.finding import Finding
from clusterenv._core.safe import shorten
from clusterenv._core.spec import ResourceSpec, Role
from clusterenv._node.names import is_address, is_loopback, short_name

__all__ = ["main_address_findings"]

_FIX = (
    "unset MASTER_ADDR (clusterenv derives rank 0's node), or name the job's first node, "
    "found inside the job: $(scontrol show hostnames $SLURM_JOB_NODELIST | head -n1)"
)


def main_address_findings(
    spec: ResourceSpec, env: Mapping[str, str], named: str, given: str
) -> list[Finding]:
    """Findings about ``named``, the main address ``given`` sets (``MASTER_ADDR``,
    ``--rdzv-endpoint``) for the ranks of ``spec``'s job."""
    found = _submit_host(spec, env, named, given) or _launch_host(spec, env, named, given)
    return found + (_not_rank_zero(spec, env, named) if given == "MASTER_ADDR" else [])


def _nodes(spec: ResourceSpec) -> set[str]:
    return {short_name(host) for host in spec.hostnames}


def _submit_host(
    spec: ResourceSpec, env: Mapping[str, str], named: str, given: str
) -> list[Finding]:
    """The host the job was submitted from (``$(hostname)`` typed on a login node), which
    is not a node of the job: no rank listens there."""
    submit = env.get("SLURM_SUBMIT_HOST", "").strip()
    if not submit or not spec.hostnames or short_name(named) != short_name(submit):
        return []
    if short_name(submit) in _nodes(spec):
        return []
    ranks = spec.role is Role.RANK and spec.world_size > 1
    return [
        Finding(
            id="slurm.main-address-submit-host",
            message=f"{given}={shorten(named)!r} is the host the job was submitted from "
            f"(SLURM_SUBMIT_HOST), not one of its nodes ({shorten(','.join(spec.hostnames))}): "
            "no rank listens there, so the ranks wait for rank 0 in vain",
            fix=_FIX,
            level="error" if ranks else "warning",
        )
    ]


def _launch_host(
    spec: ResourceSpec, env: Mapping[str, str], named: str, given: str
) -> list[Finding]:
    """``SLURM_LAUNCH_NODE_IPADDR``, the address of the host srun ran on, in a step that the
    job script did not start (Slurm sets ``ENVIRONMENT=BATCH`` in the job script, and its
    steps inherit it; measured on 22.05 and 24.11): srun then ran in an salloc shell or on
    a login node, which is no node of the job, unless the site runs salloc's shell on the
    first node (``use_interactive_step``): a warning, not an error. A loopback launch
    address says srun ran on the node this task runs on (slurmd answered it over loopback;
    a one-host cluster gives 127.0.0.1): a node of the job, so nothing is wrong."""
    launch = env.get("SLURM_LAUNCH_NODE_IPADDR", "").strip()
    if not launch or named != launch or env.get("ENVIRONMENT", "").strip() == "BATCH":
        return []
    if is_address(launch) and is_loopback(launch):
        return []
    submit = env.get("SLURM_SUBMIT_HOST", "").strip()
    if submit and short_name(submit) in _nodes(spec):
        return []
    where = f"{shorten(submit)} (SLURM_SUBMIT_HOST)" if submit else "the host srun ran on"
    return [
        Finding(
            id="slurm.main-address-launch-host",
            message=f"{given}={shorten(named)!r} is SLURM_LAUNCH_NODE_IPADDR, the address of "
            f"the host srun ran on; this step was not started by the job script, so srun ran "
            f"on {where}, an salloc shell or a login node, not a node of the job: no rank "
            "listens there, so the ranks wait for rank 0 until they time out",
            fix=_FIX,
        )
    ]


def _not_rank_zero(spec: ResourceSpec, env: Mapping[str, str], named: str) -> list[Finding]:
    """Rank 0 on one node of the job while ``MASTER_ADDR`` names another (the node list's
    first, where ``--distribution=arbitrary`` put task 0 on SLURM_HOSTFILE's first line):
    every rank looks for rank 0 where nobody listens. Only rank 0 can tell."""
    here = env.get("SLURMD_NODENAME", "").strip()
    if spec.global_rank != 0 or spec.role is not Role.RANK or not here:
        return []
    if (
        short_name(named) == short_name(here)
        or short_name(named) not in _nodes(spec)
        or spec.world_size < 2
    ):
        return []
    return [
        Finding(
            id="slurm.main-address-not-rank-0",
            message=f"MASTER_ADDR={shorten(named)!r} is a node of the job, but rank 0 runs "
            f"on {shorten(here)} (SLURMD_NODENAME): the ranks look for rank 0 on "
            f"{shorten(named)}, where nobody listens",
            fix="unset MASTER_ADDR (clusterenv derives rank 0's node, SLURM_HOSTFILE's first "
            "line under --distribution=arbitrary), or set it to the node of task 0, not the "
            "first of the node list",
            level="error",
        )
    ]
