"""torchrun workers, from the variables torch.distributed.run documents ("Environment
Variables": RANK, LOCAL_RANK, GROUP_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_WORLD_SIZE,
MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RUN_ID)."""

from __future__ import annotations

import pytest

from clusterenv import InvalidVariableError, MissingVariableError, detect_environment
from tests.envs import srun_task, torchrun_worker


def test_torchrun_worker() -> None:
    spec = detect_environment(torchrun_worker(3, nproc_per_node=2, nnodes=2), gpu_probe=lambda: ())
    assert (spec.source.value, spec.role.value) == ("torchelastic", "rank")
    assert (spec.num_nodes, spec.devices_per_node, spec.world_size) == (2, 2, 4)
    assert (spec.global_rank, spec.local_rank, spec.node_rank) == (3, 1, 1)
    assert (spec.master_addr, spec.master_port, spec.job_id) == ("localhost", 29400, None)


def test_torchrun_run_id_becomes_the_job_id() -> None:
    spec = detect_environment(torchrun_worker(run_id="exp7"), gpu_probe=lambda: ())
    assert spec.job_id == "exp7"


def test_torchrun_inside_slurm_is_torchrun() -> None:
    """One srun task per node running torchrun: the workers are torchrun's, not srun's."""
    env = srun_task([1, 1], 1) | torchrun_worker(3, nproc_per_node=2, nnodes=2, master_addr="cn001")
    spec = detect_environment(env, gpu_probe=lambda: ())
    assert (spec.source.value, spec.global_rank, spec.world_size) == ("torchelastic", 3, 4)


def test_torchrun_gpus_come_from_the_machine() -> None:
    spec = detect_environment(torchrun_worker(), gpu_probe=lambda: ("0", "1"))
    assert (spec.accelerator.value, spec.gpus_per_node, spec.visible_devices) == (
        "gpu",
        2,
        ("0", "1"),
    )


@pytest.mark.parametrize(
    "missing", ["RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_PORT"]
)
def test_torchrun_missing_variable(missing: str) -> None:
    env = torchrun_worker()
    del env[missing]
    with pytest.raises(MissingVariableError, match=missing):
        detect_environment(env, gpu_probe=lambda: ())


def test_torchrun_bad_rank() -> None:
    with pytest.raises(InvalidVariableError, match="RANK='one'"):
        detect_environment(torchrun_worker() | {"RANK": "one"}, gpu_probe=lambda: ())
