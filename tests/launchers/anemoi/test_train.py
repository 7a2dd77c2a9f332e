"""ECMWF's anemoi-training 0.17.1, unmodified, follows the allocation through clusterenv.

Run by `nox -s anemoi` (its own venv: anemoi needs torch<2.11); other sessions do not
collect this directory. anemoi builds its Trainer from its config and scales the learning
rate by the same two numbers (``num_nodes * num_gpus_per_node / num_gpus_per_model``), so
the allocation goes into the config, with ``${clusterenv:...}`` on the Hydra command line
(`clusterenv run` registers the resolver); its own strategy is kept and clusterenv's
cluster environment plugged into it. A run is judged by its log and its checkpoint: DDP with
the allocation's members in every rank, the learning-rate scale anemoi logs, and a written
checkpoint.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.launchers.anemoi import data
from tests.launchers.harness import run

CONFIG = Path(__file__).with_name("config")
TRAIN = "{python} -m clusterenv run -m anemoi.training train"
TORCHRUN = "{python} -m torch.distributed.run --standalone --nproc_per_node=2"
SRUN = "MASTER_ADDR=127.0.0.1 srun -N2"  # the emulated node names do not resolve here
# `{{` survives the harness's str.format as `{`; the single quotes keep bash off `$`.
ALLOCATION = (
    "'system.hardware.num_nodes=${{clusterenv:num_nodes}}' "
    "'system.hardware.num_gpus_per_node=${{clusterenv:devices_per_node}}'"
)
RUNS = {  # launch, ranks
    "one-process": (TRAIN, 1),
    "torchrun-nproc2": (f"{TORCHRUN} -m clusterenv run -m anemoi.training train", 2),
    "srun-2x1": (f"{SRUN} --ntasks-per-node=1 {TRAIN}", 2),
    "srun-2x2": (f"{SRUN} --ntasks-per-node=2 {TRAIN}", 4),
}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Hydra overrides naming the synthetic dataset and graph."""
    dataset, graph = data.make(tmp_path_factory.mktemp("anemoi"))
    return f"system.input.dataset={dataset} system.input.graph={graph}"


def train(launch: str, inputs: str, tmp_path: Path, allocation: str = ALLOCATION) -> str:
    out = tmp_path / "out"
    line = (
        f"{launch} --config-path={CONFIG} --config-name=tiny {inputs} "
        f"system.output.root={out} {allocation}"
    )
    result = run(line, tmp_path, timeout=600)
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-4000:]
    assert list(out.glob("checkpoint/*/last.ckpt")), f"no checkpoint written:\n{log[-4000:]}"
    return log


@pytest.mark.parametrize(
    "name",
    [
        "one-process",
        pytest.param("torchrun-nproc2", marks=[pytest.mark.torchrun]),
        pytest.param("srun-2x1", marks=[pytest.mark.slurm]),
        pytest.param("srun-2x2", marks=[pytest.mark.slurm]),
    ],
)
def test_anemoi_trains_with_the_allocation(
    name: str, inputs: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if name.startswith("srun"):
        request.getfixturevalue("host_slurm_cluster")
    launch, ranks = RUNS[name]
    log = train(launch, inputs, tmp_path)
    for member in range(1, ranks + 1):
        assert f"MEMBER: {member}/{ranks}" in log, f"no DDP member {member}/{ranks}"
    scale = f"Total GPU count / model group size: {ranks} - NB: the learning rate will be scaled"
    assert log.count(scale) == ranks, f"not every rank scaled the learning rate by {ranks}"


@pytest.mark.torchrun
def test_without_the_allocation_the_error_names_the_config_knob(
    inputs: str, tmp_path: Path
) -> None:
    """anemoi's default (1 device per node) under torchrun x2: clusterenv stops it before
    DDP hangs or trains with half the learning rate, saying how to fix the config."""
    launch = RUNS["torchrun-nproc2"][0]
    out = tmp_path / "out"
    line = f"{launch} --config-path={CONFIG} --config-name=tiny {inputs} system.output.root={out}"
    log = run(line, tmp_path, timeout=600)
    text = log.stdout + log.stderr
    assert log.returncode != 0
    assert "devices=1 per node contradicts the torchrun launch" in text, text[-4000:]
    assert "${clusterenv:devices_per_node}" in text
    assert "--devices" not in text  # neural-lam's flag means nothing here
