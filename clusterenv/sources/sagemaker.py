"""Amazon SageMaker training jobs: the entry point that SageMaker starts once on each host
(``algo-1``, ``algo-2``, ...), through the SageMaker training toolkit of its framework
containers.

Read as the toolkit writes them (``sagemaker-training`` 5.1.4,
``src/sagemaker_training/environment.py``, ``Environment.to_env_vars``): ``SM_HOSTS`` (a
JSON list, in the order of the job's resource config, not sorted), ``SM_CURRENT_HOST``,
and ``SM_RESOURCE_CONFIG`` (the JSON of ``/opt/ml/input/config/resourceconfig.json``),
whose ``current_host`` must agree: a ``SM_CURRENT_HOST`` copied from the leader would put
two hosts on one node rank. The leader is the toolkit's ``master_hostname``: the first host
of the instance groups the job distributes over (``SM_DISTRIBUTION_INSTANCE_GROUPS`` in a
heterogeneous cluster), else the first of ``SM_HOSTS``; it is node 0, the others follow in
the toolkit's order. A host outside the distribution groups trains alone.

Each host runs one process per GPU it sees (``SM_NUM_GPUS`` is the toolkit's count of
them): the entry point is the ``node`` process, whose ranks torchrun or Lightning start;
the toolkit's own ``torch_distributed`` mode runs that torchrun itself (its workers are
read by the torchelastic source, which wins), and its ``mpi``/``smdistributed`` modes run
mpirun (the MPI source). The port is ``MASTER_PORT``, else 7777, the toolkit's
(``torch_distributed.py``). Proof: the toolkit's code and the SageMaker documentation
("Environment variables", ``ENVIRONMENT_VARIABLES.md``); not run here.
"""

from __future__ import annotations

from collections.abc import Mapping

from clusterenv._core.reader import EnvReader, host_names, parse_json
from clusterenv._core.safe import shorten
from clusterenv._core.spec import Source
from clusterenv.exceptions import InconsistentEnvironmentError
from clusterenv.sources._detector import Detector, Fields, Gpus, Hints, Kind, Roles
from clusterenv.sources._geometry import node_fields, standalone_fields

__all__ = ["DETECTOR", "SageMakerDetector"]

_HINT = "the SageMaker training toolkit sets this in the training container of every host"
#: The toolkit's torchrun port (``sagemaker_training/torch_distributed.py``).
TOOLKIT_PORT = 7777


class SageMakerDetector(Detector):
    source = Source.SAGEMAKER
    kind = Kind.PLATFORM
    name = "SageMaker"
    reason = "SM_HOSTS and SM_CURRENT_HOST are set: a SageMaker training job's host"
    proof = (
        "documented: the SageMaker training toolkit 5.1.4 (`environment.py`, "
        "[ENVIRONMENT_VARIABLES.md](https://github.com/aws/sagemaker-training-toolkit/blob/master/ENVIRONMENT_VARIABLES.md)):"
        " `SM_HOSTS`, `SM_CURRENT_HOST`, `SM_RESOURCE_CONFIG`"
    )
    variables = (
        "SM_HOSTS",
        "SM_CURRENT_HOST",
        "SM_NUM_GPUS",
        "SM_NUM_CPUS",
        "SM_RESOURCE_CONFIG",
        "SM_NETWORK_INTERFACE_NAME",
        "SM_CURRENT_INSTANCE_TYPE",
        "SM_CURRENT_INSTANCE_GROUP",
        "SM_DISTRIBUTION_INSTANCE_GROUPS",
        "SM_IS_HETERO",
    )
    #: The toolkit's job name, a generic word elsewhere.
    shared_variables = ("TRAINING_JOB_NAME",)
    launch_keys = ("SM_HOSTS", "TRAINING_JOB_NAME")
    launcher = "torchrun"
    per_node = True
    roles = Roles(
        rank="a SageMaker training host",
        node="a SageMaker training host, before its ranks",
        standalone="a SageMaker host outside the distribution instance groups",
    )
    hints = Hints(
        num_nodes="change the estimator's instance_count",
        devices="use an instance type with as many GPUs, or run torchrun --nproc_per_node=N",
        gpus="let the training container see all GPUs of its instance",
    )

    def present(self, env: Mapping[str, str]) -> bool:
        return "SM_HOSTS" in env and "SM_CURRENT_HOST" in env

    def read(self, reader: EnvReader, gpus: Gpus) -> Fields:
        env = reader.env
        hosts = host_names(
            "SM_HOSTS", parse_json("SM_HOSTS", env["SM_HOSTS"], hint=_HINT), hint=_HINT
        )
        current = reader.text("node_rank", "SM_CURRENT_HOST", hint=_HINT)
        config = self._resource_config(reader, hosts, current)
        training = self._distribution_hosts(reader, config) or hosts
        job = reader.optional("job_id", "TRAINING_JOB_NAME")
        reader.origins["master_port"] = ()  # the toolkit's constant, not derived from the job
        common: Fields = {"job_id": job, "master_port": TOOLKIT_PORT}
        if current not in training:
            if current not in hosts:
                raise InconsistentEnvironmentError(
                    f"SM_CURRENT_HOST={shorten(current)!r} is not one of SM_HOSTS "
                    f"({shorten(', '.join(hosts))})",
                    variables=("SM_CURRENT_HOST", "SM_HOSTS"),
                    hint="SageMaker sets both for the job; look for one set by hand",
                )
            return {**common, **standalone_fields(reader, gpus)}
        reader.note("num_nodes", "SM_HOSTS", "SM_DISTRIBUTION_INSTANCE_GROUPS")
        reader.note("node_rank", "SM_CURRENT_HOST", "SM_HOSTS")
        reader.note("hostnames", "SM_HOSTS")
        reader.derive("master_addr", "hostnames")
        return {
            **common,
            **node_fields(reader, gpus, len(training), training.index(current)),
            "hostnames": training,
            "master_addr": training[0],
        }

    @staticmethod
    def _resource_config(
        reader: EnvReader, hosts: tuple[str, ...], current: str
    ) -> Mapping[str, object]:
        """``SM_RESOURCE_CONFIG``, where set; its hosts and current host must be the ones
        ``SM_HOSTS`` and ``SM_CURRENT_HOST`` say."""
        value = reader.env.get("SM_RESOURCE_CONFIG")
        if value is None:
            return {}
        config = parse_json("SM_RESOURCE_CONFIG", value, hint=_HINT)
        if not isinstance(config, dict):
            config = {}
        for key, name, expected in (
            ("current_host", "SM_CURRENT_HOST", current),
            ("hosts", "SM_HOSTS", list(hosts)),
        ):
            if config.get(key, expected) != expected:
                raise InconsistentEnvironmentError(
                    f"{name} says {shorten(str(expected))!r} but SM_RESOURCE_CONFIG's "
                    f"{key} is {shorten(str(config[key]))!r}",
                    variables=(name, "SM_RESOURCE_CONFIG"),
                    hint="SageMaker writes both from the job's resource config; a value "
                    "copied from another host (the leader's) is wrong on this one",
                )
        return config

    @staticmethod
    def _distribution_hosts(reader: EnvReader, config: Mapping[str, object]) -> tuple[str, ...]:
        """The hosts that train in a heterogeneous cluster: those of the instance groups in
        ``SM_DISTRIBUTION_INSTANCE_GROUPS``, in the resource config's order (the toolkit's
        ``get_distribution_hosts``); empty where the job names no groups."""
        value = reader.env.get("SM_DISTRIBUTION_INSTANCE_GROUPS")
        groups = config.get("instance_groups")
        if value is None or not isinstance(groups, list):
            return ()
        names = parse_json("SM_DISTRIBUTION_INSTANCE_GROUPS", value, hint=_HINT)
        if not isinstance(names, list) or not names:
            return ()
        found: list[object] = []
        for group in groups:
            if isinstance(group, dict) and group.get("instance_group_name") in names:
                found += group.get("hosts", [])
        return host_names("SM_RESOURCE_CONFIG", found, hint=_HINT)


DETECTOR = SageMakerDetector()
