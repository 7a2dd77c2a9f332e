"""Volcano jobs (``batch.volcano.sh``) on Kubernetes: the pods of a job's tasks, one
process (the container's command) in each.

Read as Volcano's job plugins write them (``pkg/controllers/job/plugins``, documented in
"Job plugins" and the plugins' user guides): the ``svc`` plugin sets ``VC_<TASK>_HOSTS``
(the DNS names of the task's pods, ``<job>-<task>-<index>.<job>``, comma-separated) and
``VC_<TASK>_NUM``; the ``env`` plugin ``VC_TASK_INDEX`` (and ``VK_TASK_INDEX``), the pod's
index in its own task; the ``pytorch`` plugin ``MASTER_ADDR``, ``MASTER_PORT``, and
``RANK``/``WORLD_SIZE`` counted in *pods* (the master task's pod 0, then the workers):
per pod, not per process, whatever the names suggest.

With the ``pytorch`` plugin the node is ``RANK`` over the pods of all tasks; without it,
a job of one task is read from that task's hosts and ``VC_TASK_INDEX``, and a job of
several tasks is ambiguous (no variable says which task is this pod's, or their order):
an error says so. Each pod runs one process per GPU it sees: the command is the ``node``
process, whose ranks torchrun or Lightning start. The port is ``MASTER_PORT``, else 29500
(every pod has its own address). Proof: Volcano's documentation and plugin code; not run
here.
"""

from __future__ import annotations

from collections.abc import Mapping

from clusterenv._core.reader import EnvReader, host_names
from clusterenv._core.safe import shorten
from clusterenv._core.spec import Source
from clusterenv.exceptions import InconsistentEnvironmentError, MissingVariableError
from clusterenv.sources._detector import Detector, Fields, Gpus, Hints, Kind, Roles
from clusterenv.sources._geometry import node_fields

__all__ = ["DETECTOR", "VolcanoDetector"]

_HINT = "Volcano's svc, env and pytorch job plugins set this in every pod of the job"


def _tasks(env: Mapping[str, str]) -> dict[str, str]:
    """``VC_<TASK>_HOSTS`` variable -> its task's ``VC_<TASK>_NUM`` variable."""
    return {
        name: name.removesuffix("_HOSTS") + "_NUM"
        for name in env
        if name.startswith("VC_") and name.endswith("_HOSTS")
    }


class VolcanoDetector(Detector):
    source = Source.VOLCANO
    kind = Kind.PLATFORM
    name = "Volcano"
    reason = "VC_<TASK>_HOSTS is set: a pod of a Volcano job (svc plugin)"
    proof = (
        "documented: [Volcano job plugins](https://volcano.sh/en/docs/job_plugins/) (`svc`, "
        "`env`, `pytorch`)"
    )
    variables = ("VC_", "VK_TASK_INDEX")
    launcher = "torchrun"
    per_node = True
    roles = Roles(rank="a Volcano pod", node="a Volcano pod, before its ranks")
    hints = Hints(
        num_nodes="change the tasks' replicas",
        devices="change the pods' GPU requests (nvidia.com/gpu), or torchrun --nproc_per_node",
        main="Volcano's pytorch plugin sets MASTER_ADDR with RANK in every pod; export "
        "MASTER_ADDR as the first pod of the master task otherwise",
    )

    def present(self, env: Mapping[str, str]) -> bool:
        return bool(_tasks(env))

    def read(self, reader: EnvReader, gpus: Gpus) -> Fields:
        env = reader.env
        tasks = {}
        for name, count in _tasks(env).items():
            hosts = host_names(name, env[name].split(","), hint=_HINT)
            if count in env and env[count].strip() != str(len(hosts)):
                raise InconsistentEnvironmentError(
                    f"{name} lists {len(hosts)} pods but {count}={shorten(env[count])!r}",
                    variables=(name, count),
                    hint=_HINT,
                )
            tasks[name] = hosts
        if "RANK" in env:  # the pytorch plugin: pods counted over all tasks
            nodes = sum(len(hosts) for hosts in tasks.values())
            reader.note("num_nodes", *tasks)
            node = reader.integer("node_rank", "RANK", hint=_HINT, maximum=nodes - 1)
            self._agree(reader, nodes)
            hostnames = self._ordered(tasks, env.get("MASTER_ADDR", "").strip(), nodes)
        elif len(tasks) == 1:
            ((name, hostnames),) = tasks.items()
            nodes = len(hostnames)
            reader.note("num_nodes", name)
            node = reader.integer(
                "node_rank", "VC_TASK_INDEX", "VK_TASK_INDEX", hint=_HINT, maximum=nodes - 1
            )
        else:
            raise MissingVariableError(
                f"a Volcano job of {len(tasks)} tasks ({', '.join(sorted(tasks))}) whose pods "
                "name no rank: which task is this pod's, and their order, is unknown",
                variables=("RANK", *sorted(tasks)),
                hint="add the pytorch plugin (plugins: pytorch: [--master=..., --worker=...]), "
                "which numbers the pods, or run one task",
            )
        fields: Fields = {**node_fields(reader, gpus, nodes, node), "hostnames": hostnames}
        if hostnames:
            reader.note("hostnames", *tasks)
            reader.derive("master_addr", "hostnames")
            fields["master_addr"] = hostnames[0]
        return fields

    @staticmethod
    def _agree(reader: EnvReader, nodes: int) -> None:
        """The pytorch plugin's ``WORLD_SIZE`` counts the pods (unless a framework's rank
        started on this node has replaced it: ``LOCAL_RANK`` set)."""
        stated = reader.env.get("WORLD_SIZE")
        if stated is None or "LOCAL_RANK" in reader.env or stated.strip() == str(nodes):
            return
        raise InconsistentEnvironmentError(
            f"WORLD_SIZE={shorten(stated)!r} but the job's tasks list {nodes} pods",
            variables=("WORLD_SIZE", *reader.origins["num_nodes"]),
            hint="Volcano's pytorch plugin counts pods in WORLD_SIZE; look for one set by hand",
        )

    @staticmethod
    def _ordered(tasks: dict[str, tuple[str, ...]], master: str, nodes: int) -> tuple[str, ...]:
        """The pods in rank order where it is known: the master's task first, then the other
        one (the plugin's master and worker tasks); ``()`` for more tasks."""
        first = [hosts for hosts in tasks.values() if hosts and master in hosts[:1]]
        rest = [hosts for hosts in tasks.values() if not (hosts and master in hosts[:1])]
        if len(first) != 1 or len(rest) > 1:
            return ()
        ordered = first[0] + (rest[0] if rest else ())
        return ordered if len(ordered) == nodes else ()


DETECTOR = VolcanoDetector()
