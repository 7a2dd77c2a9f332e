"""``${clusterenv:...}`` in OmegaConf configs (what Hydra applications such as
anemoi-training compose): integers that agree with the spec on every rank."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from clusterenv import ClusterEnvError, detect_environment
from clusterenv.config import VALUES, register_resolver, value
from clusterenv.testing import slurm_env, torchrun_env
from tests.available import require_modules
from tests.envs import clusterenv_command

require_modules("omegaconf")
from omegaconf import OmegaConf  # noqa: E402 - after the availability check

HARDWARE = {
    "num_nodes": "${clusterenv:num_nodes}",
    "num_gpus_per_node": "${clusterenv:devices_per_node}",
    "workers": "${clusterenv:num_workers}",
}


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (slurm_env(2, 4, 5, gpus_per_node=4, cpus_per_task=8), (2, 4)),
        (torchrun_env(2, 2, 3), (2, 2)),
        ({}, (1, 1)),
    ],
)
def test_every_rank_resolves_the_allocation(
    env: Mapping[str, str],
    expected: tuple[int, int],
    cluster_env: Callable[[Mapping[str, str]], None],
) -> None:
    cluster_env(env)
    register_resolver()
    config = OmegaConf.create({"system": {"hardware": HARDWARE}})
    resolved: dict[str, Any] = OmegaConf.to_container(config, resolve=True)  # type: ignore[assignment]
    hardware = resolved["system"]["hardware"]
    spec = detect_environment()
    assert (hardware["num_nodes"], hardware["num_gpus_per_node"]) == expected
    assert (spec.num_nodes, spec.devices_per_node) == expected
    assert all(isinstance(number, int) for number in hardware.values())


def test_every_documented_value_resolves(cluster_env: Callable[[Mapping[str, str]], None]) -> None:
    cluster_env(slurm_env(2, 2, 1, gpus_per_node=2, gpu_vendor="amd"))
    assert {name: value(name) for name in VALUES}["accelerator"] == "cuda"
    assert value("master_addr") == "cn001"


def test_an_unknown_name_says_which_exist(cluster_env: Callable[[Mapping[str, str]], None]) -> None:
    cluster_env({})
    register_resolver()
    register_resolver()  # idempotent
    with pytest.raises(ClusterEnvError, match="use one of num_nodes, devices_per_node"):
        value("nodes")
    config = OmegaConf.create({"n": "${clusterenv:nodes}"})
    with pytest.raises(Exception, match="not a clusterenv value"):
        OmegaConf.to_container(config, resolve=True)


def test_clusterenv_run_registers_the_resolver(tmp_path: Path) -> None:
    script = tmp_path / "app.py"
    script.write_text(
        "from omegaconf import OmegaConf\n"
        "print(OmegaConf.create({'n': '${clusterenv:world_size}'}).n)\n"
    )
    result = clusterenv_command("run", str(script), env=torchrun_env(1, 3, 2))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "3"
