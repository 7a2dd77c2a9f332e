"""Flux tasks and job bodies, as flux-core 0.88.0 starts them (tests/data/captures/flux-*)."""

from __future__ import annotations

import json
from typing import Literal

from clusterenv._models.launch import Launch, check, positive, rank_of

__all__ = ["examples", "flux_env"]

#: FLUID's f58 digits: a job id is ``ƒ`` (``f`` in ASCII) and its number in base 58.
_F58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
#: Where the instance lives: flux-core's own paths (`flux start` of the test captures).
_RUN = "/tmp/flux-a1b2c3"


def flux_env(
    nodes: int = 1,
    tasks_per_node: int = 1,
    rank: int = 0,
    *,
    job_id: str = "ƒ2Xb8GNp3",
    master_addr: str | None = None,
    pals: bool = False,
    taskmap: Literal["block", "cyclic"] = "block",
    hosts: tuple[str, ...] | None = None,
    step: Literal["run", "batch"] = "run",
) -> Launch:
    """Task ``rank`` of ``flux run -N NODES --tasks-per-node N`` (``taskmap``: Flux's
    ``--taskmap``), or with ``step="batch"`` the body of ``flux batch -N NODES`` /
    ``flux alloc -N NODES`` (its job id is ``FLUX_ENCLOSING_ID``).

    Flux gives a task no host name; what its commands answer there is in the launch's
    ``answers`` (``flux job taskmap``, ``flux resource list``): detect with
    ``ask=launch.ask``. ``hosts`` names the nodes (default ``node1``...). ``pals``: with
    Flux's ``cray-pals`` shell plugin (``-o pmi=cray-pals``, HPE Cray EX), which adds
    PALS's rank variables as PALS's own mpiexec would (flux-coral2's documentation of the
    plugin)."""
    positive("flux_env", nodes=nodes, tasks_per_node=tasks_per_node)
    rank_of("flux_env", rank, nodes * tasks_per_node)
    names = hosts or tuple(f"node{index + 1}" for index in range(nodes))
    check("flux_env", len(names) == nodes, f"{len(names)} hosts for {nodes} nodes", "one each")
    number = _f58(job_id)
    base = {
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        "CUDA_VISIBLE_DEVICES": "-1",  # Flux hides the GPUs a job did not ask for
        "FLUX_CONNECTOR_PATH": "/opt/flux/lib/flux/connectors",
        "FLUX_EXEC_PATH": "/opt/flux/libexec/flux/cmd",
        "FLUX_MODULE_PATH": "/opt/flux/lib/flux/modules",
        "FLUX_START_URI": f"local://{_RUN}/start",
        "FLUX_TERMINUS_SESSION": "0",
    }
    if step == "batch":
        listed = f"{nodes} 0 {','.join(names)}"
        env = base | {"FLUX_ENCLOSING_ID": job_id, "FLUX_URI": f"local://{_RUN}-job/local-0"}
        return Launch(
            env, answers={"flux resource list -s all -no {nnodes} {ngpus} {nodelist}": listed}
        )
    size = nodes * tasks_per_node
    cyclic = taskmap == "cyclic"
    node = rank % nodes if cyclic else rank // tasks_per_node
    env = base | {
        "FLUX_JOB_ID": job_id,
        "FLUX_JOB_ID_PATH": f"/{job_id}",
        "FLUX_JOB_NNODES": str(nodes),
        "FLUX_JOB_SIZE": str(size),
        "FLUX_JOB_TMPDIR": f"{_RUN}/jobtmp-{node}-{job_id}",
        "FLUX_KVS_NAMESPACE": f"job-{number}",
        "FLUX_PMI_LIBRARY_PATH": "/opt/flux/lib/flux/libpmi.so",
        "FLUX_TASK_LOCAL_ID": str(rank // nodes if cyclic else rank % tasks_per_node),
        "FLUX_TASK_RANK": str(rank),
        "FLUX_URI": f"local://{_RUN}/local-{node}",
        "OMPI_MCA_btl_vader_backing_directory": f"{_RUN}/jobtmp-{node}-{job_id}",
        "PMI_FD": "18",
        "PMI_RANK": str(rank),
        "PMI_SIZE": str(size),
    }
    if pals:
        env |= {
            "PALS_APID": job_id,
            "PALS_RANKID": str(rank),
            "PALS_NODEID": str(node),
            "PALS_APINFO": f"/var/run/flux/jobtmp-0-{job_id}/libpals_apinfo",
            "PALS_SPOOL_DIR": f"/var/run/flux/jobtmp-0-{job_id}",
        }
    blocks = [[0, nodes, 1, tasks_per_node]] if cyclic else [[0, nodes, tasks_per_node, 1]]
    answers = {
        f"flux job taskmap {job_id}": json.dumps(blocks, separators=(",", ":")),
        f"flux job taskmap --hostname=0 {job_id}": names[0],
    }
    return Launch(env | ({"MASTER_ADDR": master_addr} if master_addr else {}), answers=answers)


def _f58(job_id: str) -> int:
    """The number of a Flux job id (``ƒ2Xb8GNp3``, or ``f2Xb8GNp3`` in ASCII)."""
    digits = job_id[1:] if job_id[:1] in ("ƒ", "f") else ""
    check(
        "flux_env",
        bool(digits) and all(digit in _F58 for digit in digits),
        f"job_id={job_id!r} is not a Flux job id",
        "pass one as Flux prints it, e.g. 'ƒ2Xb8GNp3'",
    )
    number = 0
    for digit in digits:
        number = number * 58 + _F58.index(digit)
    return number


def examples() -> list[Launch]:
    """One launch per role this source produces: the contract tests run every source's."""
    return [flux_env(2, 2, 1, master_addr="n1"), flux_env(2, step="batch")]
