from __future__ import annotations

from typing import Any

import pytest

from clusterenv import (
    ClusterEnvError,
    HostlistError,
    InconsistentEnvironmentError,
    InvalidVariableError,
    MissingVariableError,
    ResourceSpec,
    Role,
    detect_environment,
    explain_environment,
)
from clusterenv._diagnosis.diagnose import diagnose
from clusterenv._engine.rules import PORT_BASE, PORT_SPAN
from clusterenv.sources.slurm import parse_gpu_count
from clusterenv.testing import Launch, slurm_env
from tests.envs import batch_step, salloc_shell, srun_task, torchrun_worker
from tests.envs import detect as detect_launch


def detect(env: dict[str, str], gpus: tuple[str, ...] = ()) -> ResourceSpec:
    return detect_environment(env, gpu_probe=lambda: gpus)


def fields(spec: ResourceSpec, *names: str) -> tuple[Any, ...]:
    return tuple(getattr(spec, name) for name in names)


GEOMETRY = (
    "role",
    "num_nodes",
    "devices_per_node",
    "world_size",
    "global_rank",
    "local_rank",
    "node_rank",
)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        pytest.param(
            srun_task([2, 2], 3), ("rank", 2, 2, 4, 3, 1, 1), id="srun-N2-ntasks-per-node2"
        ),
        pytest.param(srun_task([2, 1], 2), ("rank", 2, 1, 3, 2, 0, 1), id="srun-N2-n3-uneven"),
        pytest.param(srun_task([3, 1], 1), ("rank", 2, 3, 4, 1, 1, 0), id="srun-tasks-3,1"),
        pytest.param(
            srun_task([2, 2], 1, cyclic=True), ("rank", 2, 2, 4, 1, 0, 1), id="srun-cyclic"
        ),
        pytest.param(srun_task([2, 2, 2, 1], 6), ("rank", 4, 1, 7, 6, 0, 3), id="srun-2(x3),1"),
        pytest.param(srun_task([1], 0), ("rank", 1, 1, 1, 0, 0, 0), id="srun-single"),
        pytest.param(batch_step(), ("batch", 2, 1, 2, 0, 0, 0), id="batch-N2"),
        pytest.param(
            batch_step(ntasks_per_node=4), ("batch", 2, 4, 8, 0, 0, 0), id="batch-ntasks-per-node"
        ),
        pytest.param(
            batch_step(gpus_per_node=4), ("batch", 2, 4, 8, 0, 0, 0), id="batch-gpus-no-ntasks"
        ),
        pytest.param(salloc_shell(), ("shell", 2, 1, 2, 0, 0, 0), id="salloc-shell"),
    ],
)
def test_geometry(env: dict[str, str], expected: tuple[Any, ...]) -> None:
    assert fields(detect(env), *GEOMETRY) == expected


def test_step_geometry_wins_over_the_jobs() -> None:
    """A 1-node step in a 3-node job: SLURM_JOB_NUM_NODES and SLURM_JOB_NODELIST stay the job's."""
    env = srun_task([2], 1, nodelist="cn002") | {
        "SLURM_JOB_NUM_NODES": "3",
        "SLURM_JOB_NODELIST": "cn[001-003]",
        "SLURM_NTASKS_PER_NODE": "4",
    }
    spec = detect(env)
    assert fields(spec, "num_nodes", "world_size", "hostnames", "master_addr") == (
        1,
        2,
        ("cn002",),
        "cn002",
    )


def test_hostnames_and_main_address_use_full_hostlist_syntax() -> None:
    spec = detect(srun_task([1, 1, 1], 2, nodelist="cn[001,003],gpu-a1"))
    assert spec.hostnames == ("cn001", "cn003", "gpu-a1")
    assert spec.master_addr == "cn001"
    # Lightning's regex reads "a7]" from this one.
    assert detect(srun_task([1, 1, 1, 1], 0, nodelist="a[7],b[1-3]")).master_addr == "a7"


def test_job_name_does_not_matter() -> None:
    """salloc names jobs 'interactive' and its steps inherit it: they are still real steps."""
    for name in ("interactive", "bash"):
        spec = detect(srun_task([2, 2], 3, job_name=name))
        assert fields(spec, "role", "global_rank", "world_size") == ("rank", 3, 4)


@pytest.mark.parametrize(
    ("variables", "gpus"),
    [
        ({"SLURM_GPUS_ON_NODE": "4"}, 4),
        ({"SLURM_STEP_GPUS": "0,1,2"}, 3),
        ({"SLURM_JOB_GPUS": "2,3"}, 2),
        ({"SLURM_GPUS_PER_NODE": "4"}, 4),
        ({"SLURM_GPUS_PER_NODE": "a100:4"}, 4),
        ({"SLURM_GPUS_PER_NODE": "gpu:a100:4"}, 4),
        ({"SLURM_GPUS_PER_NODE": "a100:2,v100:2"}, 4),
        ({"SLURM_GPUS_PER_TASK": "1"}, 2),  # two tasks on this node
        (
            {"SLURM_GPUS_ON_NODE": "2", "SLURM_GPUS_PER_NODE": "a100:8"},
            2,
        ),  # the node's own count wins
    ],
)
def test_gpus_per_node(variables: dict[str, str], gpus: int) -> None:
    spec = detect(srun_task([2, 2], 0) | variables | {"CUDA_VISIBLE_DEVICES": "0"})
    assert (spec.gpus_per_node, spec.accelerator.value) == (gpus, "gpu")


def test_gpus_per_task_gives_each_task_its_own_device() -> None:
    env = srun_task([2], 1) | {
        "SLURM_GPUS_PER_TASK": "1",
        "SLURM_GPUS_ON_NODE": "2",
        "SLURM_STEP_GPUS": "1",
        "CUDA_VISIBLE_DEVICES": "0",
    }
    spec = detect(env)
    assert fields(spec, "gpus_per_node", "devices_per_node", "visible_devices") == (2, 2, ("0",))


def test_gpus_from_the_probe_when_slurm_says_nothing() -> None:
    spec = detect(srun_task([1], 0), gpus=("0", "1"))
    assert fields(spec, "gpus_per_node", "visible_devices", "accelerator") == (2, ("0", "1"), "gpu")


def test_salloc_shell_never_probes_the_submit_host() -> None:
    spec = detect(salloc_shell() | {"SLURM_GPUS_PER_NODE": "a100:2"}, gpus=("0",))
    assert fields(spec, "role", "gpus_per_node", "devices_per_node", "visible_devices") == (
        "shell",
        2,
        2,
        (),
    )


def test_main_port_from_job_id_and_override() -> None:
    assert (
        detect(srun_task([1], 0, job_id="4242001")).master_port == PORT_BASE + 4242001 % PORT_SPAN
    )
    assert detect(srun_task([1], 0) | {"MASTER_PORT": "12345"}).master_port == 12345
    assert detect(srun_task([1], 0) | {"MASTER_ADDR": "10.1.2.3"}).master_addr == "10.1.2.3"


def test_concurrent_jobs_get_distinct_ports() -> None:
    """Lightning's 15000 + last four digits collides for 4242001 and 5552001."""
    ports = {
        detect(srun_task([1], 0, job_id=str(job))).master_port
        for job in range(4242001, 4242001 + PORT_SPAN)
    }
    assert len(ports) == PORT_SPAN
    assert all(PORT_BASE <= port < 32768 for port in ports)
    assert (
        detect(srun_task([1], 0, job_id="4242001")).master_port
        != detect(srun_task([1], 0, job_id="5552001")).master_port
    )


def test_spec_is_immutable_and_serialisable() -> None:
    spec = detect(srun_task([2, 2], 3))
    with pytest.raises(ValueError, match="frozen"):
        spec.world_size = 1
    assert ResourceSpec.model_validate_json(spec.model_dump_json()) == spec
    assert "world_size" in ResourceSpec.model_json_schema()["properties"]


@pytest.mark.parametrize(
    ("change", "error", "variable"),
    [
        ({"SLURM_PROCID": "4"}, InconsistentEnvironmentError, "SLURM_PROCID"),
        ({"SLURM_PROCID": "x"}, InvalidVariableError, "SLURM_PROCID"),
        ({"SLURM_PROCID": "-1"}, InvalidVariableError, "SLURM_PROCID"),
        ({"SLURM_NODEID": "2"}, InconsistentEnvironmentError, "SLURM_NODEID"),
        ({"SLURM_LOCALID": "2"}, InconsistentEnvironmentError, "SLURM_LOCALID"),
        ({"SLURM_STEP_NUM_TASKS": "5"}, InconsistentEnvironmentError, "SLURM_STEP_TASKS_PER_NODE"),
        ({"SLURM_STEP_NUM_NODES": "3"}, InconsistentEnvironmentError, "SLURM_STEP_NUM_NODES"),
        ({"SLURM_STEP_TASKS_PER_NODE": "2(x)"}, InvalidVariableError, "SLURM_STEP_TASKS_PER_NODE"),
        ({"SLURM_STEP_NODELIST": "cn[002-001]"}, HostlistError, "cn[002-001]"),
        (
            {"SLURM_STEP_NODELIST": "cn[001-003]"},
            InconsistentEnvironmentError,
            "SLURM_STEP_NODELIST",
        ),
        ({"SLURM_JOB_ID": "abc"}, InvalidVariableError, "SLURM_JOB_ID"),
        ({"SLURM_GPUS_ON_NODE": "four"}, InvalidVariableError, "SLURM_GPUS_ON_NODE"),
        ({"SLURM_GPUS_PER_NODE": "a100:"}, InvalidVariableError, "SLURM_GPUS_PER_NODE"),
        ({"MASTER_PORT": "70000"}, InvalidVariableError, "MASTER_PORT"),
    ],
)
def test_bad_values_name_the_variable(
    change: dict[str, str], error: type[ClusterEnvError], variable: str
) -> None:
    with pytest.raises(error, match="HINT") as info:
        detect(srun_task([2, 2], 3) | change)
    assert variable in str(info.value)


@pytest.mark.parametrize("missing", ["SLURM_PROCID", "SLURM_NODEID", "SLURM_STEP_NODELIST"])
def test_missing_step_variables(missing: str) -> None:
    env = srun_task([2, 2], 3)
    for name in (missing, missing.replace("STEP_", ""), "SLURM_JOB_NODELIST"):
        env.pop(name, None)
    with pytest.raises(MissingVariableError, match=missing):
        detect(env)


def test_batch_task_count_must_match_layout() -> None:
    env = batch_step(ntasks_per_node=2) | {"SLURM_NTASKS": "5"}
    with pytest.raises(InconsistentEnvironmentError, match="SLURM_NTASKS='5'"):
        detect(env)


@pytest.mark.parametrize(
    ("value", "count"), [("8", 8), ("a100:4", 4), ("gpu:a100:4", 4), ("a100:2(S:0-1),v100:1", 3)]
)
def test_parse_gpu_count(value: str, count: int) -> None:
    assert parse_gpu_count("SLURM_GPUS_PER_NODE", value) == count


# -- defects measured on real captures and Slurm 24.11 (issue 19) --------------------------


def test_a_batch_step_with_ntasks_reports_the_tasks_and_warns_when_uneven() -> None:
    """sbatch --ntasks=12 --gpus-per-task=1 placed 8+4: SLURM_NTASKS=12 (sbatch(1): -n sets
    SLURM_NTASKS; SLURM_TASKS_PER_NODE lists the placement), not GPUs x nodes = 16."""
    env = slurm_env(2, [8, 4], step="batch") | {"SLURM_GPUS_ON_NODE": "8"}
    spec = detect(env)
    assert (spec.world_size, spec.devices_per_node) == (12, 8)
    uneven = [w for w in diagnose(spec, env) if w.id == "uneven-slots"]
    assert uneven
    assert "--ntasks-per-node" in uneven[0].fix


def test_a_batch_step_that_sees_gpus_without_gres_starts_one_rank_per_gpu() -> None:
    env = slurm_env(2, step="batch") | {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}
    spec = detect(env)
    assert (spec.gpus_per_node, spec.devices_per_node, spec.world_size) == (4, 4, 8)


@pytest.mark.parametrize(
    "env",
    [{"SLURM_JOB_ID": "42"}, {"SLURM_JOB_ID": "42", "SLURM_JOBID": "42", "SLURM_JOB_USER": "u"}],
    ids=["job-id-only", "job-id-and-user"],
)
def test_a_job_id_without_the_job_is_not_a_task_of_it(env: dict[str, str]) -> None:
    """An ssh session into a job's node (or SLURM_JOB_ID exported by hand): say what it is
    and how to start ranks in the job, not which geometry variable is missing."""
    with pytest.raises(MissingVariableError, match="not part of that job") as raised:
        detect(env)
    assert "srun --jobid=42 --overlap" in str(raised.value)


def test_a_procid_without_a_step_is_not_the_batch_step() -> None:
    """The batch step always has SLURM_PROCID=0 (srun(1) sets SLURM_STEP_ID in a step)."""
    env = slurm_env(2, step="batch") | {"SLURM_PROCID": "1"}
    with pytest.raises(
        InconsistentEnvironmentError, match="SLURM_PROCID='1' without SLURM_STEP_ID"
    ):
        detect(env)


def test_slurm_24_tres_per_task_gives_the_gpus() -> None:
    """24.11 replaced SLURM_GPUS_PER_TASK by SLURM_TRES_PER_TASK=gres/gpu=N (and cpu=N)."""
    env = slurm_env(2, 2, step="salloc") | {"SLURM_TRES_PER_TASK": "cpu=4,gres/gpu=1"}
    assert detect(env).gpus_per_node == 2
    env["SLURM_TRES_PER_TASK"] = "gres/gpu:a100=2"
    assert detect(env).gpus_per_node == 4
    env["SLURM_TRES_PER_TASK"] = "cpu=4"
    assert detect(env).gpus_per_node == 0


def test_a_heterogeneous_salloc_shell_describes_component_0() -> None:
    """Both 22.05 and 24.11 give such a shell only *_HET_GROUP_N geometry."""
    shell = slurm_env(2, step="salloc", nodelist="cn[001-002]")
    env = {k: v for k, v in shell.items() if k not in ("SLURM_JOB_NODELIST", "SLURM_NODELIST")}
    env = {k: v for k, v in env.items() if k not in ("SLURM_JOB_NUM_NODES", "SLURM_NNODES")}
    env |= {
        "SLURM_JOB_NODELIST_HET_GROUP_0": "cn[001-002]",
        "SLURM_JOB_NUM_NODES_HET_GROUP_0": "2",
        "SLURM_JOB_NODELIST_HET_GROUP_1": "cn003",
        "SLURM_JOB_NUM_NODES_HET_GROUP_1": "1",
    }
    spec = detect(env)
    assert (spec.role.value, spec.num_nodes, spec.hostnames) == ("shell", 2, ("cn001", "cn002"))
    assert any(
        "heterogeneous job: this describes its component 0" in str(w) for w in diagnose(spec, env)
    )


def test_a_malformed_node_list_names_its_variable() -> None:
    with pytest.raises(HostlistError, match="SLURM_STEP_NODELIST"):
        detect(srun_task([2, 2], 1) | {"SLURM_STEP_NODELIST": "cn[001-"})


def test_the_old_step_id_spelling_alone_is_a_step() -> None:
    """SLURM_STEPID (pre-2.x, still set beside SLURM_STEP_ID) without SLURM_STEP_ID."""
    env = {k: v for k, v in slurm_env(2, 2, 3).items() if k != "SLURM_STEP_ID"}
    spec = detect(env)
    assert (spec.role.value, spec.global_rank, spec.node_rank) == ("rank", 3, 1)


def test_a_heterogeneous_salloc_shell_with_tasks_counts_component_0() -> None:
    """Slurm 24.11 (tests/data/captures/slurm-24.11/het-salloc-shell.json): SLURM_NTASKS
    counts every component, the task list only component 0's. Was: an error."""
    env = {
        "SLURM_JOB_ID": "1",
        "SLURM_NTASKS": "3",
        "SLURM_NPROCS": "3",
        "SLURM_HET_SIZE": "2",
        "SLURM_NTASKS_HET_GROUP_0": "1",
        "SLURM_NTASKS_HET_GROUP_1": "2",
        "SLURM_JOB_NODELIST_HET_GROUP_0": "cn001",
        "SLURM_JOB_NODELIST_HET_GROUP_1": "cn002",
        "SLURM_JOB_NUM_NODES_HET_GROUP_0": "1",
        "SLURM_JOB_NUM_NODES_HET_GROUP_1": "1",
        "SLURM_TASKS_PER_NODE_HET_GROUP_0": "1",
        "SLURM_TASKS_PER_NODE_HET_GROUP_1": "2",
    }
    spec = detect(env)
    assert (spec.role.value, spec.world_size, spec.hostnames) == ("shell", 1, ("cn001",))


def test_an_arbitrary_distribution_puts_the_main_address_on_task_0s_node() -> None:
    """srun -n2 --distribution=arbitrary with SLURM_HOSTFILE = cn002, cn001: task 0 runs on
    cn002, the second node of the sorted node list."""
    env = slurm_env(2, 1, 0) | {"SLURM_DISTRIBUTION": "arbitrary", "SLURM_HOSTFILE": "/h"}
    launch = Launch(env, {"/h": "cn002\ncn001\n"})
    assert detect_launch(launch).master_addr == "cn002"
    assert detect_launch(Launch(env | {"MASTER_ADDR": "10.1.1.1"}, {})).master_addr == "10.1.1.1"
    with pytest.raises(InvalidVariableError, match="SLURM_HOSTFILE='/h' cannot be read"):
        detect_launch(Launch(env, {}))
    with pytest.raises(InconsistentEnvironmentError, match="'cn009' is not a node of the step"):
        detect_launch(Launch(env, {"/h": "cn009\n"}))


def test_the_legacy_task_count_counts() -> None:
    """SLURM_NPROCS, set beside SLURM_NTASKS by every release and alone in older dumps of real
    sites: an allocation shell's tasks as placed, and a step with only the legacy names."""
    shell = {"SLURM_JOB_ID": "7", "SLURM_JOB_NUM_NODES": "2", "SLURM_NODELIST": "n[1-2]"}
    shell |= {"SLURM_TASKS_PER_NODE": "4(x2)", "SLURM_NPROCS": "8"}
    spec = detect(shell)
    assert (spec.role, spec.world_size, spec.devices_per_node) == (Role.SHELL, 8, 4)
    step = {"SLURM_JOBID": "7", "SLURM_NNODES": "2", "SLURM_NODELIST": "n[1-2]"}
    step |= {"SLURM_TASKS_PER_NODE": "4(x2)", "SLURM_NPROCS": "8", "SLURM_STEPID": "0"}
    step |= {"SLURM_PROCID": "5", "SLURM_LOCALID": "1", "SLURM_NODEID": "1"}
    spec = detect(step)
    assert (spec.world_size, spec.global_rank, spec.node_rank, spec.master_addr) == (8, 5, 1, "n1")
    assert explain_environment(step, gpu_probe=tuple).variables["world_size"] == ("SLURM_NPROCS",)


@pytest.mark.parametrize("gpus", [4, None])
def test_an_salloc_shell_keeps_the_gpus_it_was_given(gpus: int | None) -> None:
    """salloc --gpus-per-node=4 sets SLURM_GPUS_PER_NODE in its shell (never
    SLURM_GPUS_ON_NODE: ../shared/notes/slurm-loopback.md); the builder keeps it."""
    spec = detect(slurm_env(2, step="salloc", gpus_per_node=gpus))
    assert (spec.role, spec.gpus_per_node, spec.visible_devices) == (Role.SHELL, gpus or 0, ())


@pytest.mark.parametrize(("tasks_per_node", "doubled"), [(1, False), (2, True)])
def test_a_double_launch_is_more_than_one_launcher_per_node(
    tasks_per_node: int, doubled: bool
) -> None:
    """`srun -N2 --ntasks-per-node=1 torchrun --nproc-per-node=2` is the recommended launch
    (one torchrun per node, as Intel MPI's hydra starts one proxy per node through srun);
    with two tasks per node every task starts its own torchrun."""
    task = slurm_env(2, tasks_per_node, procid=tasks_per_node)  # node 1's first task
    env = task | torchrun_worker(3, nproc_per_node=2, nnodes=2, master_addr="cn001")
    ids = {finding.id for finding in diagnose(detect(env), env)}
    assert ("slurm.double-launch" in ids) is doubled
