"""Flux tasks, from the variables flux-environment(7) documents (FLUX_JOB_ID, FLUX_JOB_SIZE,
FLUX_JOB_NNODES, FLUX_TASK_RANK, FLUX_TASK_LOCAL_ID)."""

from __future__ import annotations

from typing import Any

import pytest

import clusterenv.lightning as cl
from clusterenv import InconsistentEnvironmentError, MissingVariableError
from clusterenv._rules import PORT_BASE, PORT_SPAN, job_port
from clusterenv.testing import flux_env
from tests.available import require_modules
from tests.envs import detect, fields


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (
            flux_env(2, 4, 5, master_addr="n1"),
            {"num_nodes": 2, "devices_per_node": 4, "world_size": 8, "global_rank": 5}
            | {"local_rank": 1, "node_rank": 1, "master_addr": "n1"},
        ),
        (
            flux_env(1, 2, 1),
            {"num_nodes": 1, "devices_per_node": 2, "world_size": 2, "global_rank": 1}
            | {"local_rank": 1, "node_rank": 0, "master_addr": "127.0.0.1"},
        ),
    ],
    ids=["2x4", "one-node"],
)
def test_geometry(env: dict[str, str], expected: dict[str, Any]) -> None:
    expected = expected | {"source": "flux", "role": "rank", "hostnames": ()}
    assert fields(detect(env), expected) == expected


@pytest.mark.parametrize(
    ("env", "error", "words"),
    [
        (flux_env(2, 2, 3), MissingVariableError, "flux run --env=MASTER_ADDR"),
        (
            flux_env(2, 2, 1) | {"FLUX_JOB_SIZE": "3"},
            InconsistentEnvironmentError,
            "do not divide evenly",
        ),
    ],
    ids=["multi-node-no-addr", "uneven"],
)
def test_wrong_but_common_environments(env: dict[str, str], error: type[Any], words: str) -> None:
    with pytest.raises(error, match="HINT") as raised:
        detect(env)
    assert words in str(raised.value)


def test_ports_derive_from_the_job_id_in_every_rank() -> None:
    """Two jobs on one node must not meet on one port; all ranks of a job must agree."""
    ports = {detect(flux_env(1, 2, rank, job_id="f2Xb8GNp3")).master_port for rank in (0, 1)}
    assert len(ports) == 1
    assert ports != {detect(flux_env(1, 2, 0, job_id="f2Xb8GNp4")).master_port}
    assert job_port("4242.pbs01") == job_port("4242") == PORT_BASE + 4242
    assert all(PORT_BASE <= job_port(f"f{n}x") < PORT_BASE + PORT_SPAN for n in range(500))


def test_the_lightning_adapter_takes_flux_ranks() -> None:
    require_modules("lightning")
    kwargs = cl.trainer_kwargs(detect(flux_env(2, 4, 5, master_addr="n1")), package="lightning")
    assert (kwargs["num_nodes"], kwargs["devices"], kwargs["strategy"]) == (2, 4, "ddp")
