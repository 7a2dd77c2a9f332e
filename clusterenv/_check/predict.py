"""What every task of a Slurm job script will see, predicted before submission: the
directives give the allocation, the body's launch lines (``srun``, torchrun, python) the
processes, each built by the launch models (:mod:`clusterenv._models`, checked against
live captures), detected as at run time and judged by the same findings as the pre-flight
check, at the line that starts it. A variable is expanded where the shell that reads it
runs: in the batch shell for the job script's words, in each task for ``srun bash -c``'s."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from clusterenv._check.arguments import contradictions, not_exported, unset
from clusterenv._check.launches import (
    Prediction,
    Shell,
    counts,
    judge,
    launcher_of,
    refused,
)
from clusterenv._check.report import Allocation, NodeMap, NotModelled, Predicted, Rank
from clusterenv._check.shell import Line, Unreadable, Word, commands, lines, words
from clusterenv._check.steps import srun
from clusterenv._core.finding import Finding
from clusterenv._core.safe import shorten
from clusterenv._models.slurm import slurm_env
from clusterenv.exceptions import ClusterEnvError
from clusterenv.sources import Detector, Directives

__all__ = ["Prediction", "predict"]

_BLOCKS = {"if": "fi", "for": "done", "while": "done", "until": "done", "case": "esac"}
_ENDS = frozenset(_BLOCKS.values())
_WRAPPERS = frozenset({"exec", "time", "nohup", "command"})


def _substitute(
    env: Mapping[str, str], host: str, scheduler: Detector
) -> Callable[[list[Word]], str | None]:
    def substitute(found: list[Word]) -> str | None:
        parts = commands(found)
        first = [w.text for w in parts[0]] if parts else []
        if not first or not all(w.known for w in parts[0]):
            return None
        output = host if first[0] == "hostname" else scheduler.command_output(first, env)
        if first[0] == "echo":
            output = " ".join(first[1:])
        for command in parts[1:]:
            texts = [w.text for w in command]
            if output is None or texts not in (
                ["head", "-n", "1"],
                ["head", "-1"],
                ["head", "-n1"],
            ):
                return None
            output = output.split("\n")[0]
        return output

    return substitute


def predict(physical: Sequence[str], read: Directives, scheduler: Detector) -> Prediction:
    """What the body of the script ``physical`` (its lines) starts, given its directives."""
    found: list[tuple[int, Finding]] = []
    alloc = Allocation.model_validate(scheduler.allocation(read, found))
    result = Prediction(alloc, findings=found)
    nodes = alloc.nodes or 1
    tasks_per_node = alloc.tasks_per_node
    if tasks_per_node is None and alloc.ntasks is not None:
        if alloc.ntasks == nodes:
            tasks_per_node = 1
        elif alloc.nodes is not None:
            found.append((alloc.lines.get("ntasks", 0), _ntasks_only(alloc.ntasks, nodes)))
    batch = slurm_env(
        nodes,
        tasks_per_node,
        step="batch",
        gpus_per_node=alloc.gpus_per_node,
        cpus_per_task=alloc.cpus_per_task,
        job_name=alloc.job_name,
    )
    variables = {name: (value, True) for name, value in batch.items()}
    shell = Shell(alloc, tasks_per_node, variables, scheduler)
    body = lines(list(physical), read.body)
    started = False
    for line in body:
        started |= _line(line, shell, result)
    if not started and (nodes > 1 or (tasks_per_node or 1) > 1):
        last = body[-1].number if body else len(physical)
        found.append((last, _no_launcher(nodes, "no line of the script starts a launcher")))
    return result


def _ntasks_only(ntasks: int, nodes: int) -> Finding:
    return Finding(
        id="slurm.ntasks-without-per-node",
        message=f"--ntasks={ntasks} over {nodes} nodes without --ntasks-per-node: Slurm places "
        "the tasks by the nodes' free CPUs (2 nodes, 4 tasks may be 3 + 1), and Lightning "
        "reads the tasks of one node as its device count",
        fix=f"ask --ntasks-per-node={max(1, ntasks // nodes)} instead of --ntasks",
    )


def _no_launcher(nodes: int, what: str) -> Finding:
    return Finding(
        id="slurm.no-launcher",
        message=f"{what}: the job script runs on the first of its {nodes} node(s) only, so "
        "one process trains there and the rest of the allocation idles",
        fix="start the ranks with srun (srun python train.py), or one torchrun per node "
        "(srun --ntasks-per-node=1 torchrun --nnodes=$SLURM_JOB_NUM_NODES ...)",
    )


def _line(line: Line, shell: Shell, result: Prediction) -> bool:
    """Read one logical line of the batch shell; whether it starts a launch."""
    host = shell.value("SLURMD_NODENAME") or "the first node"
    try:
        found = words(line.text, shell.value, _substitute(shell.exported(), host, shell.scheduler))
    except Unreadable as error:
        result.not_modelled.append(
            NotModelled(line=line.number, text=shorten(line.text), why=str(error))
        )
        return False
    started = False
    for command in commands(found):
        first = command[0].text
        if first in _BLOCKS or first.endswith("()") or first == "function":
            shell.depth += 1
        if shell.depth:
            if launcher_of([w.text for w in command]) is not None:
                why = "a launch in a loop, a condition or a function: decided at run time"
                result.not_modelled.append(
                    NotModelled(line=line.number, text=shorten(line.text), why=why)
                )
                started = True
            if first in _ENDS or first == "}":
                shell.depth -= 1
            continue
        started |= _command(line, command, shell, result)
    return started


def _assign(command: list[Word], shell: Shell, export: bool) -> None:
    for word in command:
        name, equals, value = word.text.partition("=")
        if name.isidentifier():
            was = shell.variables.get(name, ("", False))[1]
            if equals:
                shell.variables[name] = (value, export or was)
            elif export and name in shell.variables:
                shell.variables[name] = (shell.variables[name][0], True)


def _command(line: Line, command: list[Word], shell: Shell, result: Prediction) -> bool:
    prefix: dict[str, str] = {}
    while command and "=" in command[0].text and command[0].text.partition("=")[0].isidentifier():
        name, _, value = command[0].text.partition("=")
        prefix[name] = value
        command = command[1:]
    if not command:
        _assign([Word(f"{k}={v}") for k, v in prefix.items()], shell, export=False)
        return False
    if command[0].text == "export":
        _assign(command[1:], shell, export=True)
        return False
    while command and command[0].text in _WRAPPERS:
        command = command[1:]
    texts = [w.text for w in command]
    launcher = launcher_of(texts)
    if launcher is None:
        return False
    said = [*unset(command, shell.variables), *not_exported(line.text, shell.variables)]
    result.findings += [(line.number, finding) for finding in said]
    if launcher == "srun":
        srun(line, texts, shell, result, prefix)
    elif launcher == "mpirun":
        why = "mpirun/mpiexec in the job: its placement is not modelled yet"
        result.not_modelled.append(NotModelled(line=line.number, text=shorten(line.text), why=why))
    else:
        _batch_launch(line, texts, shell, result, launcher=launcher, prefix=prefix)
    return True


def _batch_launch(
    line: Line,
    texts: list[str],
    shell: Shell,
    result: Prediction,
    *,
    launcher: str,
    prefix: dict[str, str],
) -> None:
    """A launcher or python started once, in the batch shell (on the first node)."""
    env = {**shell.exported(), **prefix}
    nodes = shell.alloc.nodes or 1
    try:
        spec, found = judge(env, texts)
    except ClusterEnvError as error:
        result.findings.append((line.number, refused(error)))
        return
    result.findings += [(line.number, f) for f in found if f.level != "info"]
    result.findings += [(line.number, f) for f in contradictions(texts, spec)]
    counted = counts(texts, shell.alloc.gpus_per_node) if launcher == "torchrun" else None
    workers = 1 if counted is None else counted[1]
    if launcher == "python" and (nodes > 1 or (shell.tasks_per_node or 1) > 1):
        result.findings.append(
            (line.number, _no_launcher(nodes, "python starts once, in the batch step"))
        )
    gpus = shell.alloc.gpus_per_node or 0
    ranks = [Rank(rank=r, local_rank=r, gpus=[str(g) for g in range(gpus)]) for r in range(workers)]
    result.launches.append(
        Predicted(
            line=line.number,
            command=shorten(" ".join(texts)),
            launcher=launcher,
            nodes=1,
            ranks_per_node=workers,
            world_size=workers,
            gpus_per_rank=gpus or None,
            main_address=spec.master_addr,
            main_port=spec.master_port,
            map=[NodeMap(node=0, gpus=gpus or None, ranks=ranks)],
        )
    )
