"""Frameworks beyond Lightning, in real multi-process runs (issue 30): a plain PyTorch DDP
script on ``clusterenv.torch`` under srun (both Slurm releases), torchrun and the DeepSpeed
launcher; a JAX cross-process sum on ``clusterenv.jax`` under srun and mpirun; and a torch
script that never imports clusterenv, given its ranks by ``eval "$(clusterenv env)"``.
Every process is checked against the framework's own truth (torch.distributed's rank and
world size, JAX's process index and count)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.launchers.conftest import require_launcher
from tests.launchers.harness import HOST_SLURM, Cluster, launch

#: The loopback clusters' node names (cn001...) resolve nowhere: rank 0 is on 127.0.0.1.
SRUN = "MASTER_ADDR=127.0.0.1 srun -N2"
DDP = Path(__file__).with_name("ddp_train.py")
JAX = Path(__file__).with_name("jax_psum.py")
SHELL_PAGE = Path(__file__).parents[2] / "docs" / "frameworks" / "shell.md"


def records(command: str, workdir: Path, slurm: Cluster = HOST_SLURM) -> list[dict[str, Any]]:
    """What every process of ``command`` recorded: a training takes longer than a report."""
    return launch(command, workdir, timeout=300, slurm=slurm)


def check_ddp(found: list[dict[str, Any]], world: int, source: str | None) -> None:
    """One process per rank, each where torch.distributed says, all with the same weights."""
    assert sorted(record["torch"]["rank"] for record in found) == list(range(world))
    for record in found:
        assert record["torch"]["world_size"] == world
        assert record["same_weights"], "DDP ranks ended with different weights"
        if source is None:  # the plain script: told its rank by `clusterenv env` alone
            assert not record["imported_clusterenv"]
            continue
        spec = record["spec"]
        assert record["preflight"] == [], "the pre-flight check warned on a correct launch"
        assert spec["source"] == source
        assert (spec["global_rank"], spec["world_size"]) == (
            record["torch"]["rank"],
            record["torch"]["world_size"],
        )


def check_jax(found: list[dict[str, Any]], processes: int) -> None:
    assert sorted(record["jax"]["process_index"] for record in found) == list(range(processes))
    for record in found:
        assert record["jax"]["process_count"] == processes
        assert record["jax"]["sum"] == processes * (processes + 1) // 2
        assert record["spec"]["global_rank"] == record["jax"]["process_index"]
        assert record["preflight"] == [], "the pre-flight check warned on a correct launch"


@pytest.mark.slurm
def test_torch_ddp_under_srun(tmp_path: Path, slurm_cluster: Cluster) -> None:
    command = f"{SRUN} --ntasks-per-node=2 {{python}} {DDP} {{out}}"
    check_ddp(records(command, tmp_path, slurm_cluster), 4, "slurm")


def shell_page_commands() -> list[str]:
    """The srun commands of docs/frameworks/shell.md, as a reader copies them."""
    block = re.search(r"^```bash\n(.*?)^```", SHELL_PAGE.read_text(), re.MULTILINE | re.DOTALL)
    assert block, f"{SHELL_PAGE} has no bash block"
    return [line for line in block[1].splitlines() if line.startswith("srun ")]


@pytest.mark.slurm
@pytest.mark.parametrize("command", shell_page_commands())
def test_the_shell_pages_commands_give_a_plain_torch_script_its_rank(
    command: str, tmp_path: Path, slurm_cluster: Cluster
) -> None:
    """Each command of the page as written, its `train.py` a torch DDP script that never
    imports clusterenv (`eval "$(clusterenv env)"` in every rank; torchrun started with
    `clusterenv env --format torchrun` in one task per node). Only the environment is set
    in front: this venv's `clusterenv` and `torchrun` first on PATH, and rank 0's address
    (the loopback clusters' node names resolve nowhere)."""
    (tmp_path / "train.py").write_text(
        f"import runpy, sys\nsys.argv = [{str(DDP)!r}, {str(tmp_path / 'records')!r}, "
        f"'--plain']\nrunpy.run_path({str(DDP)!r}, run_name='__main__')\n"
    )
    found = records(
        f"PATH={Path(sys.executable).parent}:$PATH MASTER_ADDR=127.0.0.1 {command}",
        tmp_path,
        slurm_cluster,
    )
    world = 8 if "--ntasks-per-node=4" in command else 2
    check_ddp(found, world, None)


@pytest.mark.slurm
def test_jax_under_srun(tmp_path: Path, slurm_cluster: Cluster) -> None:
    require_launcher("jax")
    command = f"{SRUN} --ntasks-per-node=1 {{python}} {JAX} {{out}}"
    check_jax(records(command, tmp_path, slurm_cluster), 2)


@pytest.mark.torchrun
@pytest.mark.usefixtures("torchrun")
def test_torch_ddp_under_torchrun(tmp_path: Path) -> None:
    command = f"{{python}} -m torch.distributed.run --standalone --nproc_per_node=3 {DDP} {{out}}"
    check_ddp(records(command, tmp_path), 3, "torchelastic")


@pytest.mark.torchrun
def test_torch_ddp_under_the_deepspeed_launcher(tmp_path: Path) -> None:
    require_launcher("deepspeed")
    command = (
        f"{{python}} -m deepspeed.launcher.runner --num_gpus 2 --master_port {{port}} {DDP} {{out}}"
    )
    check_ddp(records(command, tmp_path), 2, "env")


@pytest.mark.mpi
@pytest.mark.usefixtures("mpirun")
def test_jax_under_mpirun(tmp_path: Path) -> None:
    require_launcher("jax")
    command = f"mpirun --allow-run-as-root --oversubscribe -np 2 {{python}} {JAX} {{out}}"
    check_jax(records(command, tmp_path), 2)
