"""neural-lam 0.7.0, unmodified, trains through `clusterenv run` under real launchers.

Run by `nox -s neural-lam` (which installs neural-lam into its own environment); other
sessions do not collect this directory. neural-lam's `train_model` exits 0 even when
training raised (loguru logs "An error has been caught"), so a run is judged by its log:
no caught error, DDP with the expected members in every rank, and the checkpoint written.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import neural_lam
import pytest

from tests.launchers.harness import run
from tests.launchers.neural_lam import data

PATCH = Path(__file__).parents[3] / "docs" / "integrations" / "neural-lam-0.7.0.diff"
TRAIN = "{python} -m clusterenv run -m neural_lam.train_model"
TORCHRUN = "{python} -m torch.distributed.run --standalone --nproc_per_node=2"
SRUN = "MASTER_ADDR=127.0.0.1 srun -N2"  # the emulated node names do not resolve here
RUNS = {
    "one-process": (TRAIN, 1),
    "torchrun-nproc2": (f"{TORCHRUN} -m clusterenv run -m neural_lam.train_model", 2),
    "srun-2-nodes": (f"{SRUN} --ntasks-per-node=1 {TRAIN}", 2),
    "srun-2-nodes-2-tasks": (f"{SRUN} --ntasks-per-node=2 {TRAIN}", 4),
}
TINY = (
    "--model graph_lam --graph 1level --hidden_dim 8 --hidden_layers 1 --processor_layers 1 "
    "--epochs 1 --batch_size 1 --num_workers 0 --ar_steps_train 1 --ar_steps_eval 2 "
    "--val_steps_to_log 1 2 --num_sanity_val_steps 0 --logger wandb --devices auto"
)


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return data.make(tmp_path_factory.mktemp("neural-lam"))


@pytest.mark.parametrize(
    "name",
    [
        "one-process",
        pytest.param("torchrun-nproc2", marks=[pytest.mark.torchrun]),
        pytest.param("srun-2-nodes", marks=[pytest.mark.slurm]),
        pytest.param("srun-2-nodes-2-tasks", marks=[pytest.mark.slurm]),
    ],
)
def test_train_model(
    name: str, config: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if name.startswith("srun"):
        request.getfixturevalue("host_slurm_cluster")
    train(*RUNS[name], name, config, tmp_path)


@pytest.mark.torchrun
def test_the_upstream_patch_applies_and_trains_under_torchrun(config: Path, tmp_path: Path) -> None:
    """docs/integrations/neural-lam-0.7.0.diff on a copy of the installed neural-lam."""
    src = tmp_path / "src"
    shutil.copytree(Path(neural_lam.__file__).parent, src / "neural_lam")
    subprocess.run(["patch", "-p1", "-d", str(src), "-i", str(PATCH)], check=True, timeout=60)
    launch = f"PYTHONPATH={src} {TORCHRUN} -m neural_lam.train_model"
    train(launch, 2, "patched-torchrun", config, tmp_path)


def train(launch: str, ranks: int, name: str, config: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    args = f"--config_path {config} {TINY} --logger_run_name {name} --runs_root {runs}"
    result = run(f"WANDB_MODE=disabled {launch} {args}", tmp_path, timeout=600)
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-4000:]
    assert "An error has been caught" not in log, log[-4000:]
    if ranks > 1:
        for member in range(1, ranks + 1):
            assert f"MEMBER: {member}/{ranks}" in log, f"no DDP member {member}/{ranks}"
    else:
        assert "MEMBER:" not in log
    assert (runs / name / "checkpoints" / "last.ckpt").is_file(), log[-4000:]
