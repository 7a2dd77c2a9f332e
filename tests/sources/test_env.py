"""The env:// contract, from torch.distributed's documentation ("Environment variable
initialization": MASTER_PORT, MASTER_ADDR, WORLD_SIZE, RANK), with LOCAL_RANK and the
ranks per node as Ray Train (LOCAL_WORLD_SIZE) and the DeepSpeed launcher (LOCAL_SIZE,
CROSS_RANK, CROSS_SIZE) export them; both are also replayed from real launches."""

from __future__ import annotations

import pytest

from clusterenv import InconsistentEnvironmentError, MissingVariableError
from clusterenv._diagnosis.diagnose import diagnose
from clusterenv.testing import (
    Launch,
    deepspeed_env,
    env_launch,
    gridengine_env,
    kubeflow_env,
    lsf_env,
    pbs_env,
    torchrun_env,
)
from tests.envs import batch_step, detect, fields, srun_task


def test_a_complete_contract_is_a_rank_of_its_launch() -> None:
    expected = {
        "source": "env",
        "role": "rank",
        "num_nodes": 2,
        "devices_per_node": 4,
        "world_size": 8,
        "global_rank": 5,
        "local_rank": 1,
        "node_rank": 1,
        "master_addr": "10.0.0.1",
        "master_port": 29500,
    }
    assert fields(detect(env_launch(2, 4, 5)), expected) == expected


def test_was_a_local_rank_0_of_1_before() -> None:
    """A DeepSpeed-launched process: every launcher above it wins, local no longer."""
    assert (
        detect(
            env_launch(2, 4, 5)
            | {"TORCHELASTIC_RUN_ID": "x", "GROUP_RANK": "1", "GROUP_WORLD_SIZE": "2"}
        ).source.value
        == "torchelastic"
    )
    assert detect(kubeflow_env(2, 1)).source.value == "kubeflow"
    assert detect(torchrun_env(1, 2, 1)).source.value == "torchelastic"


def test_an_incomplete_set_names_what_is_missing() -> None:
    """Was: a local rank 0 of 1, while torch.distributed initialised from RANK/WORLD_SIZE."""
    env = {k: v for k, v in env_launch(2, 4, 5).items() if k not in ("LOCAL_WORLD_SIZE",)}
    with pytest.raises(MissingVariableError, match="not LOCAL_WORLD_SIZE") as error:
        detect(env)
    assert error.value.variables == ("LOCAL_WORLD_SIZE",)
    with pytest.raises(MissingVariableError, match="not LOCAL_RANK, MASTER_PORT"):
        detect({"RANK": "1", "WORLD_SIZE": "2", "LOCAL_SIZE": "2", "MASTER_ADDR": "n1"})


def test_a_partial_set_without_rank_and_world_size_is_local_with_a_warning() -> None:
    env = {"MASTER_ADDR": "n1", "MASTER_PORT": "29500"}
    spec = detect(env)
    assert spec.source.value == "local"
    (warning,) = diagnose(spec, env)
    assert "not RANK, WORLD_SIZE: not an env:// launch" in str(warning)


def test_the_deepspeed_launcher() -> None:
    """DeepSpeed 0.19.8's launch.py: LOCAL_SIZE, CROSS_RANK, CROSS_SIZE, never
    LOCAL_WORLD_SIZE (the shape of tests/data/captures/deepspeed-2-nodes.json)."""
    spec = detect(deepspeed_env(2, 4, 6))
    expected = {"source": "env", "world_size": 8, "num_nodes": 2, "node_rank": 1}
    assert fields(spec, expected) == expected
    assert (spec.local_rank, spec.devices_per_node, spec.gpus_per_node) == (2, 4, 4)
    with pytest.raises(InconsistentEnvironmentError, match="CROSS_RANK='0'"):
        detect(deepspeed_env(2, 4, 6) | {"CROSS_RANK": "0"})
    with pytest.raises(InconsistentEnvironmentError, match="CROSS_SIZE='3'"):
        detect(deepspeed_env(2, 4, 6) | {"CROSS_SIZE": "3"})


@pytest.mark.parametrize(
    "job",
    [Launch(batch_step()), pbs_env(2, 4), gridengine_env(2, 4), lsf_env(2, 4)],
    ids=["sbatch-script", "pbs-script", "gridengine-script", "lsf-script"],
)
def test_the_deepspeed_launcher_in_a_job_script_starts_its_own_ranks(job: Launch) -> None:
    """``deepspeed train.py`` in a batch script: the ranks are DeepSpeed's, not the job
    script the scheduler started (which would make every one rank 0)."""
    spec = detect(Launch(job | deepspeed_env(1, 2, 1, master_addr="127.0.0.1"), job.files))
    expected = {"source": "env", "role": "rank", "global_rank": 1, "world_size": 2}
    assert fields(spec, expected) == expected


def test_a_task_the_scheduler_started_stays_the_schedulers() -> None:
    """A RANK set exported to every task of an srun step is no launcher's: Slurm's task
    numbers win there."""
    env = srun_task([2, 2], 3) | deepspeed_env(1, 2, 0, master_addr="cn001")
    spec = detect(env)
    expected = {"source": "slurm", "global_rank": 3, "world_size": 4}
    assert fields(spec, expected) == expected
    (inside,) = (w for w in diagnose(spec, env) if w.id == "env.inside-task")
    assert inside.message == (
        "RANK='0' WORLD_SIZE='2' are set in Slurm's task 3 of 4: clusterenv follows Slurm, not "
        "a launcher that starts several ranks inside one task"
    )
    assert inside.fix.startswith("start one srun task per rank without the inner launcher")
    agreeing = srun_task([2, 2], 3) | deepspeed_env(2, 2, 3, master_addr="cn001")
    assert not [w for w in diagnose(detect(agreeing), agreeing) if w.id == "env.inside-task"]


def test_a_node_rank_that_disagrees_is_an_error() -> None:
    with pytest.raises(InconsistentEnvironmentError, match="NODE_RANK='0'"):
        detect(env_launch(2, 4, 5) | {"NODE_RANK": "0"})
    assert detect(env_launch(2, 4, 5) | {"NODE_RANK": "1"}).node_rank == 1


def test_azure_mls_pytorch_distribution_is_asked_for_its_ranks_per_node() -> None:
    """Azure ML documents RANK, WORLD_SIZE, LOCAL_RANK, NODE_RANK, MASTER_ADDR and
    MASTER_PORT per process, nothing per node: no guess, the error names the variable."""
    azure = {"RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "NODE_RANK": "1"}
    azure |= {"MASTER_ADDR": "10.0.0.4", "MASTER_PORT": "6105"}
    with pytest.raises(MissingVariableError, match="LOCAL_WORLD_SIZE"):
        detect(azure)
    assert detect(azure | {"LOCAL_WORLD_SIZE": "4"}).node_rank == 1
