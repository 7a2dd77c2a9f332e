"""What Slurm knows breaks a multi-node job: its findings, each with the fix."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from clusterenv._core.finding import Finding, Level
from clusterenv._core.reader import parse_integer
from clusterenv._core.safe import shorten
from clusterenv._core.spec import GpuVendor, ResourceSpec, Role
from clusterenv._node.gpu import VENDOR_VARIABLES
from clusterenv.exceptions import ClusterEnvError
from clusterenv.sources._detector import Detector
from clusterenv.sources.slurm._main_address import main_address_findings
from clusterenv.sources.slurm._values import TaskLayout

__all__ = ["FINDING_IDS", "NTASKS", "slurm_findings"]

#: Every finding Slurm writes.
FINDING_IDS = tuple(
    f"slurm.{what}"
    for what in (
        "common-port",
        "cpus-not-inherited",
        "cpus-per-task-clash",
        "directive-after-command",
        "directive-misspelt",
        "directive-near-miss",
        "directive-refused",
        "directive-site-option",
        "double-launch",
        "gpus-outside-grant",
        "gpus-shared",
        "gpus-uneven",
        "het-component-0",
        "job-name",
        "launcher-in-batch-step",
        "main-address-launch-host",
        "main-address-not-rank-0",
        "main-address-submit-host",
        "no-launcher",
        "ntasks-without-per-node",
        "script-no-shebang",
        "step-exceeds-job",
        "step-fewer-nodes",
        "step-ntasks-inherited",
        "step-smaller-than-job",
        "tasks-not-gpus",
        "test-only-refused",
        "torchrun-more-nodes",
        "torchrun-one-node",
    )
)
# Ports that many scripts hard-code: two jobs sharing a node then collide.
_COMMON_PORTS = frozenset({12910, 29500, 1234, 12345})
#: The task count: SLURM_NPROCS is the old name, set beside it by every release and alone
#: in older dumps of real sites.
NTASKS = ("SLURM_NTASKS", "SLURM_NPROCS")


def slurm_findings(
    slurm: Detector, spec: ResourceSpec, env: Mapping[str, str], present: Sequence[Detector]
) -> list[Finding]:
    """What Slurm knows breaks a job: ``spec`` detected from ``env``, by Slurm or by a
    launcher inside one of its tasks (``present``: the sources of ``env``)."""
    ours = spec.source is slurm.source
    found = []

    def warn(condition: bool, what: str, message: str, fix: str, level: Level = "warning") -> None:
        if condition:
            found.append(Finding(id=f"slurm.{what}", message=message, fix=fix, level=level))

    tasks, gpus = spec.devices_per_node, spec.gpus_per_node
    rank = ours and spec.role is Role.RANK and gpus > 0
    warn(
        rank and tasks < gpus,
        "tasks-not-gpus",
        f"{tasks} tasks on this node but {gpus} GPUs: Lightning expects one task per GPU",
        f"--ntasks-per-node={gpus}",
    )
    # More tasks than the node's grant (SLURM_GPUS_ON_NODE, ..._GPUS): some share a GPU.
    warn(
        rank and tasks > gpus,
        "gpus-shared",
        f"{tasks} tasks on this node share its {gpus} GPU(s): JAX preallocates 75% of a "
        "GPU's memory in each process (TensorFlow all of it), so the second rank on a GPU "
        "runs out of memory, and Lightning expects one task per GPU",
        f"--ntasks-per-node={gpus} (one task per GPU); to share on purpose with JAX, export "
        "XLA_PYTHON_CLIENT_PREALLOCATE=false",
    )
    placed = _layout(env)
    uneven = _uneven(placed)
    warn(
        any(name in env for name in NTASKS)
        and "SLURM_NTASKS_PER_NODE" not in env
        and spec.num_nodes > 1,
        "ntasks-without-per-node",
        f"--ntasks without --ntasks-per-node: Slurm placed {shorten(placed or '?')} tasks per "
        "node"
        + (
            ", not the same number on every node"
            if uneven
            else "; where Lightning detects Slurm itself, it refuses the job"
        ),
        "use --ntasks-per-node",
        "warning" if uneven else "info",
    )
    step_tasks = env.get("SLURM_STEP_TASKS_PER_NODE", "")
    inner = next((d for d in present if d.source is spec.source), None)
    launcher = inner.launcher if inner and inner.launcher else spec.source.value
    warn(
        not ours
        and spec.role is Role.RANK
        and slurm.runs_task(env)
        and _tasks_on_this_node(env) > 1,
        "double-launch",
        f"{launcher} runs inside an srun step with SLURM_STEP_TASKS_PER_NODE="
        f"{shorten(step_tasks)!r}: every task of this node starts its own {launcher} (a "
        "double launch)",
        "srun --ntasks-per-node=1",
    )
    # Under a launcher (torchrun) its agent bound the port before this rank started: a
    # collision would already have failed, loudly.
    warn(
        ours and spec.master_port in _COMMON_PORTS and "MASTER_PORT" in env,
        "common-port",
        f"MASTER_PORT={shorten(env.get('MASTER_PORT', ''))!r} is a common default; two jobs "
        "on one node will collide",
        "unset MASTER_PORT and clusterenv derives one from the job id",
    )
    cpus, tres = env.get("SLURM_CPUS_PER_TASK"), env.get("SLURM_TRES_PER_TASK", "")
    tres_cpus = next((i for i in tres.split(",") if i.startswith(("cpu=", "cpu:"))), None)
    warn(
        cpus is not None and tres_cpus is not None and tres_cpus[4:] != cpus.strip(),
        "cpus-per-task-clash",
        f"SLURM_CPUS_PER_TASK={shorten(cpus or '')!r} contradicts SLURM_TRES_PER_TASK="
        f"{shorten(tres)!r}: srun (23.11+) then stops with 'cpus_per_task set by two "
        "different environment variables'",
        "pass --cpus-per-task to srun, or do not export SLURM_CPUS_PER_TASK by hand",
    )
    warn(
        "SLURM_JOB_NODELIST" not in env and "SLURM_JOB_NODELIST_HET_GROUP_0" in env,
        "het-component-0",
        "a heterogeneous job: this describes its component 0, what a plain srun starts",
        "srun --het-group=N for another component",
        "info",
    )
    job_name = env.get("SLURM_JOB_NAME")
    warn(
        job_name in ("bash", "interactive") and spec.role is Role.RANK and spec.world_size > 1,
        "job-name",
        f"SLURM_JOB_NAME={job_name!r}: where Lightning detects Slurm itself, it treats every "
        "task as rank 0",
        "pass clusterenv's cluster environment to the Trainer, or name the job (--job-name)",
        "info",
    )
    found += _cpus_and_steps(slurm, spec, env, present) + _outside_grant(spec, env)
    named = env.get("MASTER_ADDR", "").strip()
    return found + (main_address_findings(spec, env, named, "MASTER_ADDR") if named else [])


def _outside_grant(spec: ResourceSpec, env: Mapping[str, str]) -> list[Finding]:
    """A visible-devices value naming GPUs the job was not granted on this node. Slurm lists
    those it granted (SLURM_STEP_GPUS in a task, SLURM_JOB_GPUS in the batch step) in the
    node's numbering; where cgroups hide the others, the visible ones count from 0."""
    granted_name = next((n for n in ("SLURM_STEP_GPUS", "SLURM_JOB_GPUS") if n in env), None)
    names = VENDOR_VARIABLES[spec.gpu_vendor or GpuVendor.NVIDIA]
    name = next((n for n in names if n in env), None)
    if granted_name is None or name is None:
        return []
    granted, visible = _indices(env[granted_name]), _indices(env[name])
    if granted is None or visible is None:  # UUIDs or MIG slices: not comparable
        return []
    renumbered = set(range(len(granted)))
    if len(visible) <= len(granted) and (visible <= granted or visible <= renumbered):
        return []
    return [
        Finding(
            id="slurm.gpus-outside-grant",
            message=f"{name}={shorten(env[name])!r} names GPUs this job was not granted on "
            f"this node ({granted_name}={shorten(env[granted_name])!r}): its ranks may "
            "compute on another job's GPUs, or find none",
            fix=f"do not set {name} by hand: Slurm sets it to the granted GPUs (divide them "
            "with --gpus-per-task or --gpu-bind)",
        )
    ]


def _indices(value: str) -> set[int] | None:
    """GPU indices such as ``0,2``; ``None`` for anything else (UUIDs, MIG slices, empty)."""
    items = [item.strip() for item in value.split(",")]
    if not all(item.isdigit() and len(item) <= 4 for item in items):
        return None
    return {int(item) for item in items}


def _cpus_and_steps(
    slurm: Detector, spec: ResourceSpec, env: Mapping[str, str], present: Sequence[Detector]
) -> list[Finding]:
    """What a step gets of its job: the CPUs srun no longer inherits (22.05+), a torchrun
    left in the batch step, a step smaller than its job."""
    found = []
    task = spec.source is slurm.source and spec.role is Role.RANK
    granted = _integer(env.get("SLURM_CPUS_PER_TASK"))
    if (
        task
        and granted
        and "SRUN_CPUS_PER_TASK" not in env
        and spec.cpus_per_rank is not None
        and spec.cpus_per_rank < granted
    ):
        found.append(
            Finding(
                id="slurm.cpus-not-inherited",
                message=f"SLURM_CPUS_PER_TASK={granted} but this task may run on "
                f"{spec.cpus_per_rank} CPU(s): since Slurm 22.05 srun does not inherit "
                "--cpus-per-task from sbatch or salloc, so every thread of the task shares them",
                fix="export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK before srun, or pass "
                "srun --cpus-per-task",
            )
        )
    inner = next((d for d in present if d.source is spec.source), None)
    nodes = _integer(env.get("SLURM_JOB_NUM_NODES") or env.get("SLURM_NNODES"))
    batch = "SLURM_PROCID" in env and not slurm.runs_task(env)
    # Fewer nodes than the job, or more than one: the batch step runs on one node only, so
    # a launcher there that counts on other nodes (torchrun --nnodes=2) gets no agent there.
    if inner is not slurm and batch and nodes and (spec.num_nodes < nodes or spec.num_nodes > 1):
        launcher = inner.launcher if inner and inner.launcher else spec.source.value
        found.append(
            Finding(
                id="slurm.launcher-in-batch-step",
                message=f"{launcher} runs in the batch step, on the first of the job's {nodes} "
                f"node(s) only, and counts on ranks of {spec.num_nodes} node(s): the other "
                "nodes start no agent and train nothing",
                fix=f"start one {launcher} per node: srun --ntasks-per-node=1 {launcher} "
                "--nnodes=$SLURM_JOB_NUM_NODES ... (torchrun: with --rdzv-backend=c10d)",
            )
        )
    step_nodes = _integer(env.get("SLURM_STEP_NUM_NODES"))
    if task and nodes and step_nodes and step_nodes < nodes:
        found.append(
            Finding(
                id="slurm.step-fewer-nodes",
                message=f"this step runs on {step_nodes} of the job's {nodes} nodes "
                "(SLURM_STEP_NUM_NODES < SLURM_JOB_NUM_NODES): the other "
                f"{nodes - step_nodes} train nothing, and code that sizes the world from "
                "the job (num_nodes=$SLURM_JOB_NUM_NODES) waits for their ranks",
                fix="srun -N $SLURM_JOB_NUM_NODES --ntasks-per-node=N (a step without -N "
                "spans the job), or ask the job for fewer nodes",
            )
        )
    job_tasks = _integer(env.get("SLURM_NTASKS"))
    if task and job_tasks and spec.world_size < job_tasks and "SLURM_STEP_NUM_TASKS" in env:
        found.append(
            Finding(
                id="slurm.step-smaller-than-job",
                message=f"this step runs {spec.world_size} of the job's {job_tasks} tasks: "
                "code that sizes the world from SLURM_NTASKS or SLURM_JOB_NUM_NODES waits "
                "for ranks that never come",
                fix="size the world from the step (SLURM_STEP_NUM_TASKS), as clusterenv does",
                level="info",
            )
        )
    return found


def _layout(env: Mapping[str, str]) -> str | None:
    """The tasks per node of this step (or, outside one, of the job)."""
    return env.get("SLURM_STEP_TASKS_PER_NODE") or env.get("SLURM_TASKS_PER_NODE")


def _uneven(layout: str | None) -> bool:
    """Whether a task list such as ``2(x3),1`` places different numbers on the nodes."""
    try:
        counts = {tasks for tasks, _ in TaskLayout("SLURM_TASKS_PER_NODE", layout or "").items}
    except ClusterEnvError:
        return False
    return len(counts) > 1


def _integer(value: str | None) -> int | None:
    """A count Slurm wrote, or ``None`` where it is unset or not a number."""
    text = (value or "").strip()
    return int(text) if text.isdigit() and len(text) <= 9 else None


def _tasks_on_this_node(env: Mapping[str, str]) -> int:
    """How many tasks of the step run on this task's node; 0 where Slurm does not say. One
    launcher per node (``srun --ntasks-per-node=1 torchrun``, hydra's proxies) is right."""
    try:
        layout = TaskLayout("SLURM_STEP_TASKS_PER_NODE", env["SLURM_STEP_TASKS_PER_NODE"])
        node = parse_integer(
            "SLURM_NODEID", env["SLURM_NODEID"], hint="Slurm sets this in every srun task"
        )
    except (KeyError, ClusterEnvError):
        return 0
    return layout.on_node(node) if node < layout.num_nodes else 0
