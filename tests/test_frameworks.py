"""`clusterenv env`, clusterenv.torch and clusterenv.jax, from the builders' launches (the
real multi-process runs are tests/launchers/test_frameworks.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from clusterenv import ClusterEnvError, InconsistentEnvironmentError, detect_environment
from clusterenv._adapters.frameworks import device_indices, env_variables, torchrun_arguments
from clusterenv._cli._env import env_text
from clusterenv.jax import initialize_kwargs
from clusterenv.testing import sagemaker_env, slurm_env, torchrun_env
from tests.available import require_modules
from tests.envs import batch_step, detect, salloc_shell, srun_task
from tests.launchers.harness import free_port


def test_the_env_set_of_an_srun_task() -> None:
    env = srun_task([2, 2], 3) | {"CUDA_VISIBLE_DEVICES": "0,1"}
    assert env_variables(detect(env), env) == {
        "RANK": "3",
        "WORLD_SIZE": "4",
        "LOCAL_RANK": "1",
        "LOCAL_WORLD_SIZE": "2",
        "NODE_RANK": "1",
        "GROUP_RANK": "1",
        "GROUP_WORLD_SIZE": "2",
        "MASTER_ADDR": "cn001",
        "MASTER_PORT": str(detect(env).master_port),
        "CUDA_VISIBLE_DEVICES": "0,1",
    }


@pytest.mark.parametrize(
    "env",
    [srun_task([2, 2], 3), dict(torchrun_env(2, 2, 1)), *(srun_task([3, 1], r) for r in range(4))],
    ids=["srun-2x2", "torchrun", *(f"srun-3+1-task-{r}" for r in range(4))],
)
def test_the_shell_output_round_trips_to_the_same_rank(env: dict[str, str]) -> None:
    """A process started with exactly the exported variables is the same rank."""
    spec = detect(env)
    exported = dict(
        line.removeprefix("export ").split("=", 1) for line in env_text("shell", env).splitlines()
    )
    again = detect(exported)
    fields = ("global_rank", "world_size", "local_rank", "node_rank", "num_nodes")
    assert [getattr(again, f) for f in fields] == [getattr(spec, f) for f in fields]
    assert (again.master_addr, again.master_port) == (spec.master_addr, spec.master_port)
    assert json.loads(env_text("json", env)) == exported
    assert env_text("dotenv", env).splitlines()[0] == f"RANK={spec.global_rank}"


def test_a_value_the_launcher_set_differently_is_refused_naming_both() -> None:
    env = srun_task([2, 2], 3) | {"NODE_RANK": "0"}  # Lightning's, left over
    with pytest.raises(InconsistentEnvironmentError, match=r"NODE_RANK='0' \(the spec says '1'\)"):
        env_variables(detect(env), env)


@pytest.mark.parametrize(
    ("env", "words"),
    [(salloc_shell(), "role shell"), (batch_step(), "role batch")],
)
def test_a_process_that_is_not_a_rank_has_no_env_set(env: dict[str, str], words: str) -> None:
    with pytest.raises(ClusterEnvError, match=words):
        env_variables(detect(env), env)


def test_torchrun_arguments_per_role() -> None:
    node = detect(sagemaker_env(2, 1), gpus=["0", "1", "2", "3"])
    assert torchrun_arguments(node) == [
        "--nnodes=2",
        "--nproc-per-node=4",
        "--node-rank=1",
        "--master-addr=algo-1",
        f"--master-port={node.master_port}",
    ]
    one_per_node = slurm_env(2, 1, 1) | {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}
    assert "--nproc-per-node=4" in torchrun_arguments(detect(one_per_node))
    plain = detect_environment({"CUDA_VISIBLE_DEVICES": "0,1"})
    assert torchrun_arguments(plain) == ["--standalone", "--nproc-per-node=2"]
    with pytest.raises(ClusterEnvError, match="ranks of ranks"):
        torchrun_arguments(detect(srun_task([2, 2], 3)))
    with pytest.raises(ClusterEnvError, match="role batch") as raised:
        torchrun_arguments(detect(batch_step()))
    assert "sh -c 'torchrun $(clusterenv env --format torchrun) train.py'" in str(raised.value)
    # A one-node job script of one task sees the node's GPUs: torchrun starts one rank each,
    # as in an srun task of the same shape.
    script = slurm_env(1, 1, step="batch", gpus_per_node=4)
    assert "--nproc-per-node=4" in torchrun_arguments(detect(script, gpus=["0", "1", "2", "3"]))
    worker = detect(torchrun_env(1, 2, rank=1))
    with pytest.raises(ClusterEnvError, match="torchrun started this rank already"):
        torchrun_arguments(worker)
    with pytest.raises(ClusterEnvError, match="ranks of ranks") as raised:
        torchrun_arguments(detect(srun_task([2, 2], 3)))
    assert "torchrun --ntasks" not in str(raised.value)


@pytest.mark.parametrize(
    ("visible", "per_node", "local", "expected"),
    [
        ("0,1,2,3", 4, 2, (2,)),  # every rank sees the node's GPUs: cuda:LOCAL_RANK
        ("3", 4, 2, (0,)),  # srun --gpus-per-task=1: its one GPU, renumbered 0
        ("0,1,2,3", 1, 0, (0, 1, 2, 3)),  # one task per node drives them all
        ("0,1,2,3,4,5,6,7", 4, 1, (2, 3)),  # two GPUs each
        ("", 2, 1, ()),
    ],
)
def test_the_gpus_a_rank_drives(
    visible: str, per_node: int, local: int, expected: tuple[int, ...]
) -> None:
    env = slurm_env(2, per_node, per_node + local) | {"CUDA_VISIBLE_DEVICES": visible}
    assert device_indices(detect(env)) == expected


def test_gpus_that_cannot_be_shared_out_are_an_error() -> None:
    env = slurm_env(1, 4, 1) | {"CUDA_VISIBLE_DEVICES": "0,1,2"}
    with pytest.raises(ClusterEnvError, match="cannot be shared out evenly"):
        device_indices(detect(env))


def test_jax_kwargs_per_process_and_per_node() -> None:
    rank = detect(srun_task([2, 2], 3) | {"CUDA_VISIBLE_DEVICES": "0,1"})
    assert initialize_kwargs(rank) == {
        "coordinator_address": f"cn001:{rank.master_port}",
        "num_processes": 4,
        "process_id": 3,
        "local_device_ids": [1],
    }
    node = detect(sagemaker_env(2, 1), gpus=["0", "1", "2", "3"])
    kwargs = initialize_kwargs(node)
    assert (kwargs["num_processes"], kwargs["process_id"]) == (2, 1)
    assert kwargs["local_device_ids"] == [0, 1, 2, 3]
    worker = detect(dict(torchrun_env(1, 2, 1, master_addr="::1", master_port=29500)))
    assert initialize_kwargs(worker)["coordinator_address"] == "[::1]:29501"  # torchrun's port
    assert "local_device_ids" not in initialize_kwargs(worker)


def test_clusterenv_torch_initialises_one_process_and_picks_the_device() -> None:
    require_modules("torch")
    script = """
import torch.distributed as dist
import clusterenv.torch
spec = clusterenv.torch.init_process_group(timeout=30)
print(dist.get_backend(), dist.get_rank(), dist.get_world_size(), clusterenv.torch.device(spec))
dist.destroy_process_group()
"""
    env = {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1"}
    env |= {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()), "PATH": "/usr/bin"}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["gloo", "0", "1", "cpu"]


def test_a_gpu_the_torch_build_cannot_see_falls_back_to_the_cpu_with_a_warning() -> None:
    require_modules("torch")
    import clusterenv.torch  # noqa: PLC0415 - torch only where installed

    spec = detect(srun_task([2], 1) | {"CUDA_VISIBLE_DEVICES": "0,1"})
    with pytest.warns(UserWarning, match="sees no cuda device: using the CPU"):
        assert str(clusterenv.torch.device(spec)) == "cpu"


def test_import_clusterenv_imports_neither_torch_nor_jax() -> None:
    script = "import sys, clusterenv; clusterenv.detect_environment(); print(sorted(sys.modules))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    loaded = set(eval(out.stdout))
    assert not {"torch", "jax", "jaxlib", "lightning"} & loaded


def test_the_env_command_in_a_shell() -> None:
    env = srun_task([2, 2], 3) | {"PATH": "/usr/bin:/bin"}
    command = f'eval "$({sys.executable} -m clusterenv env)" && echo "$RANK/$WORLD_SIZE"'
    out = subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "3/4", out.stderr
