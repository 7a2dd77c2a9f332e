"""Flux, LSF, PBS / Torque and Kubeflow, from the variables their documentation lists."""

from __future__ import annotations

from typing import Any

import pytest

import clusterenv.lightning as cl
from clusterenv import (
    ClusterEnvError,
    InconsistentEnvironmentError,
    InvalidVariableError,
    MissingVariableError,
    ResourceSpec,
    detect_environment,
)
from clusterenv._capture import launcher_variables
from clusterenv.sources._geometry import PORT_BASE, PORT_SPAN, job_port
from clusterenv.testing import (
    flux_env,
    kubeflow_env,
    lsf_env,
    mpich_env,
    openmpi_env,
    pbs_env,
    torchrun_env,
)

FIELDS = ("source", "role", "num_nodes", "devices_per_node", "world_size", "global_rank")
PLACE = ("local_rank", "node_rank", "master_addr", "hostnames")


def detect(env: dict[str, str], files: dict[str, str] | None = None) -> ResourceSpec:
    def read(path: str) -> str:
        if files is None or path not in files:
            raise FileNotFoundError(2, "No such file or directory", path)
        return files[path]

    return detect_environment(env, gpu_probe=tuple, read_file=read)


def row(spec: ResourceSpec) -> tuple[Any, ...]:
    values = [getattr(spec, name) for name in FIELDS + PLACE]
    return tuple(v.value if hasattr(v, "value") else v for v in values)


H2 = ("h01", "h02")


@pytest.mark.parametrize(
    ("built", "expected"),
    [
        ((flux_env(2, 4, 5, master_addr="n1"), None), ("flux", "rank", 2, 4, 8, 5, 1, 1, "n1", ())),
        ((flux_env(1, 2, 1), None), ("flux", "rank", 1, 2, 2, 1, 1, 0, "127.0.0.1", ())),
        (
            (kubeflow_env(3, 2), None),
            ("kubeflow", "rank", 3, 1, 3, 2, 0, 2, "pytorchjob-master-0", ()),
        ),
        (pbs_env(2, 4), ("pbs", "batch", 2, 4, 8, 0, 0, 0, "node01", ("node01", "node02"))),
        (
            pbs_env(2, 4, torque=True),
            ("pbs", "batch", 2, 4, 8, 0, 0, 0, "node01", ("node01", "node02")),
        ),
        (lsf_env(2, 4), ("lsf", "batch", 2, 4, 8, 0, 0, 0, "h01", H2)),
        (lsf_env(2, 4, launch_node="batch1"), ("lsf", "batch", 2, 4, 8, 0, 0, 0, "h01", H2)),
        (lsf_env(2, 4, 6), ("lsf", "rank", 2, 4, 8, 6, 2, 1, "h01", H2)),
        (lsf_env(2, 4, 6, launch_node="batch1"), ("lsf", "rank", 2, 4, 8, 6, 2, 1, "h01", H2)),
    ],
    ids=[
        "flux-2x4",
        "flux-one-node",
        "kubeflow",
        "pbs-pro",
        "torque",
        "lsf-script",
        "lsf-script-launch-node",
        "jsrun",
        "jsrun-launch-node",
    ],
)
def test_scheduler_geometry(built: tuple[dict[str, str], Any], expected: tuple[Any, ...]) -> None:
    env, files = built
    assert row(detect(env, files)) == expected


def test_the_mpi_launcher_inside_a_pbs_job_gives_the_ranks() -> None:
    env, files = pbs_env(1, 2)
    assert detect(env | openmpi_env(2, 1), files).source.value == "mpi"
    spec = detect(env | mpich_env(4, 3, ranks_per_node=2, master_addr="node01"), files)
    assert (spec.source.value, spec.node_rank, spec.local_rank) == ("mpi", 1, 1)


def test_torchrun_inside_a_kubeflow_pod_is_torchrun() -> None:
    env = kubeflow_env(2, 1) | torchrun_env(2, 4, 5, master_addr="pytorchjob-master-0")
    spec = detect(env)
    assert (spec.source.value, spec.world_size, spec.node_rank) == ("torchelastic", 8, 1)


@pytest.mark.parametrize(
    ("built", "error", "words"),
    [
        # the common mistakes: no node file, a node file from another job, a bad file
        (({"PBS_JOBID": "4242.pbs01"}, None), MissingVariableError, "PBS_NODEFILE (not set)"),
        ((pbs_env(2, 4)[0], {}), InvalidVariableError, "cannot be read (No such file"),
        (
            (pbs_env(2, 4)[0], {"/var/spool/pbs/aux/4242.pbs01": "\n"}),
            InconsistentEnvironmentError,
            "lists no host",
        ),
        (
            (pbs_env(2, 4, torque=True)[0] | {"PBS_NUM_NODES": "3"}, pbs_env(2, 4)[1]),
            InconsistentEnvironmentError,
            "PBS_NUM_NODES='3'",
        ),
        (({"LSB_JOBID": "42"}, None), MissingVariableError, "LSB_DJOB_HOSTFILE or LSB_MCPU_HOSTS"),
        (
            ({"LSB_JOBID": "42", "LSB_MCPU_HOSTS": "h1 4 h2"}, None),
            InvalidVariableError,
            "'host count' pairs",
        ),
        ((flux_env(2, 2, 3), None), MissingVariableError, "flux run --env=MASTER_ADDR"),
        (
            (flux_env(2, 2, 1) | {"FLUX_JOB_SIZE": "3"}, None),
            InconsistentEnvironmentError,
            "do not divide evenly",
        ),
        (
            ({k: v for k, v in kubeflow_env(2, 1).items() if k != "MASTER_PORT"}, None),
            MissingVariableError,
            "MASTER_PORT",
        ),
    ],
    ids=[
        "pbs-no-nodefile",
        "pbs-nodefile-missing",
        "pbs-nodefile-empty",
        "torque-node-count",
        "lsf-no-hosts",
        "lsf-mcpu-hosts",
        "flux-multi-node-no-addr",
        "flux-uneven",
        "kubeflow-no-port",
    ],
)
def test_wrong_but_common_environments(
    built: tuple[dict[str, str], Any], error: type[ClusterEnvError], words: str
) -> None:
    env, files = built
    with pytest.raises(error, match="HINT") as raised:
        detect(env, files)
    assert words in str(raised.value)


def test_lsf_reads_lsb_mcpu_hosts_without_a_hostfile() -> None:
    env = {"LSB_JOBID": "42", "LSB_MCPU_HOSTS": "batch1 1 h01 4 h02 4"}
    assert row(detect(env)) == ("lsf", "batch", 2, 4, 8, 0, 0, 0, "h01", H2)


def test_the_lightning_adapter_takes_the_new_sources() -> None:
    kwargs = cl.trainer_kwargs(detect(flux_env(2, 4, 5, master_addr="n1")), package="lightning")
    assert (kwargs["num_nodes"], kwargs["devices"], kwargs["strategy"]) == (2, 4, "ddp")
    env, files = pbs_env(2, 4)
    with pytest.raises(
        ClusterEnvError, match=r"job script of a PBS job.*start the ranks with mpirun"
    ):
        cl.trainer_kwargs(detect(env, files), package="lightning")


@pytest.mark.parametrize(
    "env",
    [
        flux_env(2, 2, 1, master_addr="n1"),
        kubeflow_env(2, 1),
        pbs_env(2, 2, torque=True)[0],
        lsf_env(2, 2, 3)[0],
    ],
    ids=["flux", "kubeflow", "torque", "jsrun"],
)
def test_capture_and_test_isolation_know_the_variables(env: dict[str, str]) -> None:
    """`clusterenv capture` records, and the pytest plugin clears, every variable they set."""
    assert set(env) - set(launcher_variables(env)) <= {"PYTHONUNBUFFERED"}


def test_ports_derive_from_the_job_id_in_every_rank() -> None:
    """Two jobs on one node must not meet on one port; all ranks of a job must agree."""
    flux = {detect(flux_env(1, 2, rank, job_id="f2Xb8GNp3")).master_port for rank in (0, 1)}
    assert len(flux) == 1
    assert flux != {detect(flux_env(1, 2, 0, job_id="f2Xb8GNp4")).master_port}
    assert job_port("4242.pbs01") == job_port("4242") == PORT_BASE + 4242
    assert all(PORT_BASE <= job_port(f"f{n}x") < PORT_BASE + PORT_SPAN for n in range(500))
    pbs, files = pbs_env(1, 1, job_id="x.pbs01")  # no number: spread like Flux's ids
    assert detect(pbs, files).master_port == job_port("x.pbs01")
