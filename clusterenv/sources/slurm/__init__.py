"""Slurm: tasks of an srun step, the batch step of an sbatch script, and salloc shells.

Which of the three this process is follows from the variables Slurm sets, never from
the job name (salloc names its jobs ``interactive`` and their srun steps inherit it):

* **srun step** (``SLURM_STEP_ID`` set): one task of ``world_size``. The geometry is the
  step's (``SLURM_STEP_NUM_NODES``, ``SLURM_STEP_NUM_TASKS``, ``SLURM_STEP_TASKS_PER_NODE``,
  ``SLURM_STEP_NODELIST``) because in a step smaller than its job some plain ``SLURM_*``
  variables still describe the job; ranks come from ``SLURM_PROCID``/``LOCALID``/``NODEID``.
* **batch step** (``SLURM_PROCID`` set but no ``SLURM_STEP_ID``) and **salloc shell** (neither
  set): one process that describes the allocation. Its ranks are 0 and the world size is
  what an ``srun`` over the allocation should start: ``--ntasks-per-node`` if given, else the
  tasks of ``-n`` as Slurm placed them, else one rank per GPU, else one task per node (what
  a bare ``srun`` starts: without a task count ``SLURM_TASKS_PER_NODE`` counts CPUs, e.g. a
  core's two hyperthreads or a whole ``--exclusive`` node).

The main address is task 0's node (``MASTER_ADDR`` overrides): the first host of the node
list, or under ``--distribution=arbitrary`` the first line of ``SLURM_HOSTFILE``; the main
port is ``MASTER_PORT`` or derived from the job id (the shared rules:
:mod:`clusterenv._engine.rules`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from clusterenv._core.finding import Finding
from clusterenv._core.reader import EnvReader, parse_integer
from clusterenv._core.safe import shorten
from clusterenv._core.spec import Accelerator, ResourceSpec, Role, Source
from clusterenv.exceptions import HostlistError, InconsistentEnvironmentError, MissingVariableError
from clusterenv.hostlist import count_hosts, expand_hostlist
from clusterenv.sources._detector import Detector, Fields, Gpus, Hints, Kind, Roles
from clusterenv.sources._script import Directives, Options
from clusterenv.sources.slurm._findings import FINDING_IDS, NTASKS, slurm_findings
from clusterenv.sources.slurm._main_address import main_address_findings
from clusterenv.sources.slurm._placement import rank_zero_node
from clusterenv.sources.slurm._resources import granted_cpus, slurm_gpus
from clusterenv.sources.slurm._values import TaskLayout, at_most, het, parse_gpu_count

__all__ = ["DETECTOR", "SlurmDetector", "TaskLayout", "parse_gpu_count"]

_HINT = "Slurm sets this inside a job; run the script under sbatch, salloc or srun"
_STEP_HINT = "Slurm sets this in every srun task; launch the ranks with srun"
#: An srun task: SLURM_STEPID is the old spelling, still set beside SLURM_STEP_ID.
_STEP = ("SLURM_STEP_ID", "SLURM_STEPID")


class SlurmDetector(Detector):
    source = Source.SLURM
    kind = Kind.SCHEDULER
    directive = "#SBATCH"
    name = "Slurm"
    reason = "SLURM_JOB_ID is set: inside a Slurm job"
    proof = (
        "live: Slurm 22.05.8 (Debian 12) and 24.11.5 (Debian trixie), every launch shape of "
        "`tests/launchers/test_launches.py` on both, `srun --mpi=pmi2`/`pmix`/`cray_shasta`, "
        "`--distribution=arbitrary` with `SLURM_HOSTFILE`, heterogeneous jobs and salloc "
        "shells; both releases also across three emulated hosts with one slurmd per host at its"
        " own address (srun, DDP, the probe, an arbitrary distribution)"
    )
    variables = ("SLURM_", "SLURMD_", "ENVIRONMENT")
    node_name_variables = ("SLURMD_NODENAME",)
    finding_ids = FINDING_IDS
    launch_keys = (
        "SLURM_JOB_ID",
        "SLURM_STEP_ID",
        "SLURM_SRUN_COMM_PORT",
        "SLURM_STEP_LAUNCHER_PORT",
    )
    launcher = "srun"
    roles = Roles(
        rank="the srun step of job{job}",
        batch="the batch step of an sbatch script (job{job})",
        shell="the salloc shell of job{job}",
    )
    hints = Hints(
        num_nodes="change #SBATCH --nodes / srun -N",
        devices="start one task per device: #SBATCH --ntasks-per-node=N with --gpus-per-node=N",
        uneven="use --ntasks-per-node instead of --ntasks",
        gpus="let every task see all GPUs of its node (srun --gpu-bind=none, "
        "--gpus-per-node instead of --gpus-per-task)",
        mpi="srun --mpi=pmix (Slurm then names the nodes), or keep --ntasks-per-node",
    )
    version_command = ("srun", "--version")  # "slurm 24.11.5"

    def present(self, env: Mapping[str, str]) -> bool:
        return "SLURM_JOB_ID" in env or "SLURM_JOBID" in env

    def runs_task(self, env: Mapping[str, str]) -> bool:
        return self.present(env) and any(name in env for name in _STEP)

    def read(self, reader: EnvReader, gpus: Gpus) -> Fields:
        job_id = reader.text("job_id", "SLURM_JOB_ID", "SLURM_JOBID", hint=_HINT)
        # Slurm's job ids are integers: anything else was set by hand.
        parse_integer(reader.first("job_id"), job_id, hint=_HINT)
        step = any(name in reader.env for name in _STEP)
        procid = reader.env.get("SLURM_PROCID")
        if not step and procid is not None and procid.strip() != "0":
            raise InconsistentEnvironmentError(
                f"SLURM_PROCID={shorten(procid)!r} without SLURM_STEP_ID: neither an srun task "
                "(which has SLURM_STEP_ID) nor the batch step (whose SLURM_PROCID is 0), so two "
                "processes could both believe they are rank 0",
                variables=("SLURM_PROCID", "SLURM_STEP_ID"),
                hint="start the ranks with srun, and do not export SLURM_PROCID by hand",
            )
        batch = not step and procid is not None
        # The shell runs on the submit host: its GPUs are not the allocation's.
        vendor, devices = gpus.visible() if step or batch else (None, ())
        if step:
            fields, granted = self._step(reader)
        else:
            fields, granted = self._allocation(reader, len(devices))
        if fields["role"] is Role.SHELL:
            count = granted or 0
        else:
            if granted is None:
                reader.derive("gpus_per_node", "visible_devices")
            count = len(devices) if granted is None else granted
        return {
            **fields,
            "job_id": job_id,
            "accelerator": Accelerator.GPU if count else Accelerator.CPU,
            "gpus_per_node": count,
            "visible_devices": devices,
            "gpu_vendor": vendor if count else None,
            "cpus_per_rank": granted_cpus(reader),
        }

    def main_address(self, reader: EnvReader, fields: Fields) -> str:
        return rank_zero_node(reader, fields["hostnames"], step=fields["role"] is Role.RANK)

    def diagnose(
        self, spec: ResourceSpec, env: Mapping[str, str], present: Sequence[Detector]
    ) -> list[Finding]:
        return slurm_findings(self, spec, env, present)

    def main_address_findings(
        self, spec: ResourceSpec, env: Mapping[str, str], named: str, given: str
    ) -> list[Finding]:
        return main_address_findings(spec, env, named, given)

    # Only `clusterenv check` reads a job script: detection never loads what it needs
    # (its option tables, subprocess for sbatch --test-only).
    def directives(
        self, physical: Sequence[str], env: Mapping[str, str], argv: Sequence[str]
    ) -> Directives:
        from clusterenv.sources.slurm import _script  # noqa: PLC0415

        return _script.directives(physical, env, argv)

    def options(self, words: Sequence[str], line: int, command: str) -> Options:
        from clusterenv.sources.slurm import _script  # noqa: PLC0415

        return _script.options(words, line, command=command, stop=True)

    def allocation(
        self, read: Directives, found: list[tuple[int, Finding]]
    ) -> dict[str, int | str | dict[str, int] | None]:
        from clusterenv.sources.slurm import _allocation  # noqa: PLC0415

        return _allocation.allocation(read, found)

    def command_output(self, words: Sequence[str], env: Mapping[str, str]) -> str | None:
        from clusterenv.sources.slurm import _script  # noqa: PLC0415

        return _script.command_output(words, env)

    def test_submit(self, path: str, argv: Sequence[str]) -> tuple[str, list[Finding]] | None:
        from clusterenv.sources.slurm import _script  # noqa: PLC0415

        verdict = _script.test_only(path, argv)
        return None if verdict is None else (verdict, _script.test_only_findings(verdict))

    def _step(self, reader: EnvReader) -> tuple[Fields, int | None]:
        """One task of an srun step: the step's geometry, this task's ranks."""
        num_nodes = reader.integer(
            "num_nodes", "SLURM_STEP_NUM_NODES", "SLURM_NNODES", hint=_STEP_HINT, minimum=1
        )
        world_size = reader.integer(
            "world_size", "SLURM_STEP_NUM_TASKS", *NTASKS, hint=_STEP_HINT, minimum=1
        )
        node_rank = reader.integer("node_rank", "SLURM_NODEID", hint=_STEP_HINT)
        layout = self._layout(reader, "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE")
        self._check_layout(reader, layout, num_nodes, reader.first("world_size"))
        tasks_here = layout.on_node(node_rank) if node_rank < num_nodes else 1
        reader.note("devices_per_node", layout.name, "SLURM_NODEID")
        fields: Fields = {
            "role": Role.RANK,
            "num_nodes": num_nodes,
            "world_size": world_size,
            "devices_per_node": tasks_here,
            "global_rank": reader.integer("global_rank", "SLURM_PROCID", hint=_STEP_HINT),
            "local_rank": reader.integer("local_rank", "SLURM_LOCALID", hint=_STEP_HINT),
            "node_rank": node_rank,
            "hostnames": self._hostnames(
                reader, num_nodes, "SLURM_STEP_NODELIST", "SLURM_NODELIST", "SLURM_JOB_NODELIST"
            ),
        }
        return fields, slurm_gpus(reader, tasks_here)

    def _allocation(self, reader: EnvReader, visible: int) -> tuple[Fields, int | None]:
        """The batch step or the salloc shell: describe what srun should start. In a
        heterogeneous job (only ``*_HET_GROUP_N`` geometry) that is component 0."""
        if not reader.lookup(*het("SLURM_JOB_NUM_NODES", "SLURM_NNODES", "SLURM_JOB_NODELIST")):
            job = reader.value(reader.first("job_id"))
            raise MissingVariableError(
                f"{reader.first('job_id')}={shorten(job)!r} is set, but none of the variables "
                "Slurm gives the processes of a job (SLURM_JOB_NUM_NODES, SLURM_JOB_NODELIST, "
                "SLURM_STEP_ID): this process is not part of that job — an ssh session into "
                "one of its nodes, or a job id exported by hand",
                variables=(reader.first("job_id"),),
                hint=f"start the ranks inside the job: srun --jobid={shorten(job)} --overlap "
                "python train.py (or sbatch); or unset SLURM_JOB_ID",
            )
        num_nodes = reader.integer(
            "num_nodes", *het("SLURM_JOB_NUM_NODES", "SLURM_NNODES"), hint=_HINT, minimum=1
        )
        layout, ntasks = None, None
        if reader.lookup(*het("SLURM_TASKS_PER_NODE")):
            layout = self._layout(reader, *het("SLURM_TASKS_PER_NODE"))
            # A het job's SLURM_NTASKS counts every component; its list is component 0's.
            component = layout.name.removeprefix("SLURM_TASKS_PER_NODE")
            names = (f"SLURM_NTASKS{component}",) if component else NTASKS
            ntasks = next((name for name in names if name in reader.env), None)
            self._check_layout(reader, layout, num_nodes, ntasks)
        tasks_here = layout.on_node(0) if layout else 1
        gpus = slurm_gpus(reader, tasks_here)
        if reader.lookup("SLURM_NTASKS_PER_NODE"):
            per_node = reader.integer(
                "devices_per_node", "SLURM_NTASKS_PER_NODE", hint=_HINT, minimum=1
            )
            world_size = per_node * num_nodes
        elif layout and ntasks:  # -n: the tasks as Slurm placed them
            per_node, world_size = tasks_here, layout.num_tasks
            reader.note("devices_per_node", layout.name)
        elif gpus:
            per_node, world_size = gpus, gpus * num_nodes
            reader.derive("devices_per_node", "gpus_per_node")
        elif visible:  # GPUs seen without gres: still one rank per GPU
            per_node, world_size = visible, visible * num_nodes
            reader.derive("devices_per_node", "visible_devices")
        else:  # without a task count SLURM_TASKS_PER_NODE counts CPUs; srun starts one task
            per_node, world_size = 1, num_nodes
            reader.derive("devices_per_node", "num_nodes")
        reader.derive("world_size", "devices_per_node", "num_nodes")
        fields: Fields = {
            "role": Role.BATCH if "SLURM_PROCID" in reader.env else Role.SHELL,
            "num_nodes": num_nodes,
            "world_size": world_size,
            "devices_per_node": per_node,
            "global_rank": 0,
            "local_rank": 0,
            "node_rank": 0,
            "hostnames": self._hostnames(
                reader, num_nodes, *het("SLURM_JOB_NODELIST", "SLURM_NODELIST")
            ),
        }
        return fields, gpus

    @staticmethod
    def _layout(reader: EnvReader, *names: str) -> TaskLayout:
        value = reader.text("devices_per_node", *names, hint=_HINT)
        return TaskLayout(reader.first("devices_per_node"), value)

    @staticmethod
    def _check_layout(
        reader: EnvReader, layout: TaskLayout, num_nodes: int, tasks_name: str | None
    ) -> None:
        """The task list must cover ``num_nodes`` nodes and sum to the task count."""
        nodes_name = reader.first("num_nodes")
        problem = None
        if layout.num_nodes != num_nodes:
            shown = shorten(reader.env[nodes_name])
            problem = f"lists {layout.num_nodes} nodes but {nodes_name}={shown!r}"
        elif tasks_name and layout.num_tasks != parse_integer(
            tasks_name, reader.env[tasks_name], hint=_HINT, minimum=1
        ):
            shown = shorten(reader.env[tasks_name])
            problem = f"sums to {layout.num_tasks} tasks but {tasks_name}={shown!r}"
        if problem:
            raise InconsistentEnvironmentError(
                f"{layout.name}={shorten(layout.value)!r} {problem}",
                variables=(layout.name, nodes_name, *((tasks_name,) if tasks_name else ())),
                hint="Slurm sets these together for one step; do not set them by hand",
            )

    @staticmethod
    def _hostnames(reader: EnvReader, num_nodes: int, *names: str) -> tuple[str, ...]:
        nodelist = reader.text("hostnames", *names, hint=_HINT)
        name, nodes_name = reader.first("hostnames"), reader.first("num_nodes")
        try:
            count = count_hosts(nodelist)  # before expanding: a hostile count must not allocate
        except HostlistError as error:
            raise HostlistError(f"{name}: {error}", variables=(name,)) from None
        if count != num_nodes:
            raise InconsistentEnvironmentError(
                f"{name}={shorten(nodelist)!r} names {at_most(count)} hosts but "
                f"{nodes_name}={shorten(reader.env[nodes_name])!r}",
                variables=(name, nodes_name),
                hint="Slurm sets these together for one step; do not set them by hand",
            )
        return tuple(expand_hostlist(nodelist))


DETECTOR = SlurmDetector()
