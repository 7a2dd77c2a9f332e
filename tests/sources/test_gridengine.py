"""Grid Engine job scripts, shaped as Son of Grid Engine 8.1.9 sets them (recorded live:
tests/data/captures/gridengine-*.json)."""

from __future__ import annotations

import pytest

from clusterenv import InconsistentEnvironmentError, InvalidVariableError
from clusterenv._diagnosis.capture import launcher_variables
from clusterenv._engine.rules import job_port
from clusterenv.testing import Launch, gridengine_env
from tests.envs import detect, fields


def test_a_parallel_job_script_describes_what_mpirun_starts() -> None:
    expected = {
        "source": "gridengine",
        "role": "batch",
        "num_nodes": 2,
        "devices_per_node": 4,
        "world_size": 8,
        "hostnames": ("node01", "node02"),
        "master_addr": "node01",
        "master_port": job_port("4242"),
        "job_id": "4242",
    }
    assert fields(detect(gridengine_env(2, 4)), expected) == expected


def test_a_job_without_a_parallel_environment_is_one_process() -> None:
    spec = detect(gridengine_env(pe=None))
    assert (spec.role.value, spec.world_size, spec.master_addr) == ("standalone", 1, "127.0.0.1")
    assert detect(gridengine_env(pe=None), gpus=["0", "1"]).world_size == 2


def test_array_tasks_get_distinct_ports_and_ids() -> None:
    specs = [detect(gridengine_env(pe=None, task=task)) for task in (1, 2, 3)]
    assert [spec.job_id for spec in specs] == ["4242.1", "4242.2", "4242.3"]
    assert len({spec.master_port for spec in specs}) == 3


def test_counts_that_disagree_with_the_host_file_are_errors() -> None:
    launch = gridengine_env(2, 4)
    with pytest.raises(InconsistentEnvironmentError, match="lists 8 slots but NSLOTS='6'"):
        detect(Launch(launch | {"NSLOTS": "6"}, launch.files))
    with pytest.raises(InconsistentEnvironmentError, match="lists 2 hosts but NHOSTS='3'"):
        detect(Launch(launch | {"NHOSTS": "3"}, launch.files))
    path = launch["PE_HOSTFILE"]
    with pytest.raises(InvalidVariableError, match="a host name and its slot count"):
        detect(Launch(launch, {path: "node01 four all.q@node01 UNDEFINED\n"}))


def test_generic_names_are_grid_engines_only_inside_a_job() -> None:
    """JOB_ID and JOB_NAME (Jenkins sets it) are neither read nor captured elsewhere."""
    assert "JOB_NAME" not in launcher_variables({"JOB_NAME": "nightly", "JOB_ID": "7"})
    assert detect({"JOB_NAME": "nightly", "JOB_ID": "7"}).source.value == "local"
    assert "JOB_NAME" in launcher_variables(gridengine_env(2, 4))


def test_an_array_task_id_is_a_number() -> None:
    with pytest.raises(InvalidVariableError, match="SGE_TASK_ID"):
        detect(gridengine_env(pe=None) | {"SGE_TASK_ID": "first"})
