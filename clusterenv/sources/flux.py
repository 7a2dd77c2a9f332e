"""Flux: a task of ``flux run`` / ``flux submit`` (``FLUX_TASK_RANK`` set).

Flux names the task counts (``FLUX_JOB_SIZE``, ``FLUX_JOB_NNODES``) but not the node of a
task: it is derived from the ranks per node, as for MPI. The main address is
``MASTER_ADDR`` (one node: the loopback address), the port ``MASTER_PORT`` or derived
from the job id.
"""

from __future__ import annotations

from collections.abc import Mapping

from clusterenv._reader import EnvReader
from clusterenv._spec import Source
from clusterenv.exceptions import InconsistentEnvironmentError
from clusterenv.sources._detector import Detector, Fields, Gpus, Hints
from clusterenv.sources._geometry import rank_fields

__all__ = ["DETECTOR", "FluxDetector"]

_HINT = "Flux sets this in every task; start the ranks with flux run"


class FluxDetector(Detector):
    source = Source.FLUX
    name = "Flux"
    reason = "FLUX_JOB_ID and FLUX_TASK_RANK are set: a Flux task"
    proof = (
        "live: flux-core 0.88.0 (built from source, in a chroot; a test instance of 4 brokers "
        "on one machine): `flux run` over 1, 2 and 4 nodes, `--tasks-per-node`, 2-node "
        "`--taskmap=cyclic`, `flux submit`, `-o pmi=pmi2`; a multi-node launch without "
        "`MASTER_ADDR` is refused. Not yet right (issue 40): `flux batch`/`flux alloc` bodies "
        "(read as local), other taskmaps (wrong node). Documented: "
        "[flux-environment(7)](https://flux-framework.readthedocs.io/projects/flux-core/en/latest/man7/flux-environment.html)"
        "; `cray-pals`: flux-coral2's plugin"
    )
    variables = ("FLUX_",)
    launch_keys = ("FLUX_JOB_ID",)
    launcher = "flux run"
    version_command = ("flux", "version")  # "commands:    0.62.0"
    hints = Hints(
        num_nodes="change flux run -N",
        devices="change flux run --tasks-per-node",
        uneven="flux run -N NODES --tasks-per-node N",
        main="export MASTER_ADDR as the host of rank 0 to every rank, e.g. flux run "
        "--env=MASTER_ADDR=$(hostname) ...",
    )

    def present(self, env: Mapping[str, str]) -> bool:
        return "FLUX_JOB_ID" in env and "FLUX_TASK_RANK" in env

    def runs_task(self, env: Mapping[str, str]) -> bool:
        return self.present(env)  # its cray-pals and PMI plugins set PALS_*, PMI_RANK

    def read(self, reader: EnvReader, gpus: Gpus) -> Fields:
        def integer(field: str, name: str, minimum: int = 0) -> int:
            return reader.integer(field, name, hint=_HINT, minimum=minimum)

        job_id = reader.text("job_id", "FLUX_JOB_ID", hint=_HINT)
        world_size = integer("world_size", "FLUX_JOB_SIZE", minimum=1)
        nodes = integer("num_nodes", "FLUX_JOB_NNODES", minimum=1)
        rank = integer("global_rank", "FLUX_TASK_RANK")
        local_rank = integer("local_rank", "FLUX_TASK_LOCAL_ID")
        per_node, uneven = divmod(world_size, nodes)
        if uneven or not per_node:
            raise InconsistentEnvironmentError(
                f"FLUX_JOB_SIZE={world_size} tasks do not divide evenly over "
                f"FLUX_JOB_NNODES={nodes} nodes",
                variables=("FLUX_JOB_SIZE", "FLUX_JOB_NNODES"),
                hint="start the same number of tasks on every node: flux run -N NODES "
                "--tasks-per-node N",
            )
        reader.note("devices_per_node", "FLUX_JOB_SIZE", "FLUX_JOB_NNODES")
        return {**rank_fields(reader, world_size, rank, local_rank, per_node), "job_id": job_id}


DETECTOR = FluxDetector()
