"""Kubernetes Indexed Jobs, alone or in a JobSet: the pods of a Job with ``completionMode:
Indexed``, one process (the container's command) in each.

Kubernetes sets ``JOB_COMPLETION_INDEX`` in every container of such a pod and names the pod
``<job>-<index>`` (its hostname, ``HOSTNAME``); a JobSet's Jobs are ``<jobset>-<replicated
job>-<job index>``, and its headless service, the pods' subdomain, is named after the JobSet
("Indexed Job" in the Kubernetes Job documentation; the JobSet documentation's PyTorch
example, whose ``MASTER_ADDR`` is ``<jobset>-workers-0-0.<jobset>``). Nothing in a pod says
how many pods its Job has (JAX's ``k8s_cluster.py`` asks the API server for the Job's
``parallelism``): the job spec says it in ``PET_NNODES``, the variable torchrun reads as
``--nnodes``, so that a torchrun in the pod and clusterenv agree. A ``WORLD_SIZE`` there
instead is ambiguous (frameworks set it per pod, torch per process): an error says so.

The node is the pod's index in its Job (a replicated job of several Jobs is numbered per
Job, as JAX reads it). The main address is ``MASTER_ADDR``, else, in a JobSet whose pods
name it (``JOBSET_NAME`` from the downward API, as its documentation shows), pod 0 of this
Job in the JobSet's service; a plain Indexed Job needs ``MASTER_ADDR`` (its service has no
variable). Each pod runs one process per GPU it sees: the command is the ``node`` process,
whose ranks torchrun or Lightning start. A Kubeflow Trainer pod (``PET_NODE_RANK``) is
Kubeflow's. Proof: the Kubernetes and JobSet documentation; not run here.
"""

from __future__ import annotations

from collections.abc import Mapping

from clusterenv._core.reader import EnvReader
from clusterenv._core.safe import shorten
from clusterenv._core.spec import Source
from clusterenv.exceptions import MissingVariableError
from clusterenv.sources._detector import Detector, Fields, Gpus, Hints, Kind, Roles
from clusterenv.sources._geometry import node_fields

__all__ = ["DETECTOR", "KubernetesDetector"]

_HINT = "Kubernetes sets JOB_COMPLETION_INDEX in every pod of an Indexed Job"
_COUNT_HINT = (
    "set PET_NNODES (torchrun's --nnodes) to the Job's completions in the pod template's env"
)


class KubernetesDetector(Detector):
    source = Source.KUBERNETES
    kind = Kind.PLATFORM
    name = "Kubernetes Indexed Job"
    reason = "JOB_COMPLETION_INDEX is set in a pod: a pod of an Indexed Job (or a JobSet)"
    proof = (
        "documented: [Kubernetes, Indexed "
        "Job](https://kubernetes.io/docs/concepts/workloads/controllers/job/#completion-mode) "
        "(`JOB_COMPLETION_INDEX`, pod host names `<job>-<index>`) and "
        "[JobSet](https://jobset.sigs.k8s.io/docs/) (`JOBSET_NAME`, the headless service of the"
        " JobSet)"
    )
    variables = ("JOB_COMPLETION_INDEX", "PET_NNODES", "JOBSET_NAME", "JOBSET_RESTART_ATTEMPT")
    #: The pod's name, a generic variable elsewhere.
    shared_variables = ("HOSTNAME",)
    launch_keys = ("JOBSET_NAME", "JOBSET_RESTART_ATTEMPT")
    launcher = "torchrun"
    per_node = True
    roles = Roles(rank="a pod of an Indexed Job", node="a pod of an Indexed Job, before its ranks")
    hints = Hints(
        num_nodes="change the Job's completions and parallelism (and PET_NNODES with them)",
        devices="change the pods' GPU requests (nvidia.com/gpu), or torchrun --nproc_per_node",
        main="set MASTER_ADDR to pod 0 in the Job's headless service, <job>-0.<service>, in "
        "the pod template's env",
    )

    def present(self, env: Mapping[str, str]) -> bool:
        pod = "KUBERNETES_SERVICE_HOST" in env and "JOB_COMPLETION_INDEX" in env
        return pod and "PET_NODE_RANK" not in env

    def read(self, reader: EnvReader, gpus: Gpus) -> Fields:
        env = reader.env
        if "PET_NNODES" not in env and "WORLD_SIZE" in env:
            raise MissingVariableError(
                f"a pod of an Indexed Job with WORLD_SIZE={shorten(env['WORLD_SIZE'])!r} but "
                "no PET_NNODES: WORLD_SIZE may count pods or processes",
                variables=("PET_NNODES", "WORLD_SIZE", "JOB_COMPLETION_INDEX"),
                hint=_COUNT_HINT,
            )
        nodes = reader.integer("num_nodes", "PET_NNODES", hint=_COUNT_HINT, minimum=1)
        node = reader.integer("node_rank", "JOB_COMPLETION_INDEX", hint=_HINT, maximum=nodes - 1)
        # The pod's name, <job>-<index>, unless its template sets another hostname.
        job, dash, index = env.get("HOSTNAME", "").strip().rpartition("-")
        named = bool(dash and job) and index == str(node)
        jobset = reader.optional("job_id", "JOBSET_NAME")
        if jobset is None and named:
            reader.note("job_id", "HOSTNAME")
        hosts = tuple(f"{job}-{i}" for i in range(nodes)) if named else ()
        if hosts:
            reader.note("hostnames", "HOSTNAME", "PET_NNODES")
        fields: Fields = {
            **node_fields(reader, gpus, nodes, node),
            "hostnames": hosts,
            "job_id": jobset or (job if named else None),
        }
        if jobset and named:  # pod 0 in the JobSet's headless service, named for it
            reader.note("master_addr", "HOSTNAME", "JOBSET_NAME")
            fields["master_addr"] = f"{job}-0.{jobset}"
        return fields


DETECTOR = KubernetesDetector()
