"""An ``srun`` line of a job script, predicted: its step's nodes and tasks (its own options
over the allocation's), each task's environment from the Slurm launch model, what each task
runs (a rank itself, or a torchrun agent whose workers are the ranks; ``bash -c '...'``
read by each task's own shell) and the findings of each rank, as the pre-flight check
judges it at run time."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from clusterenv._check.arguments import contradictions
from clusterenv._check.launches import Prediction, Shell, counts, judge, launcher_of, refused
from clusterenv._check.report import MAP_NODES, NodeMap, NotModelled, Predicted, Rank
from clusterenv._check.shell import Line, Unreadable, commands, words
from clusterenv._core.finding import Finding
from clusterenv._core.safe import shorten
from clusterenv._core.spec import ResourceSpec
from clusterenv._models.slurm import slurm_env
from clusterenv._models.torchelastic import torchrun_env
from clusterenv.exceptions import ClusterEnvError

__all__ = ["srun"]


def _count(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() and 0 < int(value) < 1 << 20 else None


@dataclass(frozen=True)
class _Step:
    """What one srun asks for, its own options over the allocation's."""

    nodes: int
    tasks: int
    cpus: int | None
    per_node: int | None
    per_task: int | None
    command: list[str]


def _step(line: Line, texts: list[str], shell: Shell, result: Prediction) -> _Step | None:
    read = shell.scheduler.options(texts[1:], line.number, "srun")
    result.findings += read.findings
    given = {name: option.value for name, option in read.given.items()}
    alloc, job_nodes = shell.alloc, shell.alloc.nodes or 1
    nodes = _count(given.get("nodes")) or job_nodes
    tasks = _count(given.get("ntasks-per-node"))
    if tasks is None and _count(given.get("ntasks")):
        tasks = max(1, (_count(given.get("ntasks")) or 1) // nodes)
    tasks = tasks or shell.tasks_per_node or 1
    # Inside the job srun reads SLURM_NTASKS as its -n, and -n wins over --ntasks-per-node
    # (then only a maximum): measured on 22.05 and 24.11, `srun --ntasks-per-node=1` in a job
    # of 2 x 2 tasks still starts 4.
    job_tasks = alloc.ntasks or (shell.tasks_per_node or 0) * job_nodes
    if "ntasks" not in given and nodes == job_nodes and job_tasks > tasks * nodes:
        result.findings.append((line.number, _inherited(tasks, job_tasks, nodes)))
        tasks = job_tasks // nodes
    cpus = _count(given.get("cpus-per-task"))
    if nodes > job_nodes or (shell.tasks_per_node and tasks > shell.tasks_per_node):
        result.findings.append(
            (line.number, _exceeds(nodes, tasks, job_nodes, shell.tasks_per_node))
        )
        return None
    if nodes < job_nodes:
        result.findings.append((line.number, _fewer(nodes, job_nodes)))
    if cpus is None and "SRUN_CPUS_PER_TASK" in shell.exported():
        cpus = _count(shell.exported()["SRUN_CPUS_PER_TASK"])
    per_task = _count(given.get("gpus-per-task")) or alloc.gpus_per_task
    per_node = None if per_task else alloc.gpus_per_node
    return _Step(nodes, tasks, cpus, per_node, per_task, read.rest)


def srun(
    line: Line, texts: list[str], shell: Shell, result: Prediction, prefix: Mapping[str, str]
) -> None:
    """Predict the step ``srun`` (``texts``) starts from the batch shell ``shell``."""
    step = _step(line, texts, shell, result)
    if step is None or not step.command:
        return
    user = {k: v for k, v in shell.exported().items() if not k.startswith(("SLURM_", "SLURMD_"))}
    shown = [
        n * step.tasks + t for n in range(min(step.nodes, MAP_NODES)) for t in range(step.tasks)
    ]
    shown += [(step.nodes - 1) * step.tasks] if step.nodes > MAP_NODES else []
    maps: dict[int, list[Rank]] = {}
    kind, world = "", 0
    main: tuple[str | None, int | None] = (None, None)
    for procid in shown:
        try:
            env = slurm_env(
                step.nodes, step.tasks, procid, within="sbatch", gpus_per_node=step.per_node,
                gpus_per_task=step.per_task, cpus_per_task=step.cpus, job_name=shell.alloc.job_name,
            )  # fmt: skip
        except ClusterEnvError as error:
            _skip(line, str(error), result)
            return
        task_env = dict(env) | user | dict(prefix)
        if step.cpus is None and shell.alloc.cpus_per_task:  # the job's, which srun keeps
            task_env.setdefault("SLURM_CPUS_PER_TASK", str(shell.alloc.cpus_per_task))
        command = _task_command(step.command, task_env)
        if command is None:
            _skip(line, "the command each task runs could not be read", result)
            return
        kind = launcher_of(command) or ""
        if kind not in ("python", "torchrun"):
            return  # not a training process (or srun inside srun): nothing to predict
        ranks = _ranks(line, task_env, command, result, kind=kind, step=step)
        if ranks is None:
            return
        for spec in ranks:
            rank = Rank(
                rank=spec.global_rank, local_rank=spec.local_rank, gpus=list(spec.visible_devices)
            )
            maps.setdefault(int(task_env["SLURM_NODEID"]), []).append(rank)
            world, main = spec.world_size, (spec.master_addr, spec.master_port)
    per_rank = step.per_task or (step.per_node or 0) // max(1, len(maps.get(0, []))) or None
    result.launches.append(
        Predicted(
            line=line.number,
            command=shorten(" ".join(texts), 160),
            launcher="srun+torchrun" if kind == "torchrun" else "srun",
            nodes=step.nodes,
            ranks_per_node=len(maps.get(0, [])),
            world_size=world,
            gpus_per_rank=per_rank,
            main_address=main[0],
            main_port=main[1],
            map=[
                NodeMap(
                    node=node,
                    gpus=step.per_node or (step.per_task or 0) * step.tasks or None,
                    ranks=ranks,
                )
                for node, ranks in sorted(maps.items())
            ],
        )
    )


def _ranks(
    line: Line,
    env: dict[str, str],
    command: list[str],
    result: Prediction,
    *,
    kind: str,
    step: _Step,
) -> list[ResourceSpec] | None:
    """The ranks one task is or starts (a torchrun agent's workers), each judged."""
    try:
        bound = step.cpus or 1  # since 22.05 srun binds a task to its own -c, else one CPU
        if kind == "python":
            spec, found = judge(env, command, cpus=bound)
            found += contradictions(command, spec)
            result.findings += [(line.number, f) for f in found if f.level != "info"]
            return [spec]
        agent, found = judge(env, command, diagnosed=False)
        result.findings += [(line.number, f) for f in found if f.level != "info"]
        nnodes, workers = counts(command, step.per_node) or (None, 1)
        agents = step.nodes * step.tasks
        index = int(env["SLURM_NODEID"]) * step.tasks + int(env["SLURM_LOCALID"])
        specs = []
        for local in range(workers):
            worker = env | torchrun_env(
                agents,
                workers,
                index * workers + local,
                master_addr=agent.master_addr,
                run_id="check",
            )
            spec, found = judge(worker, [], cpus=bound)
            found += contradictions(command, spec)
            result.findings += [(line.number, f) for f in found if f.level != "info"]
            specs.append(spec)
        if index == 0 and nnodes is not None:
            result.findings += [(line.number, f) for f in _agents(nnodes, step.nodes, step.tasks)]
        return specs
    except ClusterEnvError as error:
        result.findings.append((line.number, refused(error)))
        return None


def _skip(line: Line, why: str, result: Prediction) -> None:
    result.not_modelled.append(NotModelled(line=line.number, text=shorten(line.text, 160), why=why))


def _task_command(task: list[str], env: Mapping[str, str]) -> list[str] | None:
    """What one task runs: ``task`` itself, or the first command of ``bash -c STRING``,
    STRING read by that task's own shell (its variables, not the job script's)."""
    if os.path.basename(task[0]) not in ("bash", "sh") or task[1:2] != ["-c"] or len(task) < 3:
        return task
    try:
        found = words(task[2], env.get, lambda _: None)
    except Unreadable:
        return None
    for command in commands(found):
        texts = [w.text for w in command]
        while texts and "=" in texts[0] and texts[0].partition("=")[0].isidentifier():
            texts = texts[1:]
        if texts and launcher_of(texts) is not None:
            return texts
    return task


def _agents(nnodes: str, nodes: int, tasks: int) -> list[Finding]:
    """One torchrun agent per node must be told how many nodes there are (``nnodes``, as
    written)."""
    least = nnodes.partition(":")[0]
    if nodes > 1 and tasks == 1 and nnodes in ("1", "1:1"):
        return [
            Finding(
                id="slurm.torchrun-one-node",
                message=f"torchrun runs on each of {nodes} nodes without --nnodes (or with "
                "--nnodes=1): every node trains a world of its own, the same job N times",
                fix="pass --nnodes=$SLURM_JOB_NUM_NODES --rdzv-backend=c10d "
                "--rdzv-endpoint=$MASTER_ADDR:29500",
                level="error",
            )
        ]
    if tasks == 1 and least.isdigit() and int(least) > nodes:
        return [
            Finding(
                id="slurm.torchrun-more-nodes",
                message=f"torchrun --nnodes={shorten(nnodes)} but the step starts {nodes} "
                "agent(s), one per node: the rendezvous waits for agents that never start",
                fix="pass --nnodes=$SLURM_JOB_NUM_NODES",
                level="error",
            )
        ]
    return []


def _exceeds(nodes: int, tasks: int, job: int, job_tasks: int | None) -> Finding:
    held = f"{job} node(s)" + (f" x {job_tasks} task(s)" if job_tasks else "")
    return Finding(
        id="slurm.step-exceeds-job",
        message=f"srun asks for {nodes} node(s) x {tasks} task(s) but the job holds {held}: "
        "srun refuses the step ('more processors requested than permitted') or waits",
        fix="ask the job (#SBATCH) for what the step needs, or drop srun's own counts",
        level="error",
    )


def _fewer(nodes: int, job: int) -> Finding:
    return Finding(
        id="slurm.step-fewer-nodes",
        message=f"srun runs on {nodes} of the job's {job} nodes: the other {job - nodes} "
        "node(s) idle",
        fix="drop srun's -N (a step runs on every node of the job), or ask the job for fewer",
    )


def _inherited(asked: int, job_tasks: int, nodes: int) -> Finding:
    return Finding(
        id="slurm.step-ntasks-inherited",
        message=f"srun asks {asked} task(s) per node, but inside the job it reads "
        f"SLURM_NTASKS={job_tasks} as its -n, which wins: it starts {job_tasks} tasks, "
        f"{job_tasks // nodes} per node",
        fix=f"pass -n {asked * nodes} as well (srun -n {asked * nodes} --ntasks-per-node={asked})",
    )
